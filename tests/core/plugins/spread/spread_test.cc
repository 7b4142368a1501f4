// The spread plugin: best fit's walk with the most free units first (least
// allocated first); equal free counts in best fit's order (the model with
// the most free, the least available CPU, the name). Placements on a bare
// index (IndexPlacer), as Allocate runs them.
#include "core/plugins/spread/spread.h"

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
  std::string NodeFor(const MatchSpec& spec) {
    IndexPlacer placer(&index, &nodes, {Packing::kSpread, absl::Minutes(5)});
    auto units = placer.PlaceOne(spec, kNow);
    return units.has_value() ? units->front()->home : "none";
  }
  std::string NodeFor(int count) {
    return NodeFor(MatchSpec::ForPool(kT4, count));
  }
};

TEST(SpreadTest, TheNodeWithTheMostFreeUnitsWins) {
  // (From MatchPackingTest.EachPolicyPicksItsNode: b has the most free.)
  PackedCluster c({{"a", 2}, {"b", 8}, {"c", 3}});
  EXPECT_EQ(c.NodeFor(1), "b");
  const std::vector<std::pair<int, std::string>> cases = {
      {2, "b"}, {3, "b"}, {8, "b"}, {9, "none"}};
  for (const auto& [count, node] : cases) {
    EXPECT_EQ(c.NodeFor(count), node) << count;
  }
  // b refused: the most free of the rest; a fits only what it has.
  c.nodes["b"].schedulable = false;
  EXPECT_EQ(c.NodeFor(1), "c");
  EXPECT_EQ(c.NodeFor(3), "c");
  EXPECT_EQ(c.NodeFor(4), "none");
}

// Equal free counts go in the index's order: the least available CPU, nodes
// not accounted last, then the name.
TEST(SpreadTest, EqualFreeCountsGoToTheLeastCpuThenTheName) {
  PackedCluster c({{"w", 1}, {"x", 4}, {"y", 4}, {"z", 4}});
  EXPECT_EQ(c.NodeFor(1), "x");
  c.index.SetAllocatable("x", NodeResources{8000, 64, 0});
  c.index.SetAllocatable("y", NodeResources{16000, 64, 0});
  EXPECT_EQ(c.NodeFor(1), "x");
  c.index.SetAllocatable("z", NodeResources{2000, 64, 0});
  EXPECT_EQ(c.NodeFor(1), "z");
}

// Across models the free count decides first; for equal counts the model
// with the most free units in the cluster.
TEST(SpreadTest, AcrossModelsTheMostFreeNodeWins) {
  PackedCluster c({{"t1", 3}, {"t2", 3}}, kT4);
  c.Add({{"l1", 5}}, kL4, kNow);
  MatchSpec any;
  EXPECT_EQ(c.NodeFor(any), "l1");
  c.index.SetHolder("l1-0", "x");
  c.index.SetHolder("l1-1", "x");  // l1: 3 free, as t1; T4 has 6 free to 3
  EXPECT_EQ(c.NodeFor(any), "t1");
  EXPECT_EQ(c.NodeFor(MatchSpec::ForPool(kL4, 1)), "l1");
}

TEST(SpreadTest, PlacesOneGroupOfWholeUnitsOnly) {
  ExpectPlacesOneGroupOfWholeUnitsOnly(SpreadPlugin(), kT4);
}

}  // namespace
}  // namespace accelsched
