// The fragmentation plugin: a request of whole units goes where it adds the
// least to the fragmentation the recent mix would see (plus the lease term,
// lease_term_test), weighing a bounded number of nodes; FragmentationRatio.
// Placements on a bare index (IndexPlacer), as Allocate runs them.
#include "core/plugins/fragmentation/fragmentation.h"

#include <map>
#include <string>
#include <tuple>
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
const PoolKey kTpu2x2x2{DeviceClass::kGoogleTpu, "tpu-v5p-slice", "2x2x2"};

Unit T4(const std::string& key, const std::string& node, int order) {
  Unit u;
  u.key = key;
  u.pool = kT4;
  u.home = node;
  u.hosts = {node};
  u.devices = {{node, key, "", ""}};
  u.order = order;
  return u;
}

// Four two-host TPU slices, slice-i on a-i (its home) and b-i; the first
// `cordoned` have their b- host cordoned.
void AddTwoHostSlices(CapacityIndex& index, NodeMap& nodes, int cordoned) {
  for (int i = 0; i < 4; ++i) {
    const std::string home = absl::StrCat("a-", i);
    const std::string other = absl::StrCat("b-", i);
    nodes[home] = HeardFrom(home, kNow);
    nodes[other] = HeardFrom(other, kNow);
    if (i < cordoned) nodes[other].schedulable = false;
    const std::string key = TpuUnitKey(absl::StrCat("slice-", i));
    Unit u;
    u.key = key;
    u.pool = kTpu2x2x2;
    u.home = home;
    u.hosts = {home, other};
    u.devices = {{home, "chip-a", "", ""}, {other, "chip-b", "", ""}};
    index.Put(std::move(u));
  }
}

// The fragmentation policy on `index` at kNow (nodes heard from in the last
// 5 minutes), with `mix` and `leases`.
IndexPlacer Placer(const CapacityIndex& index, const NodeMap& nodes,
                   const RequestMix* mix, const LeaseView* leases = nullptr) {
  return IndexPlacer(&index, &nodes,
                     {Packing::kFragmentation, absl::Minutes(5), mix, leases});
}

// Nodes of 8 T4s named by `free`'s keys, with all but that many held by
// allocation "held-<node>".
struct PackedCluster : PackedNodes {
  explicit PackedCluster(const std::map<std::string, int>& free) {
    Add(free, kT4, kNow);
  }
  std::string NodeFor(int count, const RequestMix* mix,
                      const LeaseView* leases = nullptr,
                      absl::Time ends_at = absl::InfiniteFuture()) {
    IndexPlacer placer = Placer(index, nodes, mix, leases);
    auto units = placer.PlaceOne(MatchSpec::ForPool(kT4, count), kNow, ends_at);
    return units.has_value() ? units->front()->home : "none";
  }
  std::vector<RankedPlacement> Rank(
      const MatchSpec& spec, const RequestMix* mix,
      const LeaseView* leases = nullptr,
      absl::Time ends_at = absl::InfiniteFuture()) {
    IndexPlacer placer = Placer(index, nodes, mix, leases);
    return placer.Rank(spec, kNow, ends_at);
  }
};

class MapLeases : public LeaseView {
 public:
  absl::Time FreeAt(absl::string_view allocation,
                    absl::Time /*now*/) const override {
    auto it = ends.find(std::string(allocation));
    return it == ends.end() ? absl::InfinitePast() : it->second;
  }
  std::map<std::string, absl::Time> ends;
};

// Fragmentation under a mix of 1s and 2s: one GPU taken of a's two strands
// the other for the 2s; one of c's three leaves a pair. (The other policies'
// choices on this cluster are in their tests.)
TEST(FragmentationTest, TheNodeLeftLeastFragmentedWins) {
  PackedCluster c({{"a", 2}, {"b", 8}, {"c", 3}});
  RequestMix mix;
  mix.Add(kNow, kT4, 1, 0, 0);
  mix.Add(kNow, kT4, 2, 0, 0);
  EXPECT_EQ(c.NodeFor(1, &mix), "c");
  // Without a mix it is best fit.
  EXPECT_EQ(c.NodeFor(1, nullptr), "a");
}

// A count whose fragmentation change alone is no better than the best score
// found is not visited: no node of it could win.
TEST(FragmentationTest, RankingStopsWhereNoNodeCouldWin) {
  std::map<std::string, int> free;
  for (int i = 0; i < 20; ++i) free[absl::StrCat("full-", i)] = 8;
  free["pair"] = 2;
  PackedCluster c(free);
  RequestMix mix;
  mix.Add(kNow, kT4, 8, 0, 0);
  std::vector<RankedPlacement> ranked =
      c.Rank(MatchSpec::ForPool(kT4, 1), &mix);
  ASSERT_EQ(ranked.size(), 1u);
  EXPECT_EQ(ranked[0].node, "pair");  // takes a fragment: -1 stranded
  EXPECT_DOUBLE_EQ(ranked[0].score.total, -1);
  // Breaking a whole node strands 7 for the 8s.
  EXPECT_EQ(c.NodeFor(3, &mix), "full-0");
  ranked = c.Rank(MatchSpec::ForPool(kT4, 3), &mix);
  // The next full node scores no better (no lease term): it is not kept.
  ASSERT_EQ(ranked.size(), 1u);
  EXPECT_EQ(ranked[0].node, "full-0");
  EXPECT_DOUBLE_EQ(ranked[0].score.total, 5 * 1.0);
}

// With leases every count may hold the best node: the walk stops at
// kMaxScored.
TEST(FragmentationTest, RankingIsBoundedInAll) {
  std::map<std::string, int> free;
  for (int f = 1; f <= 8; ++f) {
    for (int i = 0; i < 3; ++i) free[absl::StrCat("f", f, "-", i)] = f;
  }
  PackedCluster c(free);
  MapLeases leases;
  for (const auto& [name, f] : free) {
    leases.ends["held-" + name] = kNow + absl::Hours(1 + f);
  }
  std::vector<RankedPlacement> ranked = c.Rank(
      MatchSpec::ForPool(kT4, 1), nullptr, &leases, kNow + absl::Hours(100));
  EXPECT_EQ(ranked.size(), FragmentationPlugin::kMaxScored);
  for (size_t i = 1; i < ranked.size(); ++i) {
    EXPECT_LE(ranked[i - 1].score.total, ranked[i].score.total);
  }
}

TEST(FragmentationTest, FragmentationRatioIsTheShareOfFreeUnitsStranded) {
  PackedCluster c({{"a", 2}, {"b", 8}});
  RequestMix mix;
  mix.Add(kNow, kT4, 4, 0, 0);
  const CapacityIndex::Pool* pool = c.index.FindPool(kT4);
  ASSERT_NE(pool, nullptr);
  // a's two cannot take a request of 4; b's eight can.
  EXPECT_DOUBLE_EQ(FragmentationRatio(*pool, mix.ShapesFor(kT4, kNow)),
                   2.0 / 10);
  EXPECT_DOUBLE_EQ(FragmentationRatio(*pool, {}), 0);
}

// The ratio over shapes of each kind of node: units alone, CPU the node
// lacks, nothing free.
TEST(FragmentationTest, FragmentationRatioWeighsEachShapeByItsShare) {
  struct Case {
    std::string name;
    std::vector<RequestShape> shapes;
    double ratio;
  };
  // a: 2 free, b: 8 free, b with 4000 cpu_milli available.
  PackedCluster c({{"a", 2}, {"b", 8}});
  c.index.SetAllocatable("b", NodeResources{4000, int64_t{1} << 40, 0});
  const CapacityIndex::Pool* pool = c.index.FindPool(kT4);
  ASSERT_NE(pool, nullptr);
  for (const Case& k : std::vector<Case>{
           {"ones fit everywhere", {{1, 0, 0, 1}}, 0},
           {"nines fit nowhere, eights on b",
            {{8, 0, 0, 0.5}, {9, 0, 0, 0.5}},
            (1.0 * 2 + 0.5 * 8) / 10},
           {"a pod b lacks the CPU for", {{1, 8000, 0, 1}}, 8.0 / 10},
           {"half of a mix of pairs and fours",
            {{2, 0, 0, 0.5}, {4, 0, 0, 0.5}},
            0.5 * 2 / 10},
       }) {
    EXPECT_DOUBLE_EQ(FragmentationRatio(*pool, k.shapes), k.ratio) << k.name;
  }
  // Nothing free: nothing stranded.
  for (int g = 0; g < 2; ++g) c.index.SetHolder(absl::StrCat("a-", g), "x");
  for (int g = 0; g < 8; ++g) c.index.SetHolder(absl::StrCat("b-", g), "x");
  EXPECT_DOUBLE_EQ(FragmentationRatio(*pool, {{8, 0, 0, 1}}), 0);
}

// With CPU accounted, a node whose CPU the mix's shapes already lack has
// its GPUs stranded: taking one of them lowers fragmentation. The count of
// such a node is not pruned by the units-only change.
TEST(FragmentationTest, ANodeShortOfCpuForTheMixIsWeighed) {
  CapacityIndex index;
  NodeMap nodes;
  for (const auto& [name, size, free] :
       {std::tuple<const char*, int, int>{"a", 8, 2}, {"b", 10, 8}}) {
    nodes[name] = HeardFrom(name, kNow);
    for (int g = 0; g < size; ++g) {
      const std::string key = absl::StrCat(name, "-", g);
      index.Put(T4(key, name, g));
      if (g >= free) index.SetHolder(key, "held");
    }
  }
  index.SetAllocatable("b", NodeResources{1000, int64_t{1} << 40, 0});
  RequestMix mix;
  for (int i = 0; i < 10; ++i) mix.Add(kNow, kT4, 1, 2000, 0);
  mix.Add(kNow, kT4, 1, 1000, 0);
  MatchSpec spec = MatchSpec::ForPool(kT4, 1);
  spec.pod_resources = NodeResources{1000, 0, 1};
  IndexPlacer placer = Placer(index, nodes, &mix);
  std::vector<RankedPlacement> ranked = placer.Rank(spec, kNow);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].node, "b");
  EXPECT_LT(ranked[0].score.total, 0);
  std::optional<UnitGroup> units = placer.PlaceOne(spec, kNow);
  ASSERT_TRUE(units.has_value());
  EXPECT_EQ(units->front()->home, "b");
}

// Scoring looks at a slice's home only: when every slice it weighed has
// another host cordoned, the placement still finds the one that fits.
TEST(FragmentationTest, ASliceWhoseOtherHostIsCordonedIsPassedOver) {
  const PoolKey tpu = kTpu2x2x2;
  CapacityIndex index;
  NodeMap nodes;
  AddTwoHostSlices(index, nodes, 3);
  RequestMix mix;
  mix.Add(kNow, tpu, 1, 0, 0);
  IndexPlacer placer = Placer(index, nodes, &mix);
  std::optional<UnitGroup> units =
      placer.PlaceOne(MatchSpec::ForPool(tpu, 1), kNow);
  ASSERT_TRUE(units.has_value());
  EXPECT_EQ(units->front()->home, "a-3");
}

// Nothing weighed (no node with the free units): no candidate, no
// placement.
TEST(FragmentationTest, NoNodeWithTheFreeUnitsIsNoPlacement) {
  PackedCluster c({{"a", 2}, {"b", 3}});
  RequestMix mix;
  mix.Add(kNow, kT4, 1, 0, 0);
  EXPECT_TRUE(c.Rank(MatchSpec::ForPool(kT4, 4), &mix).empty());
  EXPECT_EQ(c.NodeFor(4, &mix), "none");
  // Taking 2 strands nothing for the 1s anywhere: the fewest free, a, is
  // weighed, and b's count, which could do no better, is not.
  std::vector<RankedPlacement> ranked =
      c.Rank(MatchSpec::ForPool(kT4, 2), &mix);
  ASSERT_EQ(ranked.size(), 1u);
  EXPECT_EQ(ranked[0].node, "a");
  // A node the filters refuse is not weighed: b is.
  c.nodes["a"].schedulable = false;
  ranked = c.Rank(MatchSpec::ForPool(kT4, 2), &mix);
  ASSERT_EQ(ranked.size(), 1u);
  EXPECT_EQ(ranked[0].node, "b");
}

TEST(FragmentationTest, PlacesOneGroupOfWholeUnitsOnly) {
  ExpectPlacesOneGroupOfWholeUnitsOnly(FragmentationPlugin(), kT4);
}

}  // namespace
}  // namespace accelsched
