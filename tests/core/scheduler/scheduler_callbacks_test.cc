// The callback contract of scheduler.h, in both commit modes: a write's
// callback runs once, only after its write is durable, on the calling thread
// (leader mode: the caller commits) or on the committing thread; and the
// tests' BlockingScheduler, which waits for it, returns only durable results
// either way.
#include <thread>

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

using ::testing::HasSubstr;

class SchedulerCallbacksTest
    : public testing::TestWithParam<GroupCommitter::Mode> {
 protected:
  static Scheduler::Options Opts(GroupCommitter::Mode mode) {
    Scheduler::Options o;
    o.commit_mode = mode;
    return o;
  }

  void SetUp() override {
    ASSERT_OK(s_.Load());
    ASSERT_OK(s_.RegisterNode(MakeNode("n1", {Gpu("GPU-a", "T4", 0)})));
  }

  FakeStore store_;
  FakeClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  BlockingScheduler s_{&store_, &clock_, BuiltinAcceleratorTypes(),
                       Opts(GetParam())};
};

INSTANTIATE_TEST_SUITE_P(
    Modes, SchedulerCallbacksTest,
    testing::Values(GroupCommitter::Mode::kLeader,
                    GroupCommitter::Mode::kThread),
    [](const testing::TestParamInfo<GroupCommitter::Mode>& info) {
      return info.param == GroupCommitter::Mode::kLeader ? "Leader" : "Thread";
    });

TEST_P(SchedulerCallbacksTest, BlockingFormsReturnOnlyWhatIsDurable) {
  // Slow commits: a helper that returned before the callback would be seen
  // here, before its write reached the store.
  store_.set_commit_delay(absl::Milliseconds(20));
  absl::StatusOr<Allocation> a = s_.Allocate(Want("r1", "T4"));
  ASSERT_OK(a);
  EXPECT_EQ(store_.allocations().at(a->id).allocation.state,
            AllocationState::kActive);
  absl::StatusOr<Allocation> released = s_.Release({a->id, ""});
  ASSERT_OK(released);
  EXPECT_EQ(released->state, AllocationState::kReleased);
  EXPECT_EQ(store_.allocations().at(a->id).allocation.state,
            AllocationState::kReleased);
  ASSERT_OK(s_.SetNodeSchedulable("n1", false));
  EXPECT_FALSE(store_.nodes().at("n1").schedulable);
}

TEST_P(SchedulerCallbacksTest, BlockingFormsReportAFailedCommit) {
  store_.FailWrites(absl::UnavailableError("disk gone"));
  EXPECT_THAT(s_.Allocate(Want("r1", "T4")),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("disk gone")));
  EXPECT_THAT(s_.RemoveNode("n1", /*force=*/false),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("disk gone")));
  EXPECT_TRUE(store_.allocations().empty());
  store_.FailWrites(absl::OkStatus());
  // Memory was rebuilt from the store: the node is there, its GPU free.
  EXPECT_OK(s_.GetNode("n1"));
  EXPECT_OK(s_.Allocate(Want("r2", "T4")));
}

TEST_P(SchedulerCallbacksTest, BlockingFormsReportARefusalFromTheCaller) {
  EXPECT_THAT(
      s_.Allocate(Want("", "T4")),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("request_id")));
  EXPECT_THAT(s_.RenewLease("no-such-id", absl::Hours(1)),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no-such-id")));
  EXPECT_THAT(s_.Heartbeat("no-such-node", {}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no-such-node")));
}

// Leader mode: the caller commits its own write, so the callback has run on
// its thread by the time the call returns.
TEST(SchedulerCallbackThreadTest, LeaderModeRunsTheCallbackOnTheCaller) {
  FakeStore store;
  FakeClock clock{absl::FromUnixSeconds(1'700'000'000)};
  Scheduler::Options options;
  options.commit_mode = GroupCommitter::Mode::kLeader;
  Scheduler s(&store, &clock, BuiltinAcceleratorTypes(), options);
  ASSERT_OK(s.Load());
  int runs = 0;
  std::thread::id ran_on;
  s.nodes().RegisterNode(MakeNode("n1", {Gpu("GPU-a", "T4", 0)}),
                 [&](absl::StatusOr<Node> node) {
                   EXPECT_OK(node);
                   // Durable before it is told.
                   EXPECT_EQ(store.nodes().count("n1"), 1u);
                   ran_on = std::this_thread::get_id();
                   ++runs;
                 });
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

// Thread mode: while the store holds the commit, the call has returned and
// its callback has not run; it runs once, on the committing thread, when the
// commit is done.
TEST(SchedulerCallbackThreadTest, ThreadModeRunsTheCallbackOnTheCommitter) {
  FakeStore store;
  FakeClock clock{absl::FromUnixSeconds(1'700'000'000)};
  Scheduler::Options options;
  options.commit_mode = GroupCommitter::Mode::kThread;
  Scheduler s(&store, &clock, BuiltinAcceleratorTypes(), options);
  ASSERT_OK(s.Load());
  store.HoldCommits(true);
  absl::Notification done;
  int runs = 0;
  std::thread::id ran_on;
  s.nodes().RegisterNode(MakeNode("n1", {Gpu("GPU-a", "T4", 0)}),
                 [&](absl::StatusOr<Node> node) {
                   EXPECT_OK(node);
                   EXPECT_EQ(store.nodes().count("n1"), 1u);
                   ran_on = std::this_thread::get_id();
                   ++runs;
                   done.Notify();
                 });
  EXPECT_FALSE(done.HasBeenNotified());
  EXPECT_EQ(store.nodes().count("n1"), 0u);
  store.HoldCommits(false);
  done.WaitForNotification();
  EXPECT_EQ(runs, 1);
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

}  // namespace
}  // namespace accelsched
