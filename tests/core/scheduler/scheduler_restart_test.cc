// The scheduler stopped and started again on what its store committed, on
// every store: what the catalog and allocations looked like before a restart
// is what they look like after it.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/scheduler/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/blocking_scheduler.h"
#include "tests/support/scheduler_test_util.h"
#include "tests/support/status_matchers.h"
#include "tests/support/store_factories.h"
#include "tests/support/store_scheduler_fixture.h"

namespace accelsched {
namespace {

using ::testing::HasSubstr;

template <typename Factory>
class SchedulerRestartTest : public StoreSchedulerTest<Factory> {
 protected:
  CapacityEntry T4() {
    for (const CapacityEntry& e : this->s().GetCapacity()) {
      if (e.model == "nvidia-tesla-t4" && e.partition.empty()) return e;
    }
    return CapacityEntry{
        DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", "", 0, 0, 0, 0};
  }

  std::vector<std::string> DeviceIds(const std::string& node) {
    std::vector<std::string> ids;
    absl::StatusOr<Node> n = this->s().GetNode(node);
    EXPECT_OK(n);
    if (n.ok()) {
      for (const Device& d : n->devices) ids.push_back(d.id);
    }
    return ids;
  }
};

TYPED_TEST_SUITE(SchedulerRestartTest, StoreFactories, StoreFactoryNames);

// Issue 9 as a user found it: GPU 1 drops out of the inventory while
// allocated, the server restarts, the allocation is released. The node has
// one T4, and a request for two is refused.
TYPED_TEST(SchedulerRestartTest, DroppedGpuStaysGoneAfterARestart) {
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n1", {Gpu("GPU-0", "T4", 0), Gpu("GPU-1", "T4", 1)})));
  absl::StatusOr<Allocation> both = this->s().Allocate(Want("job", "T4", 2));
  ASSERT_OK(both);
  ASSERT_OK(this->s().RegisterNode(MakeNode("n1", {Gpu("GPU-0", "T4", 0)})));
  ASSERT_NO_FATAL_FAILURE(this->Restart());

  absl::StatusOr<Node> n = this->s().GetNode("n1");
  ASSERT_OK(n);
  ASSERT_EQ(n->devices.size(), 2u);
  EXPECT_TRUE(n->devices[1].removed);
  EXPECT_FALSE(n->devices[1].healthy);
  ASSERT_OK(this->s().Release({both->id, ""}));
  ASSERT_OK(this->s().Heartbeat("n1", {}));

  EXPECT_EQ(this->DeviceIds("n1"), std::vector<std::string>{"GPU-0"});
  EXPECT_EQ(this->T4(), (CapacityEntry{DeviceClass::kNvidiaGpu,
                                       "nvidia-tesla-t4", "", 1, 0, 1, 0}));
  EXPECT_THAT(this->s().Allocate(Want("again", "T4", 2)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("2")));
  // And so it stays after one more restart.
  ASSERT_NO_FATAL_FAILURE(this->Restart());
  EXPECT_EQ(this->DeviceIds("n1"), std::vector<std::string>{"GPU-0"});
  EXPECT_EQ(this->T4().total, 1);
}

// When a GPU falls off the bus the ones after it are numbered down, so the
// kept device and a present one share an index.
TYPED_TEST(SchedulerRestartTest, GpusRenumberedAfterADropSurviveARestart) {
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n1", {Gpu("GPU-0", "T4", 0), Gpu("GPU-1", "T4", 1)})));
  absl::StatusOr<Allocation> both = this->s().Allocate(Want("job", "T4", 2));
  ASSERT_OK(both);
  ASSERT_OK(this->s().RegisterNode(MakeNode("n1", {Gpu("GPU-1", "T4", 0)})));
  ASSERT_NO_FATAL_FAILURE(this->Restart());
  EXPECT_EQ(this->DeviceIds("n1"),
            (std::vector<std::string>{"GPU-1", "GPU-0"}));
  EXPECT_EQ(this->s().GetAllocation({both->id, ""})->state,
            AllocationState::kActive);
  ASSERT_OK(this->s().Release({both->id, ""}));
  ASSERT_NO_FATAL_FAILURE(this->Restart());
  EXPECT_EQ(this->DeviceIds("n1"), std::vector<std::string>{"GPU-1"});
  EXPECT_EQ(this->T4().free, 1);
}

TYPED_TEST(SchedulerRestartTest, CordonAndHealthSurviveARestart) {
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n1", {Gpu("GPU-0", "T4", 0), Gpu("GPU-1", "T4", 1)})));
  ASSERT_OK(this->s().SetNodeSchedulable("n1", false));
  ASSERT_OK(this->s().Heartbeat("n1", {"GPU-1"}));
  const Node before = *this->s().GetNode("n1");
  ASSERT_NO_FATAL_FAILURE(this->Restart());
  EXPECT_EQ(*this->s().GetNode("n1"), before);
  EXPECT_EQ(this->T4().unhealthy, 1);
  ASSERT_OK(this->s().SetNodeSchedulable("n1", true));
  ASSERT_OK(this->s().Heartbeat("n1", {}));
  ASSERT_NO_FATAL_FAILURE(this->Restart());
  const Node after = *this->s().GetNode("n1");
  EXPECT_TRUE(after.schedulable);
  EXPECT_TRUE(after.devices[1].healthy);
  EXPECT_EQ(this->T4().free, 2);
}

// The runtimes the scheduler learns from finished allocations (three
// releases of one tenant's 2-T4 request, each after 2 h) are learned again
// from the store after a restart: packing goes on weighing 2 h for that
// tenant and shape, and the lease for another tenant.
TYPED_TEST(SchedulerRestartTest, LearnedDurationsSurviveARestart) {
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n1", {Gpu("GPU-0", "T4", 0), Gpu("GPU-1", "T4", 1),
                      Gpu("GPU-2", "T4", 2), Gpu("GPU-3", "T4", 3)})));
  auto job = [](const std::string& id, const std::string& tenant) {
    AllocationRequest r = Want(id, "T4", 2);
    r.tenant = tenant;
    r.lease = absl::Hours(3);
    return r;
  };
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<Allocation> a =
        this->s().Allocate(job(absl::StrCat("run-", i), "team"));
    ASSERT_OK(a);
    this->clock_.Advance(absl::Hours(2));
    ASSERT_OK(this->s().Heartbeat("n1", {}));
    ASSERT_OK(this->s().Release({a->id, ""}));
  }
  absl::StatusOr<ExplainResult> e = this->s().Explain(job("next", "team"));
  ASSERT_OK(e);
  EXPECT_EQ(e->expected,
            (DurationEstimate{absl::Hours(2), DurationSource::kLearned, 3}));
  ASSERT_NO_FATAL_FAILURE(this->Restart());
  e = this->s().Explain(job("next", "team"));
  ASSERT_OK(e);
  EXPECT_EQ(e->expected,
            (DurationEstimate{absl::Hours(2), DurationSource::kLearned, 3}));
  e = this->s().Explain(job("other", "another-team"));
  ASSERT_OK(e);
  EXPECT_EQ(e->expected,
            (DurationEstimate{absl::Hours(3), DurationSource::kLease, 0}));
}

// A watcher that reconnects after a restart sees numbers that go on from where
// they stopped, never the same number for another event.
TYPED_TEST(SchedulerRestartTest, EventNumbersContinueAfterARestart) {
  auto watcher = this->s().events().Subscribe();
  ASSERT_OK(this->s().RegisterNode(MakeNode("n1", {Gpu("GPU-0", "T4", 0)})));
  ASSERT_OK(this->s().Allocate(Want("job", "T4")));
  std::vector<uint64_t> seen;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<std::optional<Event>> e = watcher->Next(absl::Seconds(5));
    ASSERT_OK(e);
    ASSERT_TRUE(e->has_value());
    seen.push_back((*e)->sequence);
  }
  EXPECT_EQ(seen, (std::vector<uint64_t>{1, 2}));
  watcher.reset();
  ASSERT_NO_FATAL_FAILURE(this->Restart());
  watcher = this->s().events().Subscribe();
  ASSERT_OK(this->s().Release({"", "job"}));
  absl::StatusOr<std::optional<Event>> e = watcher->Next(absl::Seconds(5));
  ASSERT_OK(e);
  ASSERT_TRUE(e->has_value());
  EXPECT_EQ((*e)->type, Event::Type::kReleased);
  EXPECT_EQ((*e)->sequence, 3u);
}

// The models a request accepted are part of what a retry is compared with,
// and the store keeps them: a set, or none (any model).
TYPED_TEST(SchedulerRestartTest, RequestedModelsSurviveARestart) {
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n1", {Gpu("GPU-0", "T4", 0), Gpu("GPU-1", "L4", 1)})));
  AllocationRequest pair = Want("pair", "T4");
  pair.alternative_devices = {"L4"};
  absl::StatusOr<Allocation> a = this->s().Allocate(pair);
  ASSERT_OK(a);
  absl::StatusOr<Allocation> any = this->s().Allocate(Want("any", ""));
  ASSERT_OK(any);
  ASSERT_NO_FATAL_FAILURE(this->Restart());

  AllocationRequest retry = Want("pair", "NVIDIA L4");
  retry.alternative_devices = {"Tesla T4"};
  EXPECT_EQ(*this->s().Allocate(retry), *a);
  EXPECT_EQ(*this->s().Allocate(Want("any", "")), *any);
  EXPECT_THAT(
      this->s().Allocate(Want("pair", "T4")),
      StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("already holds")));
  EXPECT_THAT(
      this->s().Allocate(Want("any", any->model)),
      StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("already holds")));
}

// A PENDING request is admitted after a restart with the label value of its
// own spelling (propeller's, docs/concepts/placement.md, "Label values"): the
// store kept the spellings. Its node has no device label.
TYPED_TEST(SchedulerRestartTest, PendingRequestsSpellingSurvivesARestart) {
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n1", {Gpu("GPU-0", "NVIDIA H100 80GB HBM3", 0)})));
  absl::StatusOr<Allocation> first =
      this->s().Allocate(Want("first", "nvidia-h100"));
  ASSERT_OK(first);
  EXPECT_EQ(first->targets.at(0).device_label, "nvidia-h100");
  AllocationRequest late = Want("late", "T4");
  late.alternative_devices = {"H100 80G"};
  late.queue = true;
  absl::StatusOr<Allocation> pending = this->s().Allocate(late);
  ASSERT_OK(pending);
  ASSERT_EQ(pending->state, AllocationState::kPending);
  ASSERT_NO_FATAL_FAILURE(this->Restart());

  ASSERT_OK(this->s().Release({first->id, ""}));
  absl::StatusOr<Allocation> admitted =
      this->s().GetAllocation({pending->id, ""});
  ASSERT_OK(admitted);
  ASSERT_EQ(admitted->state, AllocationState::kActive);
  EXPECT_EQ(admitted->device_spellings,
            (std::vector<std::string>{"T4", "H100 80G"}));
  EXPECT_EQ(
      admitted->targets,
      (std::vector<PlacementTarget>{{"n1", "n1", "nvidia-h100-80gb", ""}}));
  ASSERT_NO_FATAL_FAILURE(this->Restart());
  EXPECT_EQ(*this->s().GetAllocation({pending->id, ""}), *admitted);
}

}  // namespace
}  // namespace accelsched
