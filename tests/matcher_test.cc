#include "core/matcher.h"

#include "core/capacity_index.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const PoolKey kT4{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", ""};

Unit T4(const std::string& key, const std::string& node, int order) {
  return Unit{key, kT4,   node, {node}, {{node, key, "", ""}},
              "",  order, true, ""};
}

Node Healthy(const std::string& name) {
  Node n;
  n.name = name;
  n.last_heartbeat = absl::FromUnixSeconds(1000);
  return n;
}

TEST(CapacityIndexTest, CountsFollowHealthAndAllocation) {
  CapacityIndex index;
  index.Put(T4("a", "n1", 0));
  index.Put(T4("b", "n1", 1));
  Unit sick = T4("c", "n2", 0);
  sick.healthy = false;
  index.Put(sick);
  index.SetAllocation("a", "alloc-1");
  EXPECT_THAT(index.Capacity(),
              ElementsAre(CapacityEntry{DeviceClass::kNvidiaGpu,
                                        "nvidia-tesla-t4", "", 3, 1, 1, 1}));
  const CapacityIndex::Pool* pool = index.FindPool(kT4);
  ASSERT_NE(pool, nullptr);
  EXPECT_THAT(pool->by_free, ElementsAre(std::make_pair(1, std::string("n1"))));
  EXPECT_EQ(*pool->home_sizes.rbegin(), 2);
  index.SetAllocation("a", "");
  EXPECT_THAT(pool->by_free, ElementsAre(std::make_pair(2, std::string("n1"))));
  index.Remove("a");
  index.Remove("b");
  index.Remove("c");
  EXPECT_TRUE(index.Capacity().empty());
  EXPECT_EQ(index.FindPool(kT4), nullptr);
  EXPECT_TRUE(index.UnitsOnNode("n1").empty());
}

TEST(MatcherTest, MatchCostDoesNotDependOnNodesThatCannotFit) {
  // by_free is ordered by free count: a request for 4 never visits the 1-free
  // nodes.
  CapacityIndex index;
  NodeMap nodes;
  for (int i = 0; i < 100; ++i) {
    const std::string name = "small-" + std::to_string(i);
    index.Put(T4(name + "-g", name, 0));
    nodes[name] = Healthy(name);
  }
  for (int g = 0; g < 4; ++g)
    index.Put(T4("big-g" + std::to_string(g), "big", g));
  nodes["big"] = Healthy("big");
  MatchSpec spec{kT4, 4, LabelSelector()};
  const EligibilityRules rules{absl::FromUnixSeconds(1000), absl::Minutes(5)};
  auto chosen = Match(index, nodes, spec, rules);
  ASSERT_TRUE(chosen.has_value());
  ASSERT_EQ(chosen->size(), 4u);
  EXPECT_EQ((*chosen)[0]->home, "big");
  EXPECT_OK(CheckSatisfiable(index, spec));
  spec.count = 5;
  EXPECT_THAT(
      CheckSatisfiable(index, spec),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr("at most 4 nvidia-tesla-t4 devices on one node")));
}

TEST(MatcherTest, UnitNames) {
  EXPECT_EQ(UnitName(kT4), "nvidia-tesla-t4 device");
  EXPECT_EQ(UnitName({DeviceClass::kNvidiaGpu, "nvidia-h100", "1g.10gb"}),
            "1g.10gb slice");
  EXPECT_EQ(UnitName({DeviceClass::kGoogleTpu, "tpu-v6e-slice", "2x4"}),
            "tpu-v6e-slice 2x4 slice");
}

}  // namespace
}  // namespace accelsched
