// The gpu_links plugin (Score within a node): on a node whose GPUs report
// links, a request of whole devices takes the best-linked set of its first
// kMaxLinkedCandidates eligible free GPUs; Explain says which set and why.
// Which node is the placement's. (ChooseLinkedSet's own arithmetic is in
// linked_set_test.)
#include "core/plugins/gpu_links/gpu_links.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/catalog/capacity_index.h"
#include "core/framework/cycle_state.h"
#include "core/framework/snapshot.h"
#include "core/matching/match_spec.h"
#include "core/plugins/gpu_links/linked_set.h"
#include "core/plugins/index_placer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const absl::Time kNow = absl::FromUnixSeconds(1000);
const PoolKey kT4{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", ""};
const PoolKey kSlice{DeviceClass::kNvidiaGpu, "nvidia-tesla-a100", "1g.5gb"};

std::string GpuId(int i) { return absl::StrCat("n1-gpu", i); }

// NVIDIA/k8s-device-plugin#546's 8-GPU board as the agent reports it:
// NVLink pairs (0,2), (1,3), (4,5), (6,7) (4 NVLinks each), GPUs 0-3 on
// CPU 0; PCIe switches (0,1), (2,3), (4,5), (6,7) (this test's assumption,
// as scheduler_links_test's). Without `links`, the same GPUs reporting none.
Node PairBoard(bool links) {
  const int switch_of[] = {0, 0, 1, 1, 2, 2, 3, 3};
  const int partner[] = {2, 3, 0, 1, 5, 4, 7, 6};
  Node n;
  n.name = "n1";
  n.last_heartbeat = kNow;
  for (int a = 0; a < 8; ++a) {
    Device d;
    d.id = GpuId(a);
    d.model = kT4.model;
    d.index = a;
    for (int b = 0; b < 8 && links; ++b) {
      if (a == b) continue;
      if (partner[a] == b) {
        d.links.push_back({GpuId(b), LinkKind::kNvlink, 4});
      } else if (switch_of[a] == switch_of[b]) {
        d.links.push_back({GpuId(b), LinkKind::kPcieSwitch, 0});
      } else if (a / 4 == b / 4) {
        d.links.push_back({GpuId(b), LinkKind::kSameNuma, 0});
      }
    }
    n.devices.push_back(std::move(d));
  }
  return n;
}

// `node`'s devices as units of `pool` in the index, keyed by device id.
void PutUnits(CapacityIndex& index, const Node& node,
              const PoolKey& pool = kT4) {
  for (const Device& d : node.devices) {
    Unit u;
    u.key = d.id;
    u.pool = pool;
    u.home = node.name;
    u.hosts = {node.name};
    u.devices = {{node.name, d.id, "", ""}};
    u.order = d.index;
    index.Put(std::move(u));
  }
}

std::vector<int> Orders(absl::Span<const Unit* const> units) {
  std::vector<int> out;
  for (const Unit* u : units) out.push_back(u->order);
  return out;
}

// One node, n1, and cycles of new requests over it.
class GpuLinksTest : public testing::Test {
 protected:
  void SetBoard(Node node, const PoolKey& pool = kT4) {
    index_ = CapacityIndex();
    nodes_.clear();
    PutUnits(index_, node, pool);
    nodes_[node.name] = std::move(node);
    snapshot_.index = &index_;
    snapshot_.nodes = &nodes_;
    snapshot_.now = kNow;
  }

  std::unique_ptr<CycleState> Cycle(const MatchSpec& spec) {
    specs_.push_back(std::make_unique<MatchSpec>(spec));
    return std::make_unique<CycleState>(CycleMode::kExplain, snapshot_,
                                        *specs_.back(), request_, nullptr);
  }

  // The GPUs (by index) the default profile's placement gives a request of
  // `count`, held by it after.
  std::vector<int> Take(int count) {
    IndexPlacer placer(&index_, &nodes_, {Packing::kBestFit});
    auto units = placer.PlaceOne(MatchSpec::ForPool(kT4, count), kNow);
    if (!units.has_value()) return {};
    for (const Unit* u : *units) index_.SetHolder(u->key, "taken");
    return Orders(*units);
  }

  // What Describe says of the group of GPUs `which` (by index).
  std::string Describe(const std::vector<int>& which,
                       const MatchSpec& spec = MatchSpec::ForPool(kT4, 1)) {
    std::vector<const Unit*> group;
    for (int i : which) group.push_back(index_.Find(GpuId(i)));
    std::unique_ptr<CycleState> cycle = Cycle(spec);
    return plugin_.Describe(*cycle, group);
  }

  CapacityIndex index_;
  NodeMap nodes_;
  Snapshot snapshot_;
  Allocation request_;
  std::vector<std::unique_ptr<MatchSpec>> specs_;
  GpuLinksPlugin plugin_;
};

// On a node with links it weighs up to kMaxLinkedCandidates GPUs (at least
// the count); a node without links, a MIG slice (by its pool) or a node
// whose only links are of removed devices is left to best-fit order.
TEST_F(GpuLinksTest, WeighsMoreThanTheCountOnlyWhereLinksChoose) {
  Node removed = PairBoard(/*links=*/false);
  removed.devices[0].links.push_back({GpuId(1), LinkKind::kNvlink, 4});
  removed.devices[0].removed = true;
  struct Case {
    std::string name;
    Node node;
    const PoolKey* pool;
    int count;
    int weighs;
  };
  for (const Case& c : std::vector<Case>{
           {"links, one", PairBoard(true), &kT4, 1, kMaxLinkedCandidates},
           {"links, more than it weighs", PairBoard(true), &kT4, 20, 20},
           {"no links", PairBoard(false), &kT4, 2, 2},
           {"links, a MIG pool", PairBoard(true), &kSlice, 2, 2},
           {"links of a removed device only", removed, &kT4, 2, 2},
       }) {
    SetBoard(c.node);
    std::unique_ptr<CycleState> cycle = Cycle(MatchSpec::ForPool(kT4, 1));
    EXPECT_EQ(plugin_.Weighs(*cycle, c.node, *c.pool, c.count), c.weighs)
        << c.name;
  }
}

// Of the free GPUs given (by index into them), the best-linked set; none
// where no two of them are linked, so that best-fit order stands.
TEST_F(GpuLinksTest, ChooseTakesTheBestLinkedSet) {
  SetBoard(PairBoard(true));
  std::vector<const Unit*> all;
  for (int i = 0; i < 8; ++i) all.push_back(index_.Find(GpuId(i)));
  std::unique_ptr<CycleState> cycle = Cycle(MatchSpec::ForPool(kT4, 2));
  const Node& board = nodes_["n1"];
  // One GPU whose pair stays whole elsewhere; the pair least linked to the
  // others; the four on one CPU.
  EXPECT_THAT(plugin_.Choose(*cycle, board, all, 1), ElementsAre(4));
  EXPECT_THAT(plugin_.Choose(*cycle, board, all, 2), ElementsAre(4, 5));
  EXPECT_THAT(plugin_.Choose(*cycle, board, all, 4), ElementsAre(0, 1, 2, 3));
  // Indexes are into the units given: GPUs 1, 3 and 6 given, 1 and 3 are
  // NVLinked.
  const std::vector<const Unit*> some = {all[1], all[3], all[6]};
  EXPECT_THAT(plugin_.Choose(*cycle, board, some, 2), ElementsAre(0, 1));
  SetBoard(PairBoard(false));
  all.clear();
  for (int i = 0; i < 8; ++i) all.push_back(index_.Find(GpuId(i)));
  EXPECT_THAT(plugin_.Choose(*cycle, nodes_["n1"], all, 2), IsEmpty());
}

// Through the placement, request after request (scheduler_links_test's
// sequence, on a bare index): without links in index order, with links the
// best-linked set each time.
TEST_F(GpuLinksTest, EachRequestTakesTheBestLinkedSet) {
  SetBoard(PairBoard(/*links=*/false));
  EXPECT_THAT(Take(1), ElementsAre(0));
  EXPECT_THAT(Take(1), ElementsAre(1));
  EXPECT_THAT(Take(2), ElementsAre(2, 3));
  SetBoard(PairBoard(/*links=*/true));
  EXPECT_THAT(Take(1), ElementsAre(4));
  EXPECT_THAT(Take(1), ElementsAre(5));
  EXPECT_THAT(Take(2), ElementsAre(6, 7));
  EXPECT_THAT(Take(2), ElementsAre(0, 2));
  EXPECT_THAT(Take(2), ElementsAre(1, 3));
}

TEST_F(GpuLinksTest, DescribeSaysWhichSetAndWhy) {
  SetBoard(PairBoard(true));
  EXPECT_EQ(Describe({4, 5}),
            "GPUs 4, 5 of n1 (all NVLinked, 4 NVLinks among them): the "
            "best-linked 2 of its 8 free GPUs");
  EXPECT_EQ(Describe({0, 1, 2, 3}),
            "GPUs 0, 1, 2, 3 of n1 (all on one CPU, 8 NVLinks among them): "
            "the best-linked 4 of its 8 free GPUs");
  // A set without NVLinks says only its worst pair.
  EXPECT_EQ(Describe({0, 1}),
            "GPUs 0, 1 of n1 (all under one PCIe switch): the best-linked 2 "
            "of its 8 free GPUs");
  for (int i = 0; i < 4; ++i) index_.SetHolder(GpuId(i), "taken");
  EXPECT_EQ(Describe({4}),
            "GPU 4 of n1: of its 4 free GPUs, the one that leaves the others "
            "best linked");
}

// Where links chose nothing: every free GPU taken, a share (its GPU is
// chosen by free compute), a node without links, a MIG slice.
TEST_F(GpuLinksTest, DescribeIsSilentWhereLinksChoseNothing) {
  SetBoard(PairBoard(true));
  EXPECT_EQ(Describe({0, 1, 2, 3, 4, 5, 6, 7}), "");
  for (int i = 2; i < 8; ++i) index_.SetHolder(GpuId(i), "taken");
  EXPECT_EQ(Describe({0, 1}), "");  // the two free ones
  SetBoard(PairBoard(true));
  MatchSpec share = MatchSpec::ForPool(kT4, 1);
  share.share = GpuShare{500, 0};
  EXPECT_EQ(Describe({4}, share), "");
  EXPECT_EQ(Describe({}), "");
  SetBoard(PairBoard(false));
  EXPECT_EQ(Describe({0, 1}), "");
  SetBoard(PairBoard(true), kSlice);
  EXPECT_EQ(Describe({0, 1}, MatchSpec::ForPool(kSlice, 2)), "");
}

// Past kMaxLinkedCandidates free GPUs, only the first are weighed, and
// Explain says so.
TEST_F(GpuLinksTest, DescribeNamesTheFirstGpusWeighedOfMore) {
  Node big;
  big.name = "n1";
  big.last_heartbeat = kNow;
  for (int i = 0; i < kMaxLinkedCandidates + 2; ++i) {
    Device d;
    d.id = GpuId(i);
    d.model = kT4.model;
    d.index = i;
    big.devices.push_back(std::move(d));
  }
  big.devices[0].links.push_back({GpuId(1), LinkKind::kNvlink, 4});
  SetBoard(std::move(big));
  EXPECT_EQ(Describe({0, 1}),
            "GPUs 0, 1 of n1 (all NVLinked, 4 NVLinks among them): the "
            "best-linked 2 of its first 16 free GPUs");
  EXPECT_THAT(Take(2), ElementsAre(0, 1));
}

}  // namespace
}  // namespace accelsched
