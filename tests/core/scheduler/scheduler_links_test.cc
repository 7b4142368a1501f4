// GPU links inside a node through the scheduler (fake store and clock): a
// request of several GPUs on a node whose devices report links takes the
// best-linked set, a request of one keeps the others linked, and Explain
// says which set and why.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "config/accelerator_types_file.h"
#include "core/scheduler/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/blocking_scheduler.h"
#include "tests/support/fake_store.h"
#include "tests/support/scheduler_test_util.h"
#include "tests/support/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

Scheduler::Options Opts() {
  Scheduler::Options o;
  o.heartbeat_timeout = absl::ZeroDuration();
  return o;
}

std::string GpuId(int i) { return absl::StrCat("n1-gpu", i); }

// NVIDIA/k8s-device-plugin#546's 8-GPU board as the agent reports it:
// NVLink pairs (0,2), (1,3), (4,5), (6,7) (4 NVLinks each), GPUs 0-3 on
// CPU 0; PCIe switches (0,1), (2,3), (4,5), (6,7) (this test's assumption).
// Without `links`, the same GPUs reporting none.
Node PairBoard(bool links, const std::string& name = "n1") {
  const int switch_of[] = {0, 0, 1, 1, 2, 2, 3, 3};
  const int partner[] = {2, 3, 0, 1, 5, 4, 7, 6};
  auto id = [&](int i) { return absl::StrCat(name, "-gpu", i); };
  std::vector<Device> gpus;
  for (int a = 0; a < 8; ++a) {
    Device d = Gpu(id(a), "T4", a);
    for (int b = 0; b < 8 && links; ++b) {
      if (a == b) continue;
      if (partner[a] == b) {
        d.links.push_back({id(b), LinkKind::kNvlink, 4});
      } else if (switch_of[a] == switch_of[b]) {
        d.links.push_back({id(b), LinkKind::kPcieSwitch, 0});
      } else if (a / 4 == b / 4) {
        d.links.push_back({id(b), LinkKind::kSameNuma, 0});
      }
    }
    gpus.push_back(std::move(d));
  }
  return MakeNode(name, std::move(gpus));
}

class SchedulerLinksTest : public testing::Test {
 protected:
  SchedulerLinksTest()
      : s_(&store_, &clock_, BuiltinAcceleratorTypes(), Opts()) {}

  // The device indexes `request_id` (of `count` T4s) gets.
  std::vector<int> Take(const std::string& request_id, int count) {
    absl::StatusOr<Allocation> a = s_.Allocate(Want(request_id, "T4", count));
    EXPECT_OK(a.status());
    std::vector<int> taken;
    if (!a.ok()) return taken;
    for (const AllocatedDevice& d : a->devices) {
      for (int i = 0; i < 8; ++i) {
        if (d.device_id == GpuId(i)) taken.push_back(i);
      }
    }
    return taken;
  }

  FakeStore store_;
  FakeClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  BlockingScheduler s_;
};

// Without links, GPUs go in index order: the second pair asked for gets
// GPUs 2 and 3, which share no NVLink.
TEST_F(SchedulerLinksTest, WithoutLinksGpusGoInIndexOrder) {
  ASSERT_OK(s_.RegisterNode(PairBoard(/*links=*/false)));
  EXPECT_THAT(Take("a", 1), ElementsAre(0));
  EXPECT_THAT(Take("b", 1), ElementsAre(1));
  EXPECT_THAT(Take("c", 2), ElementsAre(2, 3));
}

// With links: a GPU whose pair stays whole elsewhere (GPU 4, whose switch is
// its pair's), then its partner, then NVLinked pairs, each the pair least
// linked to the GPUs left (ChooseLinkedSetTest has the arithmetic).
TEST_F(SchedulerLinksTest, EachRequestTakesTheBestLinkedSet) {
  ASSERT_OK(s_.RegisterNode(PairBoard(/*links=*/true)));
  EXPECT_THAT(Take("a", 1), ElementsAre(4));
  EXPECT_THAT(Take("b", 1), ElementsAre(5));
  EXPECT_THAT(Take("c", 2), ElementsAre(6, 7));
  EXPECT_THAT(Take("d", 2), ElementsAre(0, 2));
  EXPECT_THAT(Take("e", 2), ElementsAre(1, 3));
}

TEST_F(SchedulerLinksTest, ExplainSaysWhichSetAndWhy) {
  ASSERT_OK(s_.RegisterNode(PairBoard(/*links=*/true)));
  absl::StatusOr<ExplainResult> e = s_.Explain(Want("preview", "T4", 2));
  ASSERT_OK(e.status());
  ASSERT_TRUE(e->feasible);
  EXPECT_THAT(e->explanation.summary,
              HasSubstr("GPUs 4, 5 of n1 (all NVLinked, 4 NVLinks among "
                        "them): the best-linked 2 of its 8 free GPUs"));
  e = s_.Explain(Want("preview", "T4", 4));
  ASSERT_OK(e.status());
  EXPECT_THAT(e->explanation.summary,
              HasSubstr("GPUs 0, 1, 2, 3 of n1 (all on one CPU, 8 NVLinks "
                        "among them): the best-linked 4 of its 8 free GPUs"));
  ASSERT_THAT(Take("a", 4), ElementsAre(0, 1, 2, 3));
  e = s_.Explain(Want("preview", "T4", 1));
  ASSERT_OK(e.status());
  EXPECT_THAT(e->explanation.summary,
              HasSubstr("GPU 4 of n1: of its 4 free GPUs, the one that leaves "
                        "the others best linked"));
}

// Explain says nothing of links where they chose nothing: a request for
// every free GPU, or a share (placed by its GPU's free compute).
TEST_F(SchedulerLinksTest, ExplainIsSilentWhereLinksChoseNothing) {
  Node board = PairBoard(/*links=*/true);
  for (Device& d : board.devices) {
    d.sharing = GpuSharing::kTimeSlicing;
    d.memory_bytes = uint64_t{16} << 30;
  }
  ASSERT_OK(s_.RegisterNode(board));
  absl::StatusOr<ExplainResult> e = s_.Explain(Want("all", "T4", 8));
  ASSERT_OK(e.status());
  ASSERT_TRUE(e->feasible);
  EXPECT_THAT(e->explanation.summary, Not(HasSubstr("GPU")));
  AllocationRequest share = Want("share", "T4", 0);
  share.share = GpuShare{500, 0, ""};
  e = s_.Explain(share);
  ASSERT_OK(e.status());
  ASSERT_TRUE(e->feasible);
  EXPECT_THAT(e->explanation.summary, Not(HasSubstr("GPU")));
}

// More GPUs asked than ChooseLinkedSet weighs: index order, as without
// links.
TEST_F(SchedulerLinksTest, MoreThanTheCandidatesAskedGoInIndexOrder) {
  std::vector<Device> gpus;
  for (int a = 0; a < 20; ++a) {
    Device d = Gpu(absl::StrCat("big-", a), "T4", a);
    // Only the last pair is NVLinked; the rest share one CPU.
    for (int b = 0; b < 20; ++b) {
      if (a == b) continue;
      if (a >= 18 && b >= 18) {
        d.links.push_back({absl::StrCat("big-", b), LinkKind::kNvlink, 2});
      } else {
        d.links.push_back({absl::StrCat("big-", b), LinkKind::kSameNuma, 0});
      }
    }
    gpus.push_back(std::move(d));
  }
  ASSERT_OK(s_.RegisterNode(MakeNode("big", std::move(gpus))));
  absl::StatusOr<Allocation> a = s_.Allocate(Want("many", "T4", 17));
  ASSERT_OK(a.status());
  ASSERT_EQ(a->devices.size(), 17u);
  for (int i = 0; i < 17; ++i) {
    EXPECT_EQ(a->devices[i].device_id, absl::StrCat("big-", i));
  }
}

// Each group of a gang takes the best-linked set of its node.
TEST_F(SchedulerLinksTest, EachGroupOfAGangTakesItsNodesBestSet) {
  ASSERT_OK(s_.RegisterNode(PairBoard(/*links=*/true, "n1")));
  ASSERT_OK(s_.RegisterNode(PairBoard(/*links=*/true, "n2")));
  AllocationRequest gang = Want("gang", "T4", 2);
  gang.replicas = 2;
  absl::StatusOr<Allocation> a = s_.Allocate(gang);
  ASSERT_OK(a.status());
  std::vector<std::string> ids;
  for (const AllocatedDevice& d : a->devices) ids.push_back(d.device_id);
  EXPECT_THAT(ids, testing::UnorderedElementsAre("n1-gpu4", "n1-gpu5",
                                                 "n2-gpu4", "n2-gpu5"));
}

// GetNode shows the links as registered; a device kept after leaving the
// inventory (still allocated) loses its links, and the node read back
// registers again as it is.
TEST_F(SchedulerLinksTest, ARemovedDeviceKeepsNoLinks) {
  const Node board = PairBoard(/*links=*/true);
  ASSERT_OK(s_.RegisterNode(board));
  absl::StatusOr<Node> n = s_.GetNode("n1");
  ASSERT_OK(n.status());
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(n->devices[i].links, board.devices[i].links) << i;
  }
  ASSERT_THAT(Take("a", 1), ElementsAre(4));
  // GPU 4 leaves; the others stop naming it.
  Node without = board;
  without.devices.erase(without.devices.begin() + 4);
  for (Device& d : without.devices) {
    std::erase_if(d.links, [](const DeviceLink& l) {
      return l.peer_device_id == GpuId(4);
    });
  }
  ASSERT_OK(s_.RegisterNode(without));
  n = s_.GetNode("n1");
  ASSERT_OK(n.status());
  const Device* kept = nullptr;
  for (const Device& d : n->devices) {
    if (d.id == GpuId(4)) kept = &d;
  }
  ASSERT_NE(kept, nullptr);
  EXPECT_TRUE(kept->removed);
  EXPECT_TRUE(kept->links.empty());
  EXPECT_OK(s_.RegisterNode(*n));
}

}  // namespace
}  // namespace accelsched
