#include "core/plugins/gpu_links/linked_set.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;

std::string Id(int i) { return absl::StrCat("g", i); }

// A node of `gpus` GPUs g0, g1, ... without links.
Node Board(int gpus) {
  Node n;
  n.name = "n1";
  for (int i = 0; i < gpus; ++i) {
    Device d;
    d.id = Id(i);
    d.index = i;
    n.devices.push_back(d);
  }
  return n;
}

// Reports one link, from `a` only (a pair's closeness is what either end
// says).
void Link(Node& n, int a, int b, LinkKind kind, int count = 0) {
  n.devices[a].links.push_back({Id(b), kind, count});
}

// What the agent reports for each pair of a board: the pair's NVLinks (4
// for each of `nvlinked`), else a PCIe switch in common, else a CPU in
// common, else nothing.
void Report(Node& n, const std::vector<int>& switch_of,
            const std::vector<int>& numa_of,
            const std::vector<std::pair<int, int>>& nvlinked = {}) {
  const int gpus = static_cast<int>(switch_of.size());
  for (int a = 0; a < gpus; ++a) {
    for (int b = 0; b < gpus; ++b) {
      if (a == b) continue;
      if (std::find(nvlinked.begin(), nvlinked.end(), std::pair{a, b}) !=
              nvlinked.end() ||
          std::find(nvlinked.begin(), nvlinked.end(), std::pair{b, a}) !=
              nvlinked.end()) {
        Link(n, a, b, LinkKind::kNvlink, 4);
      } else if (switch_of[a] == switch_of[b]) {
        Link(n, a, b, LinkKind::kPcieSwitch);
      } else if (numa_of[a] == numa_of[b]) {
        Link(n, a, b, LinkKind::kSameNuma);
      }
    }
  }
}

// NVIDIA/k8s-device-plugin#546's board: NVLink pairs (0,2), (1,3), (4,5),
// (6,7), GPUs 0-3 on CPU 0. The PCIe switches (0,1), (2,3), (4,5), (6,7) are
// this test's assumption.
Node PairBoard() {
  Node n = Board(8);
  Report(n, {0, 0, 1, 1, 2, 2, 3, 3}, {0, 0, 0, 0, 1, 1, 1, 1},
         {{0, 2}, {1, 3}, {4, 5}, {6, 7}});
  return n;
}

std::vector<absl::string_view> Ids(const Node& n,
                                   const std::vector<int>& which) {
  std::vector<absl::string_view> ids;
  for (int i : which) ids.push_back(n.devices[i].id);
  return ids;
}

std::vector<int> All(int n) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(i);
  return v;
}

TEST(LinkGraphTest, APairIsAsCloseAsEitherEndSays) {
  Node n = Board(3);
  Link(n, 0, 1, LinkKind::kSameNuma);
  Link(n, 1, 0, LinkKind::kNvlink, 2);
  Link(n, 2, 0, LinkKind::kNvlink, 6);
  n.devices[0].links.push_back({"elsewhere", LinkKind::kNvlink, 9});
  const LinkGraph graph(n, Ids(n, All(3)));
  EXPECT_FALSE(graph.empty());
  EXPECT_EQ(graph.tier(0, 1), PairTier::kNvlink);
  EXPECT_EQ(graph.nvlinks(1, 0), 2);
  EXPECT_EQ(graph.nvlinks(0, 2), 6);
  EXPECT_EQ(graph.tier(1, 2), PairTier::kNone);
  EXPECT_EQ(graph.weight(0, 2), 600);
  EXPECT_EQ(graph.weight(1, 2), 10);
  // Only links among the GPUs asked about count.
  EXPECT_TRUE(LinkGraph(n, Ids(n, {1, 2})).empty());
}

// A pair board: two GPUs are an NVLinked pair, one GPU the partner of a GPU
// taken (so that whole pairs stay), four the GPUs of one CPU.
TEST(ChooseLinkedSetTest, PairBoardTakesAPairAndKeepsPairsWhole) {
  const Node n = PairBoard();
  const LinkGraph all(n, Ids(n, All(8)));
  // Of the four pairs, the least linked to the GPUs left: (4,5) and (6,7),
  // whose switch is their pair's (20 to each GPU of the other switch of
  // CPU 1, 10 across), before (0,2) and (1,3) (50 to a switch peer too).
  LinkedSet two = ChooseLinkedSet(all, 2);
  EXPECT_THAT(two.members, ElementsAre(4, 5));
  EXPECT_EQ(two.tier, PairTier::kNvlink);
  EXPECT_EQ(two.nvlinks, 4);
  // GPU 0 taken: free are 1..7 (graph indexes 0..6).
  const LinkGraph rest(n, Ids(n, {1, 2, 3, 4, 5, 6, 7}));
  EXPECT_THAT(ChooseLinkedSet(rest, 1).members, ElementsAre(1));  // GPU 2
  LinkedSet pair = ChooseLinkedSet(rest, 2);
  EXPECT_THAT(pair.members, ElementsAre(3, 4));  // GPUs 4 and 5
  EXPECT_EQ(pair.tier, PairTier::kNvlink);
  // Four: one CPU's GPUs, two pairs.
  LinkedSet four = ChooseLinkedSet(all, 4);
  EXPECT_THAT(four.members, ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(four.tier, PairTier::kSameNuma);
  EXPECT_EQ(four.nvlinks, 8);
}

// On an NVSwitch board every pair is NVLinked; a GPU with fewer links to the
// switches is left out while another will do.
TEST(ChooseLinkedSetTest, NvswitchBoardAvoidsAGpuWithFewerLinks) {
  Node n = Board(8);
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      if (a != b)
        Link(n, a, b, LinkKind::kNvlink, (a == 0 || b == 0) ? 12 : 18);
    }
  }
  LinkedSet four = ChooseLinkedSet(LinkGraph(n, Ids(n, All(8))), 4);
  EXPECT_THAT(four.members, ElementsAre(1, 2, 3, 4));
  EXPECT_EQ(four.tier, PairTier::kNvlink);
  EXPECT_EQ(four.nvlinks, 6 * 18);
}

// A PCIe board of two switches on one CPU: the GPUs under one switch, and a
// lone GPU left on a switch is taken first by a request of one.
TEST(ChooseLinkedSetTest, PcieBoardStaysUnderOneSwitch) {
  Node n = Board(8);
  Report(n, {0, 0, 0, 0, 1, 1, 1, 1}, {0, 0, 0, 0, 0, 0, 0, 0});
  // GPUs 0-2 taken: free are 3..7.
  const LinkGraph free(n, Ids(n, {3, 4, 5, 6, 7}));
  LinkedSet two = ChooseLinkedSet(free, 2);
  EXPECT_THAT(two.members, ElementsAre(1, 2));  // GPUs 4 and 5, not 3 and 4
  EXPECT_EQ(two.tier, PairTier::kPcieSwitch);
  EXPECT_THAT(ChooseLinkedSet(free, 4).members, ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(ChooseLinkedSet(free, 1).members, ElementsAre(0));  // GPU 3
  LinkedSet five = ChooseLinkedSet(free, 5);
  EXPECT_EQ(five.tier, PairTier::kSameNuma);
}

// The worst pair decides before the NVLinks: three GPUs under one switch
// beat three with 8 NVLinks among them but two on different CPUs.
TEST(ChooseLinkedSetTest, TheWorstPairDecidesBeforeTheNvlinks) {
  Node n = Board(6);
  Report(n, {0, 0, 0, 1, 2, 3}, {0, 0, 0, 1, 1, 0}, {{3, 4}, {4, 5}});
  const LinkGraph graph(n, Ids(n, All(6)));
  ASSERT_EQ(graph.tier(3, 5), PairTier::kNone);
  LinkedSet three = ChooseLinkedSet(graph, 3);
  EXPECT_THAT(three.members, ElementsAre(0, 1, 2));
  EXPECT_EQ(three.tier, PairTier::kPcieSwitch);
  EXPECT_EQ(three.nvlinks, 0);
  LinkedSet linked = AsLinkedSet(LinkGraph(n, Ids(n, {3, 4, 5})));
  EXPECT_EQ(linked.tier, PairTier::kNone);
  EXPECT_EQ(linked.nvlinks, 8);
}

// Beyond kMaxExhaustiveSets subsets the set is grown greedily: on a board of
// two NVSwitch planes of 8 GPUs (one CPU), 8 GPUs are one plane, 9 span
// both.
TEST(ChooseLinkedSetTest, ManySubsetsAreChosenGreedily) {
  Node n = Board(16);
  for (int a = 0; a < 16; ++a) {
    for (int b = 0; b < 16; ++b) {
      if (a == b) continue;
      if (a / 8 == b / 8) {
        Link(n, a, b, LinkKind::kNvlink, 6);
      } else {
        Link(n, a, b, LinkKind::kSameNuma);
      }
    }
  }
  // GPU 0 taken: the plane with all 8 free is the one left whole.
  const LinkGraph rest(
      n, Ids(n, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}));
  LinkedSet eight = ChooseLinkedSet(rest, 8);
  EXPECT_THAT(eight.members, ElementsAre(7, 8, 9, 10, 11, 12, 13, 14));
  EXPECT_EQ(eight.tier, PairTier::kNvlink);
  EXPECT_EQ(eight.nvlinks, 28 * 6);
  // Grown from GPU 0 or from GPU 8, equal sets: the first in order.
  LinkedSet nine = ChooseLinkedSet(LinkGraph(n, Ids(n, All(16))), 9);
  EXPECT_THAT(nine.members, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8));
  EXPECT_EQ(nine.tier, PairTier::kSameNuma);
  EXPECT_EQ(nine.nvlinks, 28 * 6);
  // Nothing to weigh.
  EXPECT_TRUE(ChooseLinkedSet(LinkGraph(n, {}), 1).members.empty());
}

TEST(ChooseLinkedSetTest, OnlyTheFirstCandidatesAreWeighed) {
  Node n = Board(kMaxLinkedCandidates + 2);
  // The best pair is beyond the first kMaxLinkedCandidates.
  Link(n, kMaxLinkedCandidates, kMaxLinkedCandidates + 1, LinkKind::kNvlink, 4);
  Link(n, 0, 1, LinkKind::kSameNuma);
  const LinkGraph graph(n, Ids(n, All(kMaxLinkedCandidates + 2)));
  EXPECT_THAT(ChooseLinkedSet(graph, 2).members, ElementsAre(0, 1));
}

}  // namespace
}  // namespace accelsched
