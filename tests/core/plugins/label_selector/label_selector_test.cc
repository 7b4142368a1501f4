// The label_selector plugin: with a node_selector, only nodes whose labels
// hold every key=value of it take part; a host not registered has no
// labels.
#include "core/plugins/label_selector/label_selector.h"

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

struct Filtered {
  bool prepared;
  std::string why;  // "" for none
};

// Prepare and Filter for a request with `selector` of a node labelled
// `labels` (nullopt: a host not registered).
Filtered FilterOf(const Labels& selector,
                  const std::optional<Labels>& labels) {
  CapacityIndex index;
  NodeMap nodes;
  Snapshot snapshot;
  snapshot.index = &index;
  snapshot.nodes = &nodes;
  snapshot.now = kNow;
  const MatchSpec spec = MatchSpec::ForPool(kT4, 1, selector);
  Allocation request;
  CycleState cycle(CycleMode::kAllocate, snapshot, spec, request, nullptr);
  LabelSelectorPlugin plugin;
  EXPECT_EQ(plugin.kind(), FilterPlugin::Kind::kGate);
  Node node;
  node.name = "n1";
  if (labels.has_value()) node.labels = *labels;
  const char* why = plugin.Filter(
      cycle,
      NodeView{"n1", labels.has_value() ? &node : nullptr, nullptr, {}});
  return Filtered{plugin.Prepare(cycle), why == nullptr ? "" : why};
}

TEST(LabelSelectorTest, ANodeMustHoldEveryKeyValueOfTheSelector) {
  struct Case {
    std::string name;
    Labels selector;
    std::optional<Labels> labels;
    std::string why;
  };
  const Labels zone_a = {{"zone", "a"}};
  for (const Case& c : std::vector<Case>{
           {"equal", zone_a, zone_a, ""},
           {"more labels than asked", zone_a,
            Labels{{"zone", "a"}, {"rack", "r1"}}, ""},
           {"another value", zone_a, Labels{{"zone", "b"}},
            "node_selector mismatch"},
           {"no such key", zone_a, Labels{{"rack", "r1"}},
            "node_selector mismatch"},
           {"one of two keys", Labels{{"zone", "a"}, {"rack", "r1"}}, zone_a,
            "node_selector mismatch"},
           {"both of two keys", Labels{{"zone", "a"}, {"rack", "r1"}},
            Labels{{"zone", "a"}, {"rack", "r1"}}, ""},
           {"not registered", zone_a, std::nullopt, "node_selector mismatch"},
       }) {
    const Filtered f = FilterOf(c.selector, c.labels);
    EXPECT_TRUE(f.prepared) << c.name;
    EXPECT_EQ(f.why, c.why) << c.name;
  }
}

// A request without a node_selector has nothing to ask of any node: the
// plugin is not prepared (and so never asked).
TEST(LabelSelectorTest, IsNotPreparedWithoutASelector) {
  EXPECT_FALSE(FilterOf({}, Labels{{"zone", "a"}}).prepared);
}

// Through a placement: the best fit that does not match is passed over.
TEST(LabelSelectorTest, APlacementTakesOnlyMatchingNodes) {
  CapacityIndex index;
  NodeMap nodes;
  const std::vector<std::pair<std::string, std::string>> zones = {
      {"a", "z1"}, {"b", "z2"}};
  for (const auto& [name, zone] : zones) {
    for (int g = 0; g < (name == "a" ? 1 : 2); ++g) {
      const std::string key = name + "-gpu" + std::to_string(g);
      Unit u;
      u.key = key;
      u.pool = kT4;
      u.home = name;
      u.hosts = {name};
      u.devices = {{name, key, "", ""}};
      u.order = g;
      index.Put(std::move(u));
    }
    Node n;
    n.name = name;
    n.last_heartbeat = kNow;
    n.labels = {{"zone", zone}};
    nodes[name] = n;
  }
  IndexPlacer placer(&index, &nodes, {Packing::kBestFit});
  auto units = placer.PlaceOne(MatchSpec::ForPool(kT4, 1), kNow);
  ASSERT_TRUE(units.has_value());
  EXPECT_EQ(units->front()->home, "a");  // the best fit
  units = placer.PlaceOne(MatchSpec::ForPool(kT4, 1, {{"zone", "z2"}}), kNow);
  ASSERT_TRUE(units.has_value());
  EXPECT_EQ(units->front()->home, "b");
  EXPECT_FALSE(placer.PlaceOne(MatchSpec::ForPool(kT4, 1, {{"zone", "z3"}}),
                               kNow)
                   .has_value());
}

}  // namespace
}  // namespace accelsched
