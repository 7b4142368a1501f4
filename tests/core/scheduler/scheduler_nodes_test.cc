#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
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
using ::testing::IsEmpty;

Device MigGpu(std::string id, int index, std::vector<MigSlice> slices) {
  Device d = Gpu(std::move(id), "nvidia-tesla-a100", index);
  d.mig_enabled = true;
  d.mig_slices = std::move(slices);
  return d;
}

class SchedulerNodesTest : public testing::Test {
 protected:
  FakeStore store_;
  FakeClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  BlockingScheduler scheduler_{&store_, &clock_, BuiltinAcceleratorTypes(),
                               Scheduler::Options()};
};

TEST_F(SchedulerNodesTest, RegisteredNodeReadsBackNormalisedAndStored) {
  ASSERT_OK(
      scheduler_.RegisterNode(MakeNode("n1", {Gpu("GPU-a", "A100 80G", 0)})));
  absl::StatusOr<Node> n = scheduler_.GetNode("n1");
  ASSERT_OK(n);
  EXPECT_TRUE(n->schedulable);
  EXPECT_EQ(n->last_heartbeat, clock_.Now());
  ASSERT_EQ(n->devices.size(), 1u);
  EXPECT_EQ(n->devices[0].canonical_model, "nvidia-a100-80gb");
  Node stored = *n;  // the store keeps the reported model only
  stored.devices[0].canonical_model.clear();
  EXPECT_EQ(store_.nodes().at("n1"), stored);
}

TEST_F(SchedulerNodesTest, ReRegistrationKeepsCordonAndReplacesInventory) {
  ASSERT_OK(scheduler_.RegisterNode(MakeNode(
      "n1", {Gpu("GPU-a", "T4", 0), Gpu("GPU-b", "T4", 1)}, {{"pool", "x"}})));
  ASSERT_OK(scheduler_.SetNodeSchedulable("n1", false));
  clock_.Advance(absl::Seconds(30));
  ASSERT_OK(scheduler_.RegisterNode(
      MakeNode("n1", {Gpu("GPU-a", "T4", 0)}, {{"pool", "y"}})));
  absl::StatusOr<Node> n = scheduler_.GetNode("n1");
  ASSERT_OK(n);
  EXPECT_FALSE(n->schedulable);
  EXPECT_EQ(n->labels, (Labels{{"pool", "y"}}));
  EXPECT_EQ(n->last_heartbeat, clock_.Now());
  ASSERT_EQ(n->devices.size(), 1u);
  // The dropped device is free to appear on another node.
  EXPECT_OK(scheduler_.RegisterNode(MakeNode("n2", {Gpu("GPU-b", "T4", 0)})));
}

TEST_F(SchedulerNodesTest, DeviceOfAnotherNodeIsInvalidAndNothingChanges) {
  ASSERT_OK(scheduler_.RegisterNode(MakeNode(
      "n1",
      {Gpu("GPU-a", "T4", 0), MigGpu("GPU-m", 1, {{"MIG-1", "7g.40gb", 0}})})));
  EXPECT_THAT(
      scheduler_.RegisterNode(MakeNode("n2", {Gpu("GPU-a", "T4", 0)})),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("node.devices[0].id \"GPU-a\" is already registered on "
                    "node \"n1\"")));
  EXPECT_THAT(
      scheduler_.RegisterNode(MakeNode("n2", {Gpu("MIG-1", "T4", 0)})),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"n1\"")));
  EXPECT_THAT(scheduler_.GetNode("n2"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("n2")));
  EXPECT_EQ(store_.nodes().size(), 1u);
  EXPECT_EQ(scheduler_.GetNode("n1")->devices.size(), 2u);
}

TEST_F(SchedulerNodesTest, FailedStoreWriteLeavesMemoryUnchanged) {
  ASSERT_OK(scheduler_.RegisterNode(MakeNode("n1", {Gpu("GPU-a", "T4", 0)})));
  const Node before = *scheduler_.GetNode("n1");
  store_.FailWrites(absl::UnavailableError("disk gone"));
  EXPECT_THAT(scheduler_.RegisterNode(MakeNode("n1", {Gpu("GPU-z", "L4", 0)})),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("disk gone")));
  EXPECT_THAT(scheduler_.RegisterNode(MakeNode("n2", {Gpu("GPU-b", "T4", 0)})),
              StatusIs(absl::StatusCode::kUnavailable, testing::_));
  EXPECT_THAT(scheduler_.SetNodeSchedulable("n1", false),
              StatusIs(absl::StatusCode::kUnavailable, testing::_));
  EXPECT_THAT(scheduler_.Heartbeat("n1", {"GPU-a"}),
              StatusIs(absl::StatusCode::kUnavailable, testing::_));
  EXPECT_THAT(scheduler_.RemoveNode("n1", false),
              StatusIs(absl::StatusCode::kUnavailable, testing::_));
  EXPECT_EQ(*scheduler_.GetNode("n1"), before);
  EXPECT_THAT(scheduler_.GetNode("n2"),
              StatusIs(absl::StatusCode::kNotFound, testing::_));
  store_.FailWrites(absl::OkStatus());
  // GPU-z was never taken.
  EXPECT_OK(scheduler_.RegisterNode(MakeNode("n3", {Gpu("GPU-z", "L4", 0)})));
}

// The allocations a forced removal ends read as RELEASED only once that
// removal is durable; when its commit fails they are ACTIVE again, and a read
// made meanwhile is told the write failed rather than shown the release.
// Callback forms on a committer thread, so that the read is made while the
// removal's commit is still running (the store holds it).
TEST(SchedulerForcedRemovalTest, EndedAllocationsAreShownOnlyOnceDurable) {
  FakeStore store;
  FakeClock clock{absl::FromUnixSeconds(1'700'000'000)};
  Scheduler::Options options;
  options.commit_mode = GroupCommitter::Mode::kThread;
  BlockingScheduler s(&store, &clock, BuiltinAcceleratorTypes(), options);
  ASSERT_OK(s.Load());
  ASSERT_OK(s.RegisterNode(MakeNode("n1", {Gpu("GPU-a", "T4", 0)})));
  absl::StatusOr<Allocation> allocated = s.Allocate(Want("r1", "T4"));
  ASSERT_OK(allocated);
  const Allocation a = *allocated;
  // The removal's commit waits at the store until the read is made.
  store.HoldCommits(true);
  store.FailWrites(absl::UnavailableError("disk gone"));
  absl::Notification removed, read;
  absl::Status removal;
  absl::StatusOr<Allocation> seen;
  s.scheduler().nodes().RemoveNode("n1", true, [&](absl::Status st) {
    removal = st;
    removed.Notify();
  });
  s.scheduler().allocations().GetAllocation({a.id, ""}, [&](absl::StatusOr<Allocation> got) {
    seen = std::move(got);
    read.Notify();
  });
  store.HoldCommits(false);
  removed.WaitForNotification();
  read.WaitForNotification();
  EXPECT_THAT(removal,
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("disk gone")));
  EXPECT_THAT(seen, StatusIs(absl::StatusCode::kUnavailable,
                             HasSubstr("was not written")));
  store.FailWrites(absl::OkStatus());
  absl::StatusOr<Allocation> after = s.GetAllocation({a.id, ""});
  ASSERT_OK(after);
  EXPECT_EQ(after->state, AllocationState::kActive);
  EXPECT_OK(s.GetNode("n1"));
}

TEST_F(SchedulerNodesTest, ListNodesPagesInNameOrderAndFilters) {
  for (int i = 0; i < 25; ++i) {
    Labels labels = {{"pool", i % 2 == 0 ? "even" : "odd"}};
    ASSERT_OK(scheduler_.RegisterNode(
        MakeNode(absl::StrCat("node-", 100 + i),
                 {Gpu(absl::StrCat("GPU-", i), "T4", 0)}, labels)));
  }
  std::vector<std::string> names;
  std::string token;
  int pages = 0;
  do {
    absl::StatusOr<NodePage> page =
        scheduler_.ListNodes(LabelSelector(), 10, token);
    ASSERT_OK(page);
    for (const Node& n : page->nodes) names.push_back(n.name);
    token = page->next_page_token;
    ++pages;
  } while (!token.empty());
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(names.size(), 25u);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));

  absl::StatusOr<LabelSelector> odd =
      LabelSelector::Parse("pool=odd", "label_selector");
  ASSERT_OK(odd);
  absl::StatusOr<NodePage> page = scheduler_.ListNodes(*odd, 0, "");
  ASSERT_OK(page);
  EXPECT_EQ(page->nodes.size(), 12u);
  EXPECT_THAT(page->next_page_token, IsEmpty());

  EXPECT_THAT(
      scheduler_.ListNodes(LabelSelector(), -1, ""),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("page_size")));
  EXPECT_THAT(
      scheduler_.ListNodes(LabelSelector(), kMaxPageSize + 1, ""),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("page_size")));
  EXPECT_THAT(
      scheduler_.ListNodes(LabelSelector(), 10, "!!not-a-token"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("page_token")));
}

TEST_F(SchedulerNodesTest, HeartbeatSetsHealthAndTime) {
  ASSERT_OK(scheduler_.RegisterNode(
      MakeNode("n1", {Gpu("GPU-a", "T4", 0), Gpu("GPU-b", "T4", 1)})));
  clock_.Advance(absl::Minutes(1));
  ASSERT_OK(scheduler_.Heartbeat("n1", {"GPU-b"}));
  Node n = *scheduler_.GetNode("n1");
  EXPECT_EQ(n.last_heartbeat, clock_.Now());
  EXPECT_TRUE(n.devices[0].healthy);
  EXPECT_FALSE(n.devices[1].healthy);
  EXPECT_FALSE(store_.nodes().at("n1").devices[1].healthy);

  // The list is the whole unhealthy set: GPU-b recovers.
  ASSERT_OK(scheduler_.Heartbeat("n1", {}));
  EXPECT_TRUE(scheduler_.GetNode("n1")->devices[1].healthy);

  EXPECT_THAT(scheduler_.Heartbeat("n1", {"GPU-a", "GPU-x"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unhealthy_device_ids[1] \"GPU-x\"")));
  EXPECT_TRUE(scheduler_.GetNode("n1")->devices[0].healthy);
  EXPECT_THAT(scheduler_.Heartbeat("nope", {}),
              StatusIs(absl::StatusCode::kNotFound, testing::_));
}

TEST_F(SchedulerNodesTest, RemoveNodeFreesItsDeviceIds) {
  ASSERT_OK(scheduler_.RegisterNode(MakeNode("n1", {Gpu("GPU-a", "T4", 0)})));
  EXPECT_THAT(scheduler_.RemoveNode("n9", false),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("n9")));
  ASSERT_OK(scheduler_.RemoveNode("n1", false));
  EXPECT_THAT(scheduler_.GetNode("n1"),
              StatusIs(absl::StatusCode::kNotFound, testing::_));
  EXPECT_TRUE(store_.nodes().empty());
  EXPECT_OK(scheduler_.RegisterNode(MakeNode("n2", {Gpu("GPU-a", "T4", 0)})));
}

TEST_F(SchedulerNodesTest, CapacityCountsWholeGpusMigSlicesAndTpuSlices) {
  Device sick = Gpu("GPU-c", "T4", 2);
  sick.healthy = false;
  ASSERT_OK(scheduler_.RegisterNode(
      MakeNode("n1", {Gpu("GPU-a", "T4", 0), Gpu("GPU-b", "Tesla T4", 1), sick,
                      MigGpu("GPU-m", 3,
                             {{"MIG-1", "1g.5gb", 0},
                              {"MIG-2", "1g.5gb", 1},
                              {"MIG-3", "3g.20gb", 4}})})));
  // A v5p 2x2x2 slice spans two hosts of four chips; 2x2x1 "half" has one chip
  // missing.
  std::vector<Device> host_a, host_b;
  for (int i = 0; i < 4; ++i) {
    host_a.push_back(Chip(absl::StrCat("a-", i), "big", "2x2x2", i));
    host_b.push_back(Chip(absl::StrCat("b-", i), "big", "2x2x2", i));
  }
  for (int i = 0; i < 3; ++i)
    host_b.push_back(Chip(absl::StrCat("h-", i), "half", "2x2x1", 4 + i));
  ASSERT_OK(scheduler_.RegisterNode(MakeNode("tpu-a", host_a)));
  ASSERT_OK(scheduler_.RegisterNode(MakeNode("tpu-b", host_b)));

  using E = CapacityEntry;
  EXPECT_THAT(
      scheduler_.GetCapacity(),
      ElementsAre(
          E{DeviceClass::kNvidiaGpu, "nvidia-tesla-a100", "1g.5gb", 2, 0, 2, 0},
          E{DeviceClass::kNvidiaGpu, "nvidia-tesla-a100", "3g.20gb", 1, 0, 1,
            0},
          E{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", "", 3, 0, 2, 1},
          E{DeviceClass::kGoogleTpu, "tpu-v5p-slice", "2x2x1", 1, 0, 0, 1},
          E{DeviceClass::kGoogleTpu, "tpu-v5p-slice", "2x2x2", 1, 0, 1, 0}));
}

TEST_F(SchedulerNodesTest, TpuSliceAcrossNodesMustAgreeAndFit) {
  std::vector<Device> host_a;
  for (int i = 0; i < 4; ++i)
    host_a.push_back(Chip(absl::StrCat("a-", i), "s", "2x2x2", i));
  ASSERT_OK(scheduler_.RegisterNode(MakeNode("tpu-a", host_a)));
  EXPECT_THAT(scheduler_.RegisterNode(
                  MakeNode("tpu-b", {Chip("b-0", "s", "2x2x1", 0)})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("TPU slice \"s\")")));
  std::vector<Device> host_b;
  for (int i = 0; i < 4; ++i)
    host_b.push_back(Chip(absl::StrCat("b-", i), "s", "2x2x2", i));
  ASSERT_OK(scheduler_.RegisterNode(MakeNode("tpu-b", host_b)));
  // A third host would make 12 chips on 3 hosts of an 8-chip, 2-host slice.
  EXPECT_THAT(
      scheduler_.RegisterNode(
          MakeNode("tpu-c", {Chip("c-0", "s", "2x2x2", 0)})),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("3 hosts")));
  // Re-registering a host of the slice is not a conflict with itself.
  EXPECT_OK(scheduler_.RegisterNode(MakeNode("tpu-b", host_b)));
}

TEST_F(SchedulerNodesTest, LoadRebuildsEverythingFromTheStore) {
  ASSERT_OK(scheduler_.RegisterNode(
      MakeNode("n1", {Gpu("GPU-a", "T4", 0)}, {{"k", "v"}})));
  ASSERT_OK(scheduler_.SetNodeSchedulable("n1", false));
  BlockingScheduler reloaded(&store_, &clock_, BuiltinAcceleratorTypes(),
                             Scheduler::Options());
  ASSERT_OK(reloaded.Load());
  EXPECT_EQ(*reloaded.GetNode("n1"), *scheduler_.GetNode("n1"));
  EXPECT_EQ(reloaded.GetCapacity(), scheduler_.GetCapacity());
  EXPECT_THAT(
      reloaded.RegisterNode(MakeNode("n2", {Gpu("GPU-a", "T4", 0)})),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"n1\"")));
}

}  // namespace
}  // namespace accelsched
