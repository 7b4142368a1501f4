// The schedulable plugin: a node takes new work only while it is not
// cordoned and heard from within --heartbeat_timeout; a host that has not
// registered is stale.
#include "core/plugins/schedulable/schedulable.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/catalog/capacity_index.h"
#include "core/framework/cycle_state.h"
#include "core/framework/snapshot.h"
#include "core/matching/match_spec.h"
#include "core/plugins/index_placer.h"
#include "gtest/gtest.h"

namespace accelsched {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1000);
const PoolKey kT4{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", ""};

// What Filter says of a node (`node`: nullopt for a host not registered) at
// kNow with `timeout`; "" for none.
std::string FilterOf(const std::optional<Node>& node, absl::Duration timeout) {
  CapacityIndex index;
  NodeMap nodes;
  Snapshot snapshot;
  snapshot.index = &index;
  snapshot.nodes = &nodes;
  snapshot.now = kNow;
  snapshot.heartbeat_timeout = timeout;
  const MatchSpec spec = MatchSpec::ForPool(kT4, 1);
  Allocation request;
  CycleState cycle(CycleMode::kAllocate, snapshot, spec, request, nullptr);
  SchedulablePlugin plugin;
  EXPECT_EQ(plugin.kind(), FilterPlugin::Kind::kGate);
  EXPECT_TRUE(plugin.Prepare(cycle));  // every request
  const char* why = plugin.Filter(
      cycle, NodeView{"n1", node.has_value() ? &*node : nullptr, nullptr, {}});
  return why == nullptr ? "" : why;
}

Node HeardAgo(absl::Duration ago, bool schedulable = true) {
  Node n;
  n.name = "n1";
  n.last_heartbeat = kNow - ago;
  n.schedulable = schedulable;
  return n;
}

TEST(SchedulableTest, RefusesCordonedStaleAndUnregisteredNodes) {
  struct Case {
    std::string name;
    std::optional<Node> node;
    absl::Duration timeout;
    std::string why;
  };
  const absl::Duration five = absl::Minutes(5);
  for (const Case& c : std::vector<Case>{
           {"heard from now", HeardAgo(absl::ZeroDuration()), five, ""},
           {"heard from at the timeout", HeardAgo(five), five, ""},
           {"silent past the timeout", HeardAgo(five + absl::Seconds(1)), five,
            "stale heartbeat"},
           {"no timeout: never stale", HeardAgo(absl::Hours(100)),
            absl::ZeroDuration(), ""},
           {"cordoned", HeardAgo(absl::ZeroDuration(), false), five,
            "cordoned"},
           {"cordoned and stale: cordoned", HeardAgo(absl::Hours(1), false),
            five, "cordoned"},
           {"not registered", std::nullopt, five, "stale heartbeat"},
           {"not registered, no timeout", std::nullopt, absl::ZeroDuration(),
            "stale heartbeat"},
       }) {
    EXPECT_EQ(FilterOf(c.node, c.timeout), c.why) << c.name;
  }
}

// Through a placement: refused nodes are passed over for the one that
// passes.
TEST(SchedulableTest, APlacementPassesOverRefusedNodes) {
  CapacityIndex index;
  NodeMap nodes;
  for (const char* name : {"a", "b", "c"}) {
    const std::string key = std::string(name) + "-gpu0";
    Unit u;
    u.key = key;
    u.pool = kT4;
    u.home = name;
    u.hosts = {name};
    u.devices = {{name, key, "", ""}};
    index.Put(std::move(u));
    Node n;
    n.name = name;
    n.last_heartbeat = kNow;
    nodes[name] = n;
  }
  nodes["a"].schedulable = false;
  nodes["b"].last_heartbeat = kNow - absl::Minutes(10);
  IndexPlacer placer(&index, &nodes, {Packing::kBestFit, absl::Minutes(5)});
  auto units = placer.PlaceOne(MatchSpec::ForPool(kT4, 1), kNow);
  ASSERT_TRUE(units.has_value());
  EXPECT_EQ(units->front()->home, "c");
  nodes["c"].schedulable = false;
  EXPECT_FALSE(placer.PlaceOne(MatchSpec::ForPool(kT4, 1), kNow).has_value());
  // Without a heartbeat timeout b is not stale.
  IndexPlacer no_timeout(&index, &nodes, {Packing::kBestFit});
  units = no_timeout.PlaceOne(MatchSpec::ForPool(kT4, 1), kNow);
  ASSERT_TRUE(units.has_value());
  EXPECT_EQ(units->front()->home, "b");
}

}  // namespace
}  // namespace accelsched
