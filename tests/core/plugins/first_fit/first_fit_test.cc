// The first_fit plugin: the first node in name order with room, the pools in
// best fit's model order (most free units first). Placements on a bare index
// (IndexPlacer), as Allocate runs them.
#include "core/plugins/first_fit/first_fit.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/catalog/capacity_index.h"
#include "core/framework/cycle_state.h"
#include "core/framework/snapshot.h"
#include "core/matching/match_spec.h"
#include "core/plugins/index_placer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/packed_nodes.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;

const absl::Time kNow = absl::FromUnixSeconds(1000);
const PoolKey kT4{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", ""};
const PoolKey kL4{DeviceClass::kNvidiaGpu, "nvidia-l4", ""};

// Nodes of 8 units of `pool` named by `free`'s keys, with all but that many
// held by allocation "held-<node>".
struct PackedCluster : PackedNodes {
  explicit PackedCluster(const std::map<std::string, int>& free,
                         const PoolKey& pool = kT4) {
    Add(free, pool, kNow);
  }
  std::optional<UnitGroup> Place(const MatchSpec& spec) {
    IndexPlacer placer(&index, &nodes, {Packing::kFirstFit, absl::Minutes(5)});
    return placer.PlaceOne(spec, kNow);
  }
  std::string NodeFor(int count) {
    auto units = Place(MatchSpec::ForPool(kT4, count));
    return units.has_value() ? units->front()->home : "none";
  }
};

TEST(FirstFitTest, TheFirstNodeWithRoomInNameOrder) {
  // (From MatchPackingTest.EachPolicyPicksItsNode: a is too small for 3;
  // b comes before c.)
  PackedCluster c({{"a", 2}, {"b", 8}, {"c", 3}});
  EXPECT_EQ(c.NodeFor(3), "b");
  // Where best fit would take c (3 free) or spread b, first fit takes the
  // first in name order that has room.
  const std::vector<std::pair<int, std::string>> cases = {
      {1, "a"}, {2, "a"}, {3, "b"}, {8, "b"}, {9, "none"}};
  for (const auto& [count, node] : cases) {
    EXPECT_EQ(c.NodeFor(count), node) << count;
  }
}

// A node the filters refuse is passed over for the next in name order.
TEST(FirstFitTest, ANodeTheFiltersRefuseIsPassedOver) {
  PackedCluster c({{"a", 8}, {"b", 1}, {"c", 3}});
  EXPECT_EQ(c.NodeFor(1), "a");
  c.nodes["a"].schedulable = false;
  EXPECT_EQ(c.NodeFor(1), "b");
  EXPECT_EQ(c.NodeFor(2), "c");
  c.nodes["c"].last_heartbeat = kNow - absl::Minutes(6);  // stale
  EXPECT_EQ(c.NodeFor(2), "none");
}

// The pools go in best fit's model order, most free units first: every node
// of that model before any of the next, whatever the names.
TEST(FirstFitTest, ThePoolWithTheMostFreeUnitsIsWalkedFirst) {
  PackedCluster c({{"b", 5}}, kT4);
  c.Add({{"a", 2}}, kL4, kNow);
  MatchSpec any;
  auto units = c.Place(any);
  ASSERT_TRUE(units.has_value());
  EXPECT_EQ(units->front()->home, "b");
  // Only the named model's nodes.
  MatchSpec l4 = MatchSpec::ForPool(kL4, 1);
  units = c.Place(l4);
  ASSERT_TRUE(units.has_value());
  EXPECT_EQ(units->front()->home, "a");
  // With more L4s free than T4s, a comes first.
  c.Add({{"c", 8}}, kL4, kNow);
  units = c.Place(any);
  ASSERT_TRUE(units.has_value());
  EXPECT_EQ(units->front()->home, "a");
}

// Within the node, the units in best-fit order: the lowest order first.
TEST(FirstFitTest, WithinTheNodeUnitsGoInOrder) {
  PackedCluster c({{"a", 8}});
  c.index.SetHolder("a-0", "x");
  auto units = c.Place(MatchSpec::ForPool(kT4, 2));
  ASSERT_TRUE(units.has_value());
  std::vector<std::string> keys;
  for (const Unit* u : *units) keys.push_back(u->key);
  EXPECT_THAT(keys, ElementsAre("a-1", "a-2"));
}

TEST(FirstFitTest, PlacesOneGroupOfWholeUnitsOnly) {
  ExpectPlacesOneGroupOfWholeUnitsOnly(FirstFitPlugin(), kT4);
}

}  // namespace
}  // namespace accelsched
