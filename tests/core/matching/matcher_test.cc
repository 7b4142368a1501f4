#include "core/matching/matcher.h"

#include <map>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "core/catalog/capacity_index.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace accelsched {
namespace {

// At t=1000 s, nodes heard from in the last 5 minutes.
EligibilityRules Rules() {
  EligibilityRules rules;
  rules.now = absl::FromUnixSeconds(1000);
  rules.heartbeat_timeout = absl::Minutes(5);
  return rules;
}

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const PoolKey kT4{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", ""};

Unit T4(const std::string& key, const std::string& node, int order) {
  return Unit{key, kT4,   node, {node}, {{node, key, "", ""}},
              "",  order, true, ""};
}

std::vector<HomeTree::Entry> Entries(const HomeTree& homes) {
  std::vector<HomeTree::Entry> out;
  homes.ForEach([&](const HomeTree::Entry& e) {
    out.push_back(e);
    return true;
  });
  return out;
}

Node Healthy(const std::string& name) {
  Node n;
  n.name = name;
  n.last_heartbeat = absl::FromUnixSeconds(1000);
  return n;
}

const PoolKey kTpu2x2x2{DeviceClass::kGoogleTpu, "tpu-v5p-slice", "2x2x2"};

// Four two-host TPU slices, slice-i on a-i (its home) and b-i; the first
// `cordoned` have their b- host cordoned.
void AddTwoHostSlices(CapacityIndex& index, NodeMap& nodes, int cordoned) {
  for (int i = 0; i < 4; ++i) {
    const std::string home = absl::StrCat("a-", i);
    const std::string other = absl::StrCat("b-", i);
    nodes[home] = Healthy(home);
    nodes[other] = Healthy(other);
    if (i < cordoned) nodes[other].schedulable = false;
    const std::string key = TpuUnitKey(absl::StrCat("slice-", i));
    index.Put(Unit{key,
                   kTpu2x2x2,
                   home,
                   {home, other},
                   {{home, "chip-a", "", ""}, {other, "chip-b", "", ""}},
                   "",
                   0,
                   true,
                   ""});
  }
}

TEST(CapacityIndexTest, CountsFollowHealthAndAllocation) {
  CapacityIndex index;
  index.Put(T4("a", "n1", 0));
  index.Put(T4("b", "n1", 1));
  Unit sick = T4("c", "n2", 0);
  sick.healthy = false;
  index.Put(sick);
  index.SetHolder("a", "alloc-1");
  EXPECT_THAT(index.Capacity(),
              ElementsAre(CapacityEntry{DeviceClass::kNvidiaGpu,
                                        "nvidia-tesla-t4", "", 3, 1, 1, 1}));
  const CapacityIndex::Pool* pool = index.FindPool(kT4);
  ASSERT_NE(pool, nullptr);
  EXPECT_THAT(Entries(pool->by_free),
              ElementsAre(CapacityIndex::FreeEntry{1, kUnaccountedCpu, "n1"}));
  EXPECT_EQ(*pool->home_sizes.rbegin(), 2);
  index.SetHolder("a", "");
  EXPECT_THAT(Entries(pool->by_free),
              ElementsAre(CapacityIndex::FreeEntry{2, kUnaccountedCpu, "n1"}));
  index.Remove("a");
  index.Remove("b");
  index.Remove("c");
  EXPECT_TRUE(index.Capacity().empty());
  EXPECT_EQ(index.FindPool(kT4), nullptr);
  EXPECT_TRUE(index.UnitsOnNode("n1").empty());
}

// A GPU that takes shares is filed with the GPUs nobody shares while it has
// no share, under its shares' group while it has some and compute left, and
// in no tree when it is full, held whole or unhealthy; no empty group's tree
// is kept.
TEST(CapacityIndexTest, SharingGpusAreFiledByTheirSharesGroup) {
  CapacityIndex index;
  Unit gpu = T4("g", "n1", 0);
  gpu.sharing = GpuSharing::kMps;
  gpu.memory_bytes = 1000;
  index.Put(gpu);
  // Looked up each time: a unit put again is removed first, and its pool
  // with it when it was the pool's last.
  auto pool = [&] { return index.FindPool(kT4); };
  ASSERT_NE(pool(), nullptr);
  // (free milli, unit key) of each tree.
  using Filed = std::vector<std::pair<int, std::string>>;
  auto filed = [](const HomeTree& tree) {
    Filed out;
    for (const HomeTree::Entry& e : Entries(tree)) {
      out.emplace_back(e.free, e.home);
    }
    return out;
  };
  auto groups = [&] {
    std::vector<std::string> out;
    for (const auto& [group, tree] : pool()->by_share) out.push_back(group);
    return out;
  };
  EXPECT_EQ(filed(pool()->unshared), (Filed{{1000, "g"}}));
  EXPECT_TRUE(pool()->by_share.empty());
  index.AddShare("g", GpuShare{400, 400, "ns-a"}, +1);
  EXPECT_TRUE(filed(pool()->unshared).empty());
  EXPECT_THAT(groups(), ElementsAre("ns-a"));
  EXPECT_EQ(filed(pool()->by_share.at("ns-a")), (Filed{{600, "g"}}));
  EXPECT_EQ(index.Find("g")->share_group, "ns-a");
  index.AddShare("g", GpuShare{600, 600, "ns-a"}, +1);  // full
  EXPECT_TRUE(pool()->by_share.empty());
  EXPECT_TRUE(filed(pool()->unshared).empty());
  index.AddShare("g", GpuShare{600, 600, "ns-a"}, -1);
  EXPECT_EQ(filed(pool()->by_share.at("ns-a")), (Filed{{600, "g"}}));
  // Unhealthy (re-put as the catalog does, its shares kept): in no tree.
  Unit sick = *index.Find("g");
  sick.healthy = false;
  index.Put(sick);
  EXPECT_TRUE(pool()->by_share.empty());
  EXPECT_TRUE(filed(pool()->unshared).empty());
  Unit well = *index.Find("g");
  well.healthy = true;
  index.Put(well);
  EXPECT_EQ(filed(pool()->by_share.at("ns-a")), (Filed{{600, "g"}}));
  // The last share gone, any group may take it again.
  index.AddShare("g", GpuShare{400, 400, "ns-a"}, -1);
  EXPECT_EQ(index.Find("g")->share_group, "");
  EXPECT_TRUE(pool()->by_share.empty());
  EXPECT_EQ(filed(pool()->unshared), (Filed{{1000, "g"}}));
  index.SetHolder("g", "whole");
  EXPECT_TRUE(filed(pool()->unshared).empty());
  index.SetHolder("g", "");
  index.Remove("g");
  EXPECT_EQ(index.FindPool(kT4), nullptr);
}

// What each home offers follows its allocatable, whichever comes first.
TEST(CapacityIndexTest, ByAllocatableFollowsTheNodesAllocatable) {
  CapacityIndex index;
  index.Put(T4("a", "n1", 0));
  const CapacityIndex::Pool* pool = index.FindPool(kT4);
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->unaccounted_homes, 1);
  EXPECT_TRUE(pool->by_allocatable.empty());
  index.SetAllocatable("n1", NodeResources{8000, 64, 0});
  EXPECT_EQ(pool->unaccounted_homes, 0);
  EXPECT_THAT(Entries(pool->by_allocatable),
              ElementsAre(HomeTree::Entry{0, 8000, "n1", 64}));
  index.Put(T4("b", "n1", 1));  // a second unit: the same home
  index.SetAllocatable("n1", NodeResources{32000, 16, 0});
  EXPECT_THAT(Entries(pool->by_allocatable),
              ElementsAre(HomeTree::Entry{0, 32000, "n1", 16}));
  // Accounted before its first unit arrives.
  index.SetAllocatable("n2", NodeResources{4000, 8, 0});
  index.Put(T4("c", "n2", 0));
  EXPECT_THAT(Entries(pool->by_allocatable),
              ElementsAre(HomeTree::Entry{0, 4000, "n2", 8},
                          HomeTree::Entry{0, 32000, "n1", 16}));
  index.SetAllocatable("n1", std::nullopt);
  EXPECT_EQ(pool->unaccounted_homes, 1);
  EXPECT_THAT(Entries(pool->by_allocatable),
              ElementsAre(HomeTree::Entry{0, 4000, "n2", 8}));
  index.Remove("c");
  EXPECT_TRUE(pool->by_allocatable.empty());
}

// A change of the node's available memory alone re-keys its free entry: a
// match skipping by memory then finds it.
TEST(CapacityIndexTest, MemoryAloneRekeysTheFreeEntry) {
  CapacityIndex index;
  NodeMap nodes;
  index.Put(T4("a", "n1", 0));
  index.Put(T4("b", "n1", 1));
  nodes["n1"] = Healthy("n1");
  index.SetAllocatable("n1", NodeResources{8000, 64, 0});
  index.AddHeld("n1", NodeResources{0, 60, 0}, +1);
  index.SetHolder("a", "x");  // re-inserted with 4 bytes of memory
  index.AddHeld("n1", NodeResources{0, 60, 0}, -1);
  const CapacityIndex::Pool* pool = index.FindPool(kT4);
  ASSERT_NE(pool, nullptr);
  EXPECT_THAT(Entries(pool->by_free),
              ElementsAre(HomeTree::Entry{1, 8000, "n1", 64}));
  MatchSpec spec = MatchSpec::ForPool(kT4, 1);
  spec.pod_resources = NodeResources{0, 8, 1};
  auto chosen = Match(index, nodes, spec, Rules());
  ASSERT_TRUE(chosen.has_value());
  EXPECT_EQ((*chosen)[0]->key, "b");
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
  MatchSpec spec = MatchSpec::ForPool(kT4, 4);
  const EligibilityRules rules = Rules();
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
  EXPECT_EQ(RequestUnitName(DeviceClass::kNvidiaGpu, {}, ""),
            "whole NVIDIA_GPU device");
  EXPECT_EQ(RequestUnitName(DeviceClass::kNvidiaGpu, {"nvidia-tesla-t4"}, ""),
            "nvidia-tesla-t4 device");
  EXPECT_EQ(RequestUnitName(DeviceClass::kNvidiaGpu,
                            {"nvidia-a100-80gb", "nvidia-h100", "nvidia-h200"},
                            "1g.20gb"),
            "nvidia-a100-80gb, nvidia-h100 or nvidia-h200 1g.20gb slice");
}

const PoolKey kL4{DeviceClass::kNvidiaGpu, "nvidia-l4", ""};

Unit Whole(const PoolKey& pool, const std::string& key, const std::string& node,
           int order) {
  Unit u = T4(key, node, order);
  u.pool = pool;
  return u;
}

TEST(CapacityIndexTest, KnowsHowManyHomesHaveEachFreeCount) {
  CapacityIndex index;
  for (int i = 0; i < 3; ++i) index.Put(T4("a" + std::to_string(i), "a", i));
  index.Put(T4("b0", "b", 0));
  index.Put(Whole(kL4, "c0", "c", 0));
  index.Put(Unit{"m0",
                 {DeviceClass::kNvidiaGpu, "nvidia-h100", "1g.10gb"},
                 "d",
                 {"d"},
                 {},
                 "g",
                 0,
                 true,
                 ""});
  const CapacityIndex::Pool* t4 = index.FindPool(kT4);
  EXPECT_EQ(t4->HomesWithFree(1), 1);
  EXPECT_EQ(t4->HomesWithFree(3), 1);
  EXPECT_EQ(t4->HomesWithFree(4), 0);
  index.SetHolder("a0", "x");
  EXPECT_EQ(t4->HomesWithFree(1), 1);
  EXPECT_EQ(t4->HomesWithFree(2), 1);
  EXPECT_EQ(t4->HomesWithFree(3), 0);
  index.SetHolder("b0", "x");
  EXPECT_EQ(t4->HomesWithFree(1), 0);
  EXPECT_EQ(t4->free(), 2);
  // Whole NVIDIA pools in model order; the MIG pool is not one.
  std::vector<std::string> models;
  for (const auto& [key, pool] : index.PoolsOf(DeviceClass::kNvidiaGpu, "")) {
    models.push_back(key->model);
  }
  EXPECT_THAT(models, ElementsAre("nvidia-l4", "nvidia-tesla-t4"));
  EXPECT_TRUE(index.PoolsOf(DeviceClass::kAmdGpu, "").empty());
}

TEST(MatcherTest, AcrossModelsTheBestEligiblePairWins) {
  CapacityIndex index;
  NodeMap nodes;
  // t: one free T4, the best fit, but cordoned; l: two free L4s; u: two T4s.
  index.Put(T4("t0", "t", 0));
  index.Put(Whole(kL4, "l0", "l", 0));
  index.Put(Whole(kL4, "l1", "l", 1));
  index.Put(T4("u0", "u", 0));
  index.Put(T4("u1", "u", 1));
  for (const char* n : {"t", "l", "u"}) nodes[n] = Healthy(n);
  nodes["t"].schedulable = false;
  const EligibilityRules rules = Rules();
  MatchSpec any;  // any NVIDIA GPU
  // l and u both leave one free; T4 has three free units to L4's two.
  auto chosen = Match(index, nodes, any, rules);
  ASSERT_TRUE(chosen.has_value());
  EXPECT_EQ((*chosen)[0]->home, "u");
  // Once u is down to one, it is the best fit.
  index.SetHolder("u0", "x");
  chosen = Match(index, nodes, any, rules);
  ASSERT_TRUE(chosen.has_value());
  EXPECT_EQ((*chosen)[0]->key, "u1");
  // Only the named models count.
  MatchSpec l4 = any;
  l4.requested_models = {"nvidia-l4"};
  l4.count = 2;
  chosen = Match(index, nodes, l4, rules);
  ASSERT_TRUE(chosen.has_value());
  EXPECT_EQ((*chosen)[0]->home, "l");
  any.count = 2;
  index.SetHolder("l0", "x");
  EXPECT_FALSE(Match(index, nodes, any, rules).has_value());
  EXPECT_OK(CheckSatisfiable(index, any));
  any.count = 3;
  EXPECT_THAT(CheckSatisfiable(index, any),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("at most 2 whole NVIDIA_GPU devices")));
}

// Nodes of 8 T4s named by `free`'s keys, with all but that many held by
// allocation "held-<node>".
struct PackedCluster {
  CapacityIndex index;
  NodeMap nodes;
  explicit PackedCluster(const std::map<std::string, int>& free) {
    for (const auto& [name, n] : free) {
      nodes[name] = Healthy(name);
      for (int g = 0; g < 8; ++g) {
        const std::string key = absl::StrCat(name, "-", g);
        index.Put(T4(key, name, g));
        if (g >= n) index.SetHolder(key, "held-" + name);
      }
    }
  }
  std::string NodeFor(int count, const EligibilityRules& rules) {
    MatchSpec spec = MatchSpec::ForPool(kT4, count);
    std::optional<std::vector<const Unit*>> units =
        Match(index, nodes, spec, rules);
    return units.has_value() ? units->front()->home : "none";
  }
};

class MapLeases : public LeaseView {
 public:
  absl::Time FreeAt(absl::string_view allocation) const override {
    auto it = ends.find(std::string(allocation));
    return it == ends.end() ? absl::InfinitePast() : it->second;
  }
  std::map<std::string, absl::Time> ends;
};

TEST(MatchPackingTest, EachPolicyPicksItsNode) {
  PackedCluster c({{"a", 2}, {"b", 8}, {"c", 3}});
  EligibilityRules rules = Rules();
  RequestMix mix;
  mix.Add(rules.now, kT4, 1, 0, 0);
  mix.Add(rules.now, kT4, 2, 0, 0);
  rules.packing.mix = &mix;
  rules.packing.policy = Packing::kBestFit;
  EXPECT_EQ(c.NodeFor(1, rules), "a");  // fewest free
  rules.packing.policy = Packing::kFirstFit;
  EXPECT_EQ(c.NodeFor(3, rules), "b");  // a is too small; b before c
  rules.packing.policy = Packing::kSpread;
  EXPECT_EQ(c.NodeFor(1, rules), "b");  // most free
  // Fragmentation under a mix of 1s and 2s: one GPU taken of a's two
  // strands the other for the 2s; one of c's three leaves a pair.
  rules.packing.policy = Packing::kFragmentation;
  EXPECT_EQ(c.NodeFor(1, rules), "c");
  // Without a mix it is best fit.
  rules.packing.mix = nullptr;
  EXPECT_EQ(c.NodeFor(1, rules), "a");
}

TEST(MatchPackingTest, TheLeaseTermPutsARequestWithTheNodeItEndsWith) {
  PackedCluster c({{"soon", 3}, {"late", 3}, {"empty", 8}});
  EligibilityRules rules = Rules();
  MapLeases leases;
  leases.ends["held-soon"] = rules.now + absl::Hours(1);
  leases.ends["held-late"] = rules.now + absl::Hours(72);
  RequestMix mix;
  mix.Add(rules.now, kT4, 1, 0, 0);
  rules.packing.policy = Packing::kFragmentation;
  rules.packing.mix = &mix;
  rules.packing.leases = &leases;
  rules.ends_at = rules.now + absl::Hours(70);
  EXPECT_EQ(c.NodeFor(1, rules), "late");
  rules.ends_at = rules.now + absl::Minutes(50);
  EXPECT_EQ(c.NodeFor(1, rules), "soon");
  // Best fit ignores leases: the name breaks the tie.
  rules.packing.policy = Packing::kBestFit;
  rules.ends_at = rules.now + absl::Hours(70);
  EXPECT_EQ(c.NodeFor(1, rules), "late");
  rules.ends_at = rules.now + absl::Minutes(50);
  EXPECT_EQ(c.NodeFor(1, rules), "late");
}

// A count whose fragmentation change alone is no better than the best score
// found is not visited: no node of it could win.
TEST(MatchPackingTest, RankingStopsWhereNoNodeCouldWin) {
  std::map<std::string, int> free;
  for (int i = 0; i < 20; ++i) free[absl::StrCat("full-", i)] = 8;
  free["pair"] = 2;
  PackedCluster c(free);
  EligibilityRules rules = Rules();
  RequestMix mix;
  mix.Add(rules.now, kT4, 8, 0, 0);
  rules.packing.policy = Packing::kFragmentation;
  rules.packing.mix = &mix;
  MatchSpec spec = MatchSpec::ForPool(kT4, 1);
  std::vector<RankedPlacement> ranked =
      RankPlacements(c.index, c.nodes, spec, rules);
  ASSERT_EQ(ranked.size(), 1u);
  EXPECT_EQ(ranked[0].node, "pair");  // takes a fragment: -1 stranded
  EXPECT_DOUBLE_EQ(ranked[0].score.total, -1);
  // Breaking a whole node strands 7 for the 8s.
  EXPECT_EQ(c.NodeFor(3, rules), "full-0");
  ranked = RankPlacements(c.index, c.nodes, MatchSpec::ForPool(kT4, 3), rules);
  // The next full node scores no better (no lease term): it is not kept.
  ASSERT_EQ(ranked.size(), 1u);
  EXPECT_EQ(ranked[0].node, "full-0");
  EXPECT_DOUBLE_EQ(ranked[0].score.total, 5 * 1.0);
}

// With leases every count may hold the best node: the walk stops at
// kMaxScored.
TEST(MatchPackingTest, RankingIsBoundedInAll) {
  std::map<std::string, int> free;
  for (int f = 1; f <= 8; ++f) {
    for (int i = 0; i < 3; ++i) free[absl::StrCat("f", f, "-", i)] = f;
  }
  PackedCluster c(free);
  EligibilityRules rules = Rules();
  MapLeases leases;
  for (const auto& [name, f] : free) {
    leases.ends["held-" + name] = rules.now + absl::Hours(1 + f);
  }
  rules.packing.policy = Packing::kFragmentation;
  rules.packing.leases = &leases;
  rules.ends_at = rules.now + absl::Hours(100);
  std::vector<RankedPlacement> ranked =
      RankPlacements(c.index, c.nodes, MatchSpec::ForPool(kT4, 1), rules);
  EXPECT_EQ(ranked.size(), PackingRules::kMaxScored);
  for (size_t i = 1; i < ranked.size(); ++i) {
    EXPECT_LE(ranked[i - 1].score.total, ranked[i].score.total);
  }
}

TEST(MatchPackingTest, FragmentationRatioIsTheShareOfFreeUnitsStranded) {
  PackedCluster c({{"a", 2}, {"b", 8}});
  RequestMix mix;
  mix.Add(absl::FromUnixSeconds(1000), kT4, 4, 0, 0);
  const CapacityIndex::Pool* pool = c.index.FindPool(kT4);
  ASSERT_NE(pool, nullptr);
  // a's two cannot take a request of 4; b's eight can.
  EXPECT_DOUBLE_EQ(FragmentationRatio(
                       *pool, mix.ShapesFor(kT4, absl::FromUnixSeconds(1000))),
                   2.0 / 10);
  EXPECT_DOUBLE_EQ(FragmentationRatio(*pool, {}), 0);
}

// With CPU accounted, a node whose CPU the mix's shapes already lack has
// its GPUs stranded: taking one of them lowers fragmentation. The count of
// such a node is not pruned by the units-only change.
TEST(MatchPackingTest, ANodeShortOfCpuForTheMixIsWeighed) {
  CapacityIndex index;
  NodeMap nodes;
  for (const auto& [name, size, free] :
       {std::tuple<const char*, int, int>{"a", 8, 2}, {"b", 10, 8}}) {
    nodes[name] = Healthy(name);
    for (int g = 0; g < size; ++g) {
      const std::string key = absl::StrCat(name, "-", g);
      index.Put(T4(key, name, g));
      if (g >= free) index.SetHolder(key, "held");
    }
  }
  index.SetAllocatable("b", NodeResources{1000, int64_t{1} << 40, 0});
  EligibilityRules rules = Rules();
  RequestMix mix;
  for (int i = 0; i < 10; ++i) mix.Add(rules.now, kT4, 1, 2000, 0);
  mix.Add(rules.now, kT4, 1, 1000, 0);
  rules.packing.policy = Packing::kFragmentation;
  rules.packing.mix = &mix;
  MatchSpec spec = MatchSpec::ForPool(kT4, 1);
  spec.pod_resources = NodeResources{1000, 0, 1};
  std::vector<RankedPlacement> ranked =
      RankPlacements(index, nodes, spec, rules);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].node, "b");
  EXPECT_LT(ranked[0].score.total, 0);
  std::optional<std::vector<const Unit*>> units =
      Match(index, nodes, spec, rules);
  ASSERT_TRUE(units.has_value());
  EXPECT_EQ(units->front()->home, "b");
}

// Scoring looks at a slice's home only: when every slice it weighed has
// another host cordoned, Match still finds the one that fits.
TEST(MatchPackingTest, ASliceWhoseOtherHostIsCordonedIsPassedOver) {
  const PoolKey tpu = kTpu2x2x2;
  CapacityIndex index;
  NodeMap nodes;
  AddTwoHostSlices(index, nodes, 3);
  EligibilityRules rules = Rules();
  RequestMix mix;
  mix.Add(rules.now, tpu, 1, 0, 0);
  rules.packing.policy = Packing::kFragmentation;
  rules.packing.mix = &mix;
  std::optional<std::vector<const Unit*>> units =
      Match(index, nodes, MatchSpec::ForPool(tpu, 1), rules);
  ASSERT_TRUE(units.has_value());
  EXPECT_EQ(units->front()->home, "a-3");
}

TEST(MatchPackingTest, CountInMixWeighsModelsAndReplicas) {
  RequestMix mix;
  const absl::Time now = absl::FromUnixSeconds(1000);
  MatchSpec two_models;
  two_models.requested_models = {"nvidia-l4", "nvidia-tesla-t4"};
  two_models.count = 2;
  CountInMix(two_models, now, mix);  // 1/2 each
  MatchSpec gang = MatchSpec::ForPool(kT4, 4);
  gang.replicas = 3;
  CountInMix(gang, now, mix);  // 3 groups of 4
  MatchSpec share = MatchSpec::ForPool(kT4, 1);
  share.share = GpuShare{300, 0};
  CountInMix(share, now, mix);  // not counted
  std::vector<RequestShape> shapes = mix.ShapesFor(kT4, now);
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_EQ(shapes[0].count, 4);
  EXPECT_DOUBLE_EQ(shapes[0].weight, 3 / 3.5);
  EXPECT_EQ(shapes[1].count, 2);
  EXPECT_DOUBLE_EQ(shapes[1].weight, 0.5 / 3.5);
}

// The index keeps who holds a home's units whole, through every change.
TEST(CapacityIndexTest, HoldersFollowAllocationsPutAndRemove) {
  CapacityIndex index;
  index.Put(T4("a", "n1", 0));
  index.Put(T4("b", "n1", 1));
  index.SetHolder("a", "x");
  index.SetHolder("b", "x");
  const CapacityIndex::Pool* pool = index.FindPool(kT4);
  ASSERT_NE(pool, nullptr);
  const CapacityIndex::Home& home = pool->homes.at("n1");
  EXPECT_EQ(home.holders.at("x"), 2);
  // Put again while held (a re-registration): the new unit is free.
  index.Put(T4("a", "n1", 0));
  EXPECT_EQ(home.holders.at("x"), 1);
  index.SetHolder("a", "y");
  EXPECT_EQ(home.holders.at("y"), 1);
  index.Remove("b");
  EXPECT_FALSE(home.holders.contains("x"));
  index.SetHolder("a", "");
  EXPECT_TRUE(home.holders.empty());
}

// A gang is chosen from the nodes' eligibility and labels, and units are
// taken for the chosen ones only: a node whose unit cannot serve after all
// (another host of its slice cordoned) is left out and the choice made
// again, here twice, so that the gang lands on the two slices that serve.
TEST(MatchGangTest, ANodeWhoseUnitsDoNotServeIsLeftOutAndTheChoiceMadeAgain) {
  const PoolKey tpu = kTpu2x2x2;
  CapacityIndex index;
  NodeMap nodes;
  AddTwoHostSlices(index, nodes, 2);
  MatchSpec spec = MatchSpec::ForPool(tpu, 1);
  spec.replicas = 2;
  std::optional<std::vector<std::vector<const Unit*>>> groups =
      MatchGang(index, nodes, spec, Rules());
  ASSERT_TRUE(groups.has_value());
  std::vector<std::string> homes;
  for (const auto& group : *groups) homes.push_back(group.front()->home);
  EXPECT_THAT(homes, ElementsAre("a-2", "a-3"));
  // With a third group there are not enough slices that serve.
  spec.replicas = 3;
  EXPECT_FALSE(MatchGang(index, nodes, spec, Rules()).has_value());
}

// A node held for another request is not a candidate of a gang.
TEST(MatchGangTest, ANodeHeldForAnotherIsPassedOver) {
  CapacityIndex index;
  NodeMap nodes;
  for (const char* name : {"n1", "n2", "n3"}) {
    nodes[name] = Healthy(name);
    for (int g = 0; g < 2; ++g) {
      index.Put(T4(absl::StrCat(name, "-gpu", g), name, g));
    }
  }
  Reservations held;
  held[kT4]["n1"] = Reservation{absl::FromUnixSeconds(2000), "other"};
  EligibilityRules rules = Rules();
  rules.reservations = &held;
  rules.ends_at = absl::FromUnixSeconds(5000);  // past the hold's start
  MatchSpec spec = MatchSpec::ForPool(kT4, 2);
  spec.replicas = 2;
  std::optional<std::vector<std::vector<const Unit*>>> groups =
      MatchGang(index, nodes, spec, rules);
  ASSERT_TRUE(groups.has_value());
  std::vector<std::string> homes;
  for (const auto& group : *groups) homes.push_back(group.front()->home);
  EXPECT_THAT(homes, ElementsAre("n2", "n3"));
}

}  // namespace
}  // namespace accelsched
