// The lease_term plugin: how badly a request's lease end matches when a
// node's held units come free (LeaseMismatch), the Score beside
// fragmentation in the default profile; LeasesOf.
#include "core/plugins/lease_term/lease_term.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/catalog/capacity_index.h"
#include "core/framework/cycle_state.h"
#include "core/framework/framework.h"
#include "core/framework/snapshot.h"
#include "core/matching/match_spec.h"
#include "core/plugins/index_placer.h"
#include "core/plugins/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/packed_nodes.h"

namespace accelsched {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1000);
const PoolKey kT4{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", ""};

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

class MapLeases : public LeaseView {
 public:
  absl::Time FreeAt(absl::string_view allocation,
                    absl::Time /*now*/) const override {
    auto it = ends.find(std::string(allocation));
    return it == ends.end() ? absl::InfinitePast() : it->second;
  }
  std::map<std::string, absl::Time> ends;
};

// Nodes of 8 T4s named by `free`'s keys, with all but that many held by
// allocation "held-<node>".
struct PackedCluster : PackedNodes {
  explicit PackedCluster(const std::map<std::string, int>& free) {
    Add(free, kT4, kNow);
  }
  std::string NodeFor(int count, Packing packing, const RequestMix* mix,
                      const LeaseView* leases, absl::Time ends_at) {
    IndexPlacer placer(&index, &nodes,
                       {packing, absl::Minutes(5), mix, leases});
    auto units = placer.PlaceOne(MatchSpec::ForPool(kT4, count), kNow, ends_at);
    return units.has_value() ? units->front()->home : "none";
  }
};

TEST(LeaseTermTest, TheLeaseTermPutsARequestWithTheNodeItEndsWith) {
  PackedCluster c({{"soon", 3}, {"late", 3}, {"empty", 8}});
  MapLeases leases;
  leases.ends["held-soon"] = kNow + absl::Hours(1);
  leases.ends["held-late"] = kNow + absl::Hours(72);
  RequestMix mix;
  mix.Add(kNow, kT4, 1, 0, 0);
  EXPECT_EQ(c.NodeFor(1, Packing::kFragmentation, &mix, &leases,
                      kNow + absl::Hours(70)),
            "late");
  EXPECT_EQ(c.NodeFor(1, Packing::kFragmentation, &mix, &leases,
                      kNow + absl::Minutes(50)),
            "soon");
  // Best fit ignores leases: the name breaks the tie.
  EXPECT_EQ(
      c.NodeFor(1, Packing::kBestFit, &mix, &leases, kNow + absl::Hours(70)),
      "late");
  EXPECT_EQ(
      c.NodeFor(1, Packing::kBestFit, &mix, &leases, kNow + absl::Minutes(50)),
      "late");
}

// How many units are held whole and when the last of their holders' leases
// ends; an allocation the view does not know ends at InfinitePast.
TEST(LeaseTermTest, LeasesOfCountsTheHeldUnitsAndTheLatestEnd) {
  MapLeases view;
  view.ends["x"] = kNow + absl::Hours(1);
  view.ends["y"] = kNow + absl::Hours(3);
  struct Case {
    std::string name;
    std::map<std::string, int> holders;
    int held;
    absl::Time busy_until;
  };
  for (const Case& c : std::vector<Case>{
           {"nothing held", {}, 0, absl::InfinitePast()},
           {"one holder", {{"x", 2}}, 2, kNow + absl::Hours(1)},
           {"the latest of two",
            {{"x", 2}, {"y", 3}},
            5,
            kNow + absl::Hours(3)},
           {"an unknown holder", {{"z", 1}}, 1, absl::InfinitePast()},
           {"an unknown holder beside x",
            {{"x", 1}, {"z", 1}},
            2,
            kNow + absl::Hours(1)},
       }) {
    CapacityIndex::Home home;
    for (const auto& [holder, units] : c.holders) home.holders[holder] = units;
    const NodeLeases leases = LeasesOf(home, view, kNow);
    EXPECT_EQ(leases.held, c.held) << c.name;
    EXPECT_EQ(leases.busy_until, c.busy_until) << c.name;
  }
}

// The score of a node of 8 T4s, `held` of them held by "x" whose lease ends
// `x_ends` after kNow, for a request of `count` ending `ends` after kNow.
TEST(LeaseTermTest, ScoreIsTheLeaseMismatchInUnits) {
  struct Case {
    std::string name;
    int held;
    absl::Duration x_ends;
    int count;
    absl::Time ends_at;
    bool leases = true;  // whether the snapshot has a LeaseView
    double score;
  };
  const absl::Duration h = absl::Hours(1);
  for (const Case& c : std::vector<Case>{
           // Nothing held: the node comes free now, so the request keeps
           // its 7 others partly taken for all of its lease.
           {"an empty node", 0, h, 1, kNow + h, true, 7},
           {"ending with the others", 5, 2 * h, 1, kNow + 2 * h, true, 0},
           // Its own unit waits 1 h of the 2 h horizon for the others.
           {"ending before the others", 5, 2 * h, 1, kNow + h, true, 0.5},
           {"three ending before the others", 5, 2 * h, 3, kNow + h, true, 1.5},
           // The 7 others wait 2 h of the 4 h horizon.
           {"ending after the others", 5, 2 * h, 1, kNow + 4 * h, true, 3.5},
           // Leases already over count as a node that comes free now.
           {"the others' leases past", 5, -h, 1, kNow + h, true, 7},
           {"no lease end known", 5, 2 * h, 1, absl::InfiniteFuture(), true, 0},
           {"no leases (a bare index)", 5, 2 * h, 1, kNow + h, false, 0},
       }) {
    CapacityIndex index;
    NodeMap nodes{{"n1", HeardFrom("n1", kNow)}};
    for (int g = 0; g < 8; ++g) {
      const std::string key = absl::StrCat("n1-", g);
      index.Put(T4(key, "n1", g));
      if (g < c.held) index.SetHolder(key, "x");
    }
    MapLeases view;
    view.ends["x"] = kNow + c.x_ends;
    Snapshot snapshot;
    snapshot.index = &index;
    snapshot.nodes = &nodes;
    snapshot.now = kNow;
    snapshot.leases = c.leases ? &view : nullptr;
    const MatchSpec spec = MatchSpec::ForPool(kT4, c.count);
    Allocation request;
    CycleState cycle(CycleMode::kAllocate, snapshot, spec, request, nullptr,
                     c.ends_at);
    const CapacityIndex::Pool* pool = index.FindPool(kT4);
    ASSERT_NE(pool, nullptr);
    auto home = pool->homes.find("n1");
    const ScoredNode node{&kT4, &home->first, &home->second, c.count};
    LeaseTermPlugin plugin;
    EXPECT_DOUBLE_EQ(plugin.Score(cycle, node), c.score) << c.name;
  }
}

// The default profile weighs the lease term beside fragmentation only, at
// kLeaseWeight.
TEST(LeaseTermTest, TheDefaultProfileScoresItBesideFragmentationOnly) {
  for (Packing packing : {Packing::kFragmentation, Packing::kBestFit,
                          Packing::kFirstFit, Packing::kSpread}) {
    absl::StatusOr<std::unique_ptr<Framework>> fw = Framework::Create(
        PluginRegistry(), DefaultProfile(ProfileOptions{packing, false}));
    ASSERT_TRUE(fw.ok()) << fw.status();
    std::vector<std::pair<std::string, double>> scores;
    for (const PluginSet::WeightedScore& s : (*fw)->plugins().scores()) {
      scores.emplace_back(std::string(s.plugin->name()), s.weight);
    }
    if (packing == Packing::kFragmentation) {
      EXPECT_THAT(scores, testing::ElementsAre(testing::Pair(
                              LeaseTermPlugin::kName, kLeaseWeight)));
    } else {
      EXPECT_THAT(scores, testing::IsEmpty()) << static_cast<int>(packing);
    }
  }
}

}  // namespace
}  // namespace accelsched
