// The accelerator_fit plugin: a new request no node could ever hold is
// refused for good (FAILED_PRECONDITION), whatever is released: no unit of
// its pools anywhere, no node with `count` of them, or for a gang fewer than
// `replicas` nodes of one pool that could hold a group. Whether units are
// free now is the placement's.
#include "core/plugins/accelerator_fit/accelerator_fit.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/catalog/capacity_index.h"
#include "core/framework/cycle_state.h"
#include "core/framework/framework.h"
#include "core/framework/holds.h"
#include "core/framework/session.h"
#include "core/framework/snapshot.h"
#include "core/framework/statement.h"
#include "core/matching/match_spec.h"
#include "core/plugins/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accelsched {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1000);
const PoolKey kT4{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", ""};
const PoolKey kL4{DeviceClass::kNvidiaGpu, "nvidia-l4", ""};

Unit Whole(const PoolKey& pool, const std::string& key, const std::string& node,
           int order) {
  Unit u;
  u.key = key;
  u.pool = pool;
  u.home = node;
  u.hosts = {node};
  u.devices = {{node, key, "", ""}};
  u.order = order;
  return u;
}
Unit T4(const std::string& key, const std::string& node, int order) {
  return Whole(kT4, key, node, order);
}

// `n` units of `pool` on `node`, keys "<node>-<i>".
void AddUnits(CapacityIndex& index, const PoolKey& pool,
              const std::string& node, int n) {
  for (int i = 0; i < n; ++i) {
    index.Put(Whole(pool, absl::StrCat(node, "-", i), node, i));
  }
}

// The plugin's PreFilter of a new request for `spec` over `index`.
Verdict PreFilterOf(const CapacityIndex& index, const MatchSpec& spec) {
  NodeMap nodes;
  absl::StatusOr<std::unique_ptr<Framework>> fw = Framework::Create(
      PluginRegistry(), DefaultProfile(ProfileOptions{}));
  EXPECT_TRUE(fw.ok()) << fw.status();
  Snapshot snapshot;
  snapshot.index = &index;
  snapshot.nodes = &nodes;
  snapshot.now = kNow;
  Holds holds(nullptr, nullptr, Holds::Standing::kReadOnly);
  DryStatement statement;
  Session session(**fw, snapshot, holds, statement);
  Allocation request;
  CycleState cycle(CycleMode::kAllocate, snapshot, spec, request, nullptr);
  return AcceleratorFitPlugin().PreFilter(session, cycle);
}

MATCHER(IsSuccess, "") {
  *result_listener << "reason \"" << arg.reason << "\"";
  return arg.code == Verdict::Code::kSuccess;
}
// Refused for good (Allocate's FAILED_PRECONDITION) with exactly `reason`.
MATCHER_P(IsUnresolvable, reason, "") {
  *result_listener << "code " << static_cast<int>(arg.code) << ", reason \""
                   << arg.reason << "\"";
  return arg.code == Verdict::Code::kUnresolvable && arg.reason == reason;
}

// (From MatcherTest.MatchCostDoesNotDependOnNodesThatCannotFit: best fit's
// part is in best_fit_test.)
TEST(AcceleratorFitTest, ACountNoNodeHoldsIsRefused) {
  CapacityIndex index;
  for (int i = 0; i < 100; ++i) {
    const std::string name = "small-" + std::to_string(i);
    index.Put(T4(name + "-g", name, 0));
  }
  for (int g = 0; g < 4; ++g)
    index.Put(T4("big-g" + std::to_string(g), "big", g));
  MatchSpec spec = MatchSpec::ForPool(kT4, 4);
  EXPECT_THAT(PreFilterOf(index, spec), IsSuccess());
  spec.count = 5;
  EXPECT_THAT(PreFilterOf(index, spec),
              IsUnresolvable("count 5 is more than any node holds: at most 4 "
                             "nvidia-tesla-t4 devices on one node"));
}

// (From MatcherTest.AcrossModelsTheBestEligiblePairWins, whose cluster it
// is: best fit's part is in best_fit_test.) Held, a node's units count: they
// may be free some day.
TEST(AcceleratorFitTest, AcrossModelsTheLargestNodeOfAnyPoolCounts) {
  CapacityIndex index;
  index.Put(T4("t0", "t", 0));
  index.Put(Whole(kL4, "l0", "l", 0));
  index.Put(Whole(kL4, "l1", "l", 1));
  index.Put(T4("u0", "u", 0));
  index.Put(T4("u1", "u", 1));
  index.SetHolder("u0", "x");
  index.SetHolder("l0", "x");
  MatchSpec any;  // any NVIDIA GPU
  any.count = 2;
  EXPECT_THAT(PreFilterOf(index, any), IsSuccess());
  any.count = 3;
  EXPECT_THAT(PreFilterOf(index, any),
              IsUnresolvable("count 3 is more than any node holds: at most 2 "
                             "whole NVIDIA_GPU devices on one node"));
}

TEST(AcceleratorFitTest, RefusesWhatNoNodeCouldEverHold) {
  // a: 4 T4s, b: 2 T4s, c: 1 T4, d: 2 L4s; every unit of a held.
  CapacityIndex index;
  AddUnits(index, kT4, "a", 4);
  AddUnits(index, kT4, "b", 2);
  AddUnits(index, kT4, "c", 1);
  AddUnits(index, kL4, "d", 2);
  for (int i = 0; i < 4; ++i) index.SetHolder(absl::StrCat("a-", i), "x");
  auto spec = [](std::vector<std::string> models, int count, int replicas,
                 std::string partition = "") {
    MatchSpec s;
    s.requested_models = std::move(models);
    s.count = count;
    s.replicas = replicas;
    s.partition = std::move(partition);
    return s;
  };
  const std::string t4 = kT4.model;
  const std::string l4 = kL4.model;
  struct Case {
    std::string name;
    MatchSpec spec;
    std::string reason;  // "" for success
  };
  for (const Case& c : std::vector<Case>{
           {"the largest node, held", spec({t4}, 4, 1), ""},
           {"no unit of the model", spec({"nvidia-h100"}, 1, 1),
            "no node has any nvidia-h100 device"},
           {"none of several models",
            spec({"nvidia-h100", "nvidia-h200"}, 1, 1),
            "no node has any nvidia-h100 or nvidia-h200 device"},
           {"no unit of the partition", spec({"nvidia-tesla-a100"}, 1, 1,
                                             "1g.5gb"),
            "no node has any 1g.5gb slice"},
           {"more than the largest node", spec({l4}, 3, 1),
            "count 3 is more than any node holds: at most 2 nvidia-l4 devices "
            "on one node"},
           {"the largest of several pools", spec({t4, l4}, 4, 1), ""},
           {"a gang that fits some day", spec({t4}, 2, 2), ""},
           {"a gang of ones on every node", spec({t4}, 1, 3), ""},
           {"a gang of more nodes than could hold a group", spec({t4}, 2, 3),
            "replicas 3 is more than the cluster holds: 2 nodes could ever "
            "hold 2 nvidia-tesla-t4 devices"},
           {"one node could", spec({t4}, 4, 2),
            "replicas 2 is more than the cluster holds: 1 node could ever hold "
            "4 nvidia-tesla-t4 devices"},
           // One pool holds a gang, the pools' nodes are not summed.
           {"the pool with the most nodes", spec({t4, l4}, 2, 3),
            "replicas 3 is more than the cluster holds: 2 nodes could ever "
            "hold 2 nvidia-tesla-t4 or nvidia-l4 devices"},
       }) {
    if (c.reason.empty()) {
      EXPECT_THAT(PreFilterOf(index, c.spec), IsSuccess()) << c.name;
    } else {
      EXPECT_THAT(PreFilterOf(index, c.spec), IsUnresolvable(c.reason))
          << c.name;
    }
  }
}

TEST(AcceleratorFitTest, OneUnitPerNodeIsSaidInTheSingular) {
  CapacityIndex index;
  AddUnits(index, kT4, "a", 1);
  EXPECT_THAT(PreFilterOf(index, MatchSpec::ForPool(kT4, 2)),
              IsUnresolvable("count 2 is more than any node holds: at most 1 "
                             "nvidia-tesla-t4 device on one node"));
  MatchSpec gang = MatchSpec::ForPool(kT4, 1);
  gang.replicas = 2;
  EXPECT_THAT(PreFilterOf(index, gang),
              IsUnresolvable("replicas 2 is more than the cluster holds: 1 "
                             "node could ever hold 1 nvidia-tesla-t4 device"));
}

TEST(AcceleratorFitTest, IsAskedOfNewRequestsOnly) {
  EXPECT_TRUE(AcceleratorFitPlugin().ForNewRequests());
}

}  // namespace
}  // namespace accelsched
