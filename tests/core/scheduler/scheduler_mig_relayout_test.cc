// Dynamic MIG re-layout (issue 33) through the scheduler on every store: a
// queued request for a profile no free slice offers gets a plan on an idle
// MIG GPU of a node whose agent re-lays out, waits for it (its reason names
// the GPU), and is admitted once the node reports the planned layout with
// its new slices; a plan never takes a slice that is allocated, the planned
// away slices are not handed out while it stands, it survives a restart, and
// it is dropped (the slices coming back) at its deadline, when the agent
// reports a failure, or when the GPU is re-sliced otherwise.
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "config/tenants_file.h"
#include "core/model/mig_plan.h"
#include "core/scheduler/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/blocking_scheduler.h"
#include "tests/support/fake_store.h"
#include "tests/support/scheduler_test_util.h"
#include "tests/support/status_matchers.h"
#include "tests/support/store_factories.h"
#include "tests/support/store_scheduler_fixture.h"

namespace accelsched {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::Not;

const Labels kRelayouts = {{"accelsched.io/mig-relayout", "enabled"}};

// An H100 laid out by hand as seven 1g.10gb slices, ids "<id>-s<start>".
Device SevenSmall(const std::string& id, int index) {
  Device d = Gpu(id, "nvidia-h100", index);
  d.mig_enabled = true;
  for (int s = 0; s < 7; ++s) {
    d.mig_slices.push_back({absl::StrCat(id, "-s", s), "1g.10gb", s});
  }
  return d;
}

AllocationRequest QueuedFor(std::string id, std::string profile,
                            int count = 1) {
  AllocationRequest r =
      Want(std::move(id), "nvidia-h100", count, std::move(profile));
  r.queue = true;
  return r;
}

// The device as the node now has it in the scheduler.
Device DeviceOf(BlockingScheduler& s, const std::string& node,
                const std::string& id) {
  absl::StatusOr<Node> n = s.GetNode(node);
  EXPECT_OK(n);
  if (n.ok()) {
    for (const Device& d : n->devices) {
      if (d.id == id) return d;
    }
  }
  ADD_FAILURE() << "no device " << id;
  return Device{};
}

// `d` as its agent reports it once it has applied `plan`: the kept slices
// as they were, the created ones with new ids.
Device Applied(Device d, const MigPlan& plan) {
  d.mig_plan.reset();
  d.mig_slices.clear();
  for (const MigSlice& s : plan.slices) {
    MigSlice made = s;
    if (made.id.empty()) made.id = absl::StrCat(d.id, "-new-", s.start);
    d.mig_slices.push_back(made);
  }
  return d;
}

template <typename Factory>
class SchedulerMigRelayoutTest : public StoreSchedulerTest<Factory> {
 protected:
  int64_t Free(const std::string& profile) {
    for (const CapacityEntry& e : this->s().GetCapacity()) {
      if (e.model == "nvidia-h100" && e.partition == profile) return e.free;
    }
    return 0;
  }
  std::string ReasonOf(const std::string& request_id) {
    absl::StatusOr<Allocation> a = this->s().GetAllocation({"", request_id});
    EXPECT_OK(a);
    return a.ok() ? a->pending_reason : "";
  }
  // Takes each of `total` free 1g.10gb slices, one allocation each (with
  // `lease`; 0: the default), then releases all but those whose slice id
  // `keep` accepts.
  void HoldOnly(int total, absl::FunctionRef<bool(const std::string&)> keep,
                absl::Duration lease = absl::ZeroDuration()) {
    std::vector<Allocation> held;
    for (int i = 0; i < total; ++i) {
      AllocationRequest r =
          Want(absl::StrCat("s", i), "nvidia-h100", 1, "1g.10gb");
      r.lease = lease;
      absl::StatusOr<Allocation> a = this->s().Allocate(r);
      ASSERT_OK(a);
      held.push_back(*std::move(a));
    }
    for (const Allocation& a : held) {
      if (!keep(a.devices[0].mig_slice_id)) {
        ASSERT_OK(this->s().Release({a.id, ""}));
      }
    }
  }
  // With a 4-minute --mig_relayout_timeout (under the pending lease, so
  // that the request waits on past a deadline): n7 with GPU-a, request "big"
  // waiting for a 3g.40gb, and a sweep that plans for it. Returns GPU-a as
  // planned.
  Device PlanForBig() {
    this->options_.mig_relayout_timeout = absl::Minutes(4);
    this->Restart();
    EXPECT_OK(this->s().RegisterNode(
        MakeNode("n7", {SevenSmall("GPU-a", 0)}, kRelayouts)));
    EXPECT_OK(this->s().Allocate(QueuedFor("big", "3g.40gb")));
    EXPECT_OK(this->s().Sweep());
    return DeviceOf(this->s(), "n7", "GPU-a");
  }
  // n7 with GPU-a, its slices 3 and 4 taken for five minutes (no 3g fits
  // now: one at 0 spans slices 0-3, one at 4 slices 4-6), request "big"
  // waiting for a 3g.40gb, and a sweep (which plans ahead).
  void PlanAheadForBig() {
    ASSERT_OK(this->s().RegisterNode(
        MakeNode("n7", {SevenSmall("GPU-a", 0)}, kRelayouts)));
    ASSERT_NO_FATAL_FAILURE(this->HoldOnly(
        7,
        [](const std::string& slice) {
          return slice == "GPU-a-s3" || slice == "GPU-a-s4";
        },
        absl::Minutes(5)));
    ASSERT_OK(this->s().Allocate(QueuedFor("big", "3g.40gb")));
    ASSERT_OK(this->s().Sweep());
  }
  // Time passes by `d`; n7 is heard from and the periodic pass runs.
  void SweepAfter(absl::Duration d) {
    this->clock_.Advance(d);
    ASSERT_OK(this->s().Heartbeat("n7", {}));
    ASSERT_OK(this->s().Sweep());
  }
  AllocationState StateOf(const std::string& request_id) {
    absl::StatusOr<Allocation> a = this->s().GetAllocation({"", request_id});
    EXPECT_OK(a);
    return a.ok() ? a->state : AllocationState::kUnspecified;
  }
};

TYPED_TEST_SUITE(SchedulerMigRelayoutTest, StoreFactories, StoreFactoryNames);

TYPED_TEST(SchedulerMigRelayoutTest,
           AWaitingRequestIsAdmittedOnceTheNodeReportsThePlan) {
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n7", {SevenSmall("GPU-a", 0)}, kRelayouts)));
  ASSERT_OK_AND_ASSIGN(Allocation a,
                       this->s().Allocate(QueuedFor("big", "3g.40gb")));
  EXPECT_EQ(a.state, AllocationState::kPending);
  // Only the periodic pass plans; Explain says what it would do.
  EXPECT_THAT(a.pending_reason, HasSubstr("periodic pass"));
  ASSERT_OK_AND_ASSIGN(ExplainResult before,
                       this->s().Explain(QueuedFor("big", "3g.40gb")));
  EXPECT_FALSE(before.feasible);
  EXPECT_THAT(before.explanation.summary,
              HasSubstr("a MIG re-layout would serve it at the next periodic "
                        "pass: GPU-a into 1g.10gb@0 1g.10gb@1 1g.10gb@2 "
                        "1g.10gb@3 3g.40gb@4 on n7 (destroys 3 free slices)"));
  // A request that would not wait (queue false) is never planned for.
  AllocationRequest at_once = QueuedFor("big", "3g.40gb");
  at_once.queue = false;
  ASSERT_OK_AND_ASSIGN(ExplainResult not_queued, this->s().Explain(at_once));
  EXPECT_THAT(not_queued.explanation.summary, Not(HasSubstr("re-layout")));
  ASSERT_OK(this->s().Sweep());
  ASSERT_OK_AND_ASSIGN(ExplainResult during,
                       this->s().Explain(QueuedFor("big", "3g.40gb")));
  EXPECT_EQ(during.pending_reason,
            "waiting for the MIG re-layout of GPU-a on n7");
  // It starts as soon as its agent reports the new layout.
  EXPECT_EQ(during.estimated_start, this->clock_.Now());
  EXPECT_THAT(during.explanation.summary, Not(HasSubstr("would serve it")));
  EXPECT_EQ(this->ReasonOf("big"),
            "waiting for the MIG re-layout of GPU-a on n7");
  const Device planned = DeviceOf(this->s(), "n7", "GPU-a");
  ASSERT_TRUE(planned.mig_plan.has_value());
  EXPECT_EQ(DescribeMigLayout(planned.mig_plan->slices),
            "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 3g.40gb@4");
  EXPECT_EQ(planned.mig_plan->generation, 1u);
  EXPECT_EQ(planned.mig_plan->allocation_id, a.id);
  EXPECT_EQ(planned.mig_plan->deadline,
            this->clock_.Now() + this->options_.mig_relayout_timeout);
  // The three slices planned away are not handed out meanwhile; the four
  // kept are.
  EXPECT_EQ(this->Free("1g.10gb"), 4);
  ASSERT_OK(this->s().Allocate(Want("small", "nvidia-h100", 4, "1g.10gb")));
  EXPECT_THAT(
      this->s().Allocate(Want("one-more", "nvidia-h100", 1, "1g.10gb")),
      StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("1g.10gb")));

  // The agent applies it: its registration shows the new slice.
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n7", {Applied(planned, *planned.mig_plan)}, kRelayouts)));
  ASSERT_OK_AND_ASSIGN(Allocation admitted,
                       this->s().GetAllocation({"", "big"}));
  EXPECT_EQ(admitted.state, AllocationState::kActive);
  ASSERT_EQ(admitted.devices.size(), 1u);
  EXPECT_EQ(admitted.devices[0].mig_slice_id, "GPU-a-new-4");
  EXPECT_EQ(admitted.devices[0].profile, "3g.40gb");
  const Device done = DeviceOf(this->s(), "n7", "GPU-a");
  EXPECT_FALSE(done.mig_plan.has_value());
  EXPECT_EQ(done.mig_generation, 1u);  // kept for the next plan
}

TYPED_TEST(SchedulerMigRelayoutTest,
           OnlyNodesWhoseAgentReLaysOutArePlannedFor) {
  ASSERT_OK(this->s().RegisterNode(MakeNode("n1", {SevenSmall("GPU-a", 0)})));
  // No node has a 3g, nor an agent that would make one: it could never fit.
  EXPECT_THAT(
      this->s().Allocate(QueuedFor("big", "3g.40gb")),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("3g.40gb")));
  ASSERT_OK(this->s().Sweep());
  EXPECT_FALSE(DeviceOf(this->s(), "n1", "GPU-a").mig_plan.has_value());
  // Two GPUs of a node that re-lays out hold two 3g each at most.
  ASSERT_OK(this->s().RegisterNode(MakeNode(
      "n7", {SevenSmall("GPU-b", 0), SevenSmall("GPU-c", 1)}, kRelayouts)));
  EXPECT_THAT(
      this->s().Allocate(QueuedFor("five", "3g.40gb", 5)),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("3g.40gb")));
  // Nor a node the request could never be on, whatever its layout.
  AllocationRequest elsewhere = QueuedFor("elsewhere", "3g.40gb");
  elsewhere.node_selector = {{"zone", "nowhere"}};
  EXPECT_THAT(
      this->s().Allocate(elsewhere),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("3g.40gb")));
  ASSERT_OK(this->s().Allocate(QueuedFor("four", "3g.40gb", 4)));
  ASSERT_OK(this->s().Sweep());
  EXPECT_TRUE(DeviceOf(this->s(), "n7", "GPU-b").mig_plan.has_value());
  EXPECT_TRUE(DeviceOf(this->s(), "n7", "GPU-c").mig_plan.has_value());
  EXPECT_EQ(this->ReasonOf("four"),
            "waiting for the MIG re-layout of GPU-b, GPU-c on n7");
}

TYPED_TEST(SchedulerMigRelayoutTest, AnAllocatedSliceIsNeverPlannedAway) {
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n7", {SevenSmall("GPU-a", 0)}, kRelayouts)));
  // Slices 1 and 6 taken: neither 3g start (0 or 4) is free of them.
  ASSERT_NO_FATAL_FAILURE(this->HoldOnly(7, [](const std::string& slice) {
    return slice == "GPU-a-s1" || slice == "GPU-a-s6";
  }));
  ASSERT_OK(this->s().Allocate(QueuedFor("big", "3g.40gb")));
  ASSERT_OK(this->s().Sweep());
  EXPECT_FALSE(DeviceOf(this->s(), "n7", "GPU-a").mig_plan.has_value());
  EXPECT_EQ(this->Free("1g.10gb"), 5);
}

TYPED_TEST(SchedulerMigRelayoutTest,
           APlanSurvivesARestartAndIsDroppedAtItsDeadline) {
  const Device planned = this->PlanForBig();
  ASSERT_TRUE(planned.mig_plan.has_value());

  this->Restart();
  const Device reloaded = DeviceOf(this->s(), "n7", "GPU-a");
  EXPECT_EQ(reloaded.mig_plan, planned.mig_plan);
  EXPECT_EQ(this->Free("1g.10gb"), 4);  // still not handed out
  ASSERT_OK(this->s().Sweep());
  EXPECT_EQ(this->ReasonOf("big"),
            "waiting for the MIG re-layout of GPU-a on n7");

  // The node and the request stay alive past the deadline.
  auto keep_alive = [&] {
    ASSERT_OK(this->s().Heartbeat("n7", {}, {}));
    ASSERT_OK(this->s().RenewLease(this->s().GetAllocation({"", "big"})->id,
                                   absl::ZeroDuration()));
  };
  this->clock_.Advance(absl::Minutes(4));
  ASSERT_NO_FATAL_FAILURE(keep_alive());
  ASSERT_OK(this->s().Sweep());
  EXPECT_FALSE(DeviceOf(this->s(), "n7", "GPU-a").mig_plan.has_value());
  // Its agent may have been under way at the deadline: the slices it
  // planned away stay out of service until the node registers what it has.
  EXPECT_EQ(this->Free("1g.10gb"), 4);
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n7", {SevenSmall("GPU-a", 0)}, kRelayouts)));
  EXPECT_EQ(this->Free("1g.10gb"), 7);  // the slices are back
  // The GPU waits out its back-off before it is planned for again.
  EXPECT_THAT(this->ReasonOf("big"), HasSubstr("no node has 1 free"));
  this->clock_.Advance(absl::Minutes(4) + absl::Seconds(1));
  ASSERT_NO_FATAL_FAILURE(keep_alive());
  ASSERT_OK(this->s().Sweep());
  const Device again = DeviceOf(this->s(), "n7", "GPU-a");
  ASSERT_TRUE(again.mig_plan.has_value());
  EXPECT_GT(again.mig_plan->generation, planned.mig_plan->generation);
}

TYPED_TEST(SchedulerMigRelayoutTest,
           SlicesHeldAfterADeadlineComeBackAfterOneMoreTimeout) {
  ASSERT_TRUE(this->PlanForBig().mig_plan.has_value());
  ASSERT_NO_FATAL_FAILURE(this->SweepAfter(absl::Minutes(4)));
  EXPECT_FALSE(DeviceOf(this->s(), "n7", "GPU-a").mig_plan.has_value());
  EXPECT_EQ(this->Free("1g.10gb"), 4);
  ASSERT_OK(this->s().Release({"", "big"}));
  // No registration came: one more timeout, and the slices serve again.
  ASSERT_NO_FATAL_FAILURE(
      this->SweepAfter(absl::Minutes(4) - absl::Seconds(1)));
  EXPECT_EQ(this->Free("1g.10gb"), 4);
  ASSERT_NO_FATAL_FAILURE(this->SweepAfter(absl::Seconds(1)));
  EXPECT_EQ(this->Free("1g.10gb"), 7);
}

// The hold after a deadline is the catalog's own, not a view of the node:
// it outlives a change of the node's devices that is not a registration.
TYPED_TEST(SchedulerMigRelayoutTest,
           SlicesHeldAfterADeadlineStayHeldWhenAKeptGpuIsDropped) {
  this->options_.mig_relayout_timeout = absl::Minutes(4);
  this->Restart();
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n7", {SevenSmall("GPU-a", 0), Gpu("GPU-w", "nvidia-h100", 1)},
               kRelayouts)));
  ASSERT_OK_AND_ASSIGN(Allocation whole,
                       this->s().Allocate(Want("whole", "nvidia-h100")));
  ASSERT_EQ(whole.devices[0].device_id, "GPU-w");
  ASSERT_OK(this->s().Allocate(QueuedFor("big", "3g.40gb")));
  ASSERT_OK(this->s().Sweep());
  // The node stops reporting GPU-w while "whole" holds it: kept, removed.
  // GPU-a's layout is as it was: its plan stands.
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n7", {SevenSmall("GPU-a", 0)}, kRelayouts)));
  ASSERT_TRUE(DeviceOf(this->s(), "n7", "GPU-w").removed);
  ASSERT_TRUE(DeviceOf(this->s(), "n7", "GPU-a").mig_plan.has_value());
  ASSERT_NO_FATAL_FAILURE(this->SweepAfter(absl::Minutes(4)));
  ASSERT_FALSE(DeviceOf(this->s(), "n7", "GPU-a").mig_plan.has_value());
  EXPECT_EQ(this->Free("1g.10gb"), 4);
  ASSERT_OK(this->s().Release({"", "big"}));  // planned for no more
  // Its release drops the kept GPU from the node: GPU-a's agent may still
  // be under way all the same.
  ASSERT_OK(this->s().Release({whole.id, ""}));
  ASSERT_OK_AND_ASSIGN(Node n7, this->s().GetNode("n7"));
  ASSERT_EQ(n7.devices.size(), 1u);
  EXPECT_EQ(this->Free("1g.10gb"), 4);
  ASSERT_NO_FATAL_FAILURE(this->SweepAfter(absl::Minutes(4)));
  EXPECT_EQ(this->Free("1g.10gb"), 7);
}

// The agent's failure report for a plan already dropped at its deadline
// says it is not under way: the slices held for it come back at once.
TYPED_TEST(SchedulerMigRelayoutTest,
           AFailureReportedAfterTheDeadlineGivesTheHeldSlicesBack) {
  // A first plan fails at once; the GPU is planned for again after its
  // back-off.
  const Device first = this->PlanForBig();
  ASSERT_TRUE(first.mig_plan.has_value());
  Scheduler::HeartbeatReport older;
  older.relayout_failures = {
      {"GPU-a", first.mig_plan->generation, "NVML_ERROR_IN_USE"}};
  ASSERT_OK(this->s().HeartbeatPlans("n7", older));
  ASSERT_NO_FATAL_FAILURE(
      this->SweepAfter(absl::Minutes(4) + absl::Seconds(1)));
  const Device planned = DeviceOf(this->s(), "n7", "GPU-a");
  ASSERT_TRUE(planned.mig_plan.has_value());
  const uint64_t generation = planned.mig_plan->generation;
  ASSERT_GT(generation, first.mig_plan->generation);
  ASSERT_NO_FATAL_FAILURE(this->SweepAfter(absl::Minutes(4)));
  ASSERT_FALSE(DeviceOf(this->s(), "n7", "GPU-a").mig_plan.has_value());
  EXPECT_EQ(this->Free("1g.10gb"), 4);
  // The first plan's report, late, is not about this one.
  ASSERT_OK(this->s().HeartbeatPlans("n7", older));
  EXPECT_EQ(this->Free("1g.10gb"), 4);
  Scheduler::HeartbeatReport failed;
  failed.relayout_failures = {
      {"GPU-a", generation, "the deadline is 3s away, under the margin"}};
  ASSERT_OK(this->s().HeartbeatPlans("n7", failed));
  EXPECT_EQ(this->Free("1g.10gb"), 7);
}

TYPED_TEST(SchedulerMigRelayoutTest,
           AnAgentsFailureDropsThePlanOfThatGenerationOnly) {
  ASSERT_OK(this->s().RegisterNode(MakeNode(
      "n7", {SevenSmall("GPU-a", 0), SevenSmall("GPU-b", 1)}, kRelayouts)));
  ASSERT_OK(this->s().Allocate(QueuedFor("big", "3g.40gb")));
  ASSERT_OK(this->s().Sweep());
  const Device planned = DeviceOf(this->s(), "n7", "GPU-a");
  ASSERT_TRUE(planned.mig_plan.has_value());
  const uint64_t generation = planned.mig_plan->generation;
  // The heartbeat's reply carries the plan.
  ASSERT_OK_AND_ASSIGN(
      Scheduler::MigPlans plans,
      this->s().HeartbeatPlans("n7", Scheduler::HeartbeatReport{}));
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans.at("GPU-a"), *planned.mig_plan);
  // A stale report (another generation) changes nothing.
  Scheduler::HeartbeatReport stale;
  stale.relayout_failures = {{"GPU-a", generation + 1, "NVML_ERROR_IN_USE"}};
  ASSERT_OK_AND_ASSIGN(plans, this->s().HeartbeatPlans("n7", stale));
  EXPECT_EQ(plans.size(), 1u);
  ASSERT_TRUE(DeviceOf(this->s(), "n7", "GPU-a").mig_plan.has_value());
  Scheduler::HeartbeatReport failed;
  failed.relayout_failures = {
      {"GPU-a", generation, "a compute process runs on MIG-x"}};
  ASSERT_OK_AND_ASSIGN(plans, this->s().HeartbeatPlans("n7", failed));
  EXPECT_TRUE(plans.empty());  // the reply is after the drop
  EXPECT_FALSE(DeviceOf(this->s(), "n7", "GPU-a").mig_plan.has_value());
  EXPECT_EQ(this->Free("1g.10gb"), 14);
  // The next periodic pass plans the other GPU.
  ASSERT_OK(this->s().Sweep());
  EXPECT_FALSE(DeviceOf(this->s(), "n7", "GPU-a").mig_plan.has_value());
  EXPECT_TRUE(DeviceOf(this->s(), "n7", "GPU-b").mig_plan.has_value());
  EXPECT_EQ(this->ReasonOf("big"),
            "waiting for the MIG re-layout of GPU-b on n7");
  EXPECT_THAT(this->s().HeartbeatPlans("nope", failed),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("nope")));
}

TYPED_TEST(SchedulerMigRelayoutTest,
           GenerationsAreNeverReusedAfterAGpuLeavesAndReturns) {
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n7", {SevenSmall("GPU-a", 0)}, kRelayouts)));
  ASSERT_OK(this->s().Allocate(QueuedFor("big", "3g.40gb")));
  ASSERT_OK(this->s().Sweep());
  const Device first = DeviceOf(this->s(), "n7", "GPU-a");
  ASSERT_TRUE(first.mig_plan.has_value());
  // The GPU leaves the node (its plan ends) and comes back as it was; the
  // server restarts meanwhile, forgetting all it held in memory.
  ASSERT_OK(this->s().RegisterNode(MakeNode("n7", {}, kRelayouts)));
  this->Restart();
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n7", {SevenSmall("GPU-a", 0)}, kRelayouts)));
  ASSERT_OK(this->s().Sweep());  // the restart forgot the back-off
  const Device second = DeviceOf(this->s(), "n7", "GPU-a");
  ASSERT_TRUE(second.mig_plan.has_value());
  // Same GPU, same layout, same request: only the generation tells the
  // agent that this is a new plan.
  EXPECT_GT(second.mig_plan->generation, first.mig_plan->generation);
}

TYPED_TEST(SchedulerMigRelayoutTest, AGpuKeptWhileHeldLosesItsPlan) {
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n7", {SevenSmall("GPU-a", 0)}, kRelayouts)));
  // Three 1g slices taken: a 3g still fits beside them.
  ASSERT_OK_AND_ASSIGN(
      Allocation small,
      this->s().Allocate(Want("small", "nvidia-h100", 3, "1g.10gb")));
  ASSERT_OK(this->s().Allocate(QueuedFor("big", "3g.40gb")));
  ASSERT_OK(this->s().Sweep());
  ASSERT_TRUE(DeviceOf(this->s(), "n7", "GPU-a").mig_plan.has_value());
  // The node re-registers without the GPU: kept while "small" holds it,
  // and planned for no more.
  ASSERT_OK(this->s().RegisterNode(MakeNode("n7", {}, kRelayouts)));
  const Device kept = DeviceOf(this->s(), "n7", "GPU-a");
  EXPECT_TRUE(kept.removed);
  EXPECT_FALSE(kept.mig_plan.has_value());
  ASSERT_OK_AND_ASSIGN(
      Scheduler::MigPlans plans,
      this->s().HeartbeatPlans("n7", Scheduler::HeartbeatReport{}));
  EXPECT_TRUE(plans.empty());
  EXPECT_THAT(this->ReasonOf("big"), Not(HasSubstr("waiting for the MIG")));
  ASSERT_OK(this->s().Release({small.id, ""}));
}

TYPED_TEST(SchedulerMigRelayoutTest, TheSlicesMadeForARequestGoToIt) {
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n7", {SevenSmall("GPU-a", 0)}, kRelayouts)));
  ASSERT_OK_AND_ASSIGN(Allocation big,
                       this->s().Allocate(QueuedFor("big", "3g.40gb")));
  ASSERT_OK(this->s().Sweep());
  const Device planned = DeviceOf(this->s(), "n7", "GPU-a");
  ASSERT_TRUE(planned.mig_plan.has_value());
  // A request of higher priority for the same comes meanwhile: it is ahead
  // of "big" in the order, and no GPU is left to plan for it.
  AllocationRequest rival = QueuedFor("rival", "3g.40gb");
  rival.priority = 10;
  ASSERT_OK(this->s().Allocate(rival));
  // The plan's request keeps its reason, though one ahead of it of its
  // shape found nothing.
  EXPECT_EQ(this->ReasonOf("big"),
            "waiting for the MIG re-layout of GPU-a on n7");
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n7", {Applied(planned, *planned.mig_plan)}, kRelayouts)));
  EXPECT_EQ(this->StateOf("big"), AllocationState::kActive);
  EXPECT_EQ(this->StateOf("rival"), AllocationState::kPending);
}

TYPED_TEST(SchedulerMigRelayoutTest, APlanKeepsTheIdsOfItsOwnGpusSlices) {
  // Three GPUs alike, each with its slice at start 3 taken: a 3g fits at 4
  // only, one a GPU. n1 cannot hold two; n2 can, on two GPUs in the state
  // n1's GPU was in (one search serves all three).
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n1", {SevenSmall("GPU-a", 0)}, kRelayouts)));
  ASSERT_OK(this->s().RegisterNode(MakeNode(
      "n2", {SevenSmall("GPU-b", 0), SevenSmall("GPU-c", 1)}, kRelayouts)));
  ASSERT_NO_FATAL_FAILURE(this->HoldOnly(21, [](const std::string& slice) {
    return absl::EndsWith(slice, "-s3");
  }));
  ASSERT_OK(this->s().Allocate(QueuedFor("two", "3g.40gb", 2)));
  ASSERT_OK(this->s().Sweep());
  EXPECT_EQ(this->ReasonOf("two"),
            "waiting for the MIG re-layout of GPU-b, GPU-c on n2");
  for (const std::string gpu : {"GPU-b", "GPU-c"}) {
    const Device d = DeviceOf(this->s(), "n2", gpu);
    ASSERT_TRUE(d.mig_plan.has_value()) << gpu;
    EXPECT_EQ(DescribeMigLayout(d.mig_plan->slices),
              "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 3g.40gb@4");
    for (const MigSlice& s : d.mig_plan->slices) {
      if (!s.id.empty()) {
        EXPECT_EQ(s.id, absl::StrCat(gpu, "-s", s.start));
      }
    }
  }
}

TYPED_TEST(SchedulerMigRelayoutTest, ALayoutThePlanDoesNotLeadToDropsIt) {
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n7", {SevenSmall("GPU-a", 0)}, kRelayouts)));
  ASSERT_OK(this->s().Allocate(QueuedFor("big", "3g.40gb")));
  ASSERT_OK(this->s().Sweep());
  // Part way: slices 4-6 gone, the 3g not yet made: still planned.
  Device part = SevenSmall("GPU-a", 0);
  part.mig_slices.resize(4);
  ASSERT_OK(this->s().RegisterNode(MakeNode("n7", {part}, kRelayouts)));
  EXPECT_TRUE(DeviceOf(this->s(), "n7", "GPU-a").mig_plan.has_value());
  // Someone re-sliced it by hand into a 2g at 4.
  part.mig_slices.push_back({"GPU-a-2g", "2g.20gb", 4});
  ASSERT_OK(this->s().RegisterNode(MakeNode("n7", {part}, kRelayouts)));
  EXPECT_FALSE(DeviceOf(this->s(), "n7", "GPU-a").mig_plan.has_value());
  EXPECT_EQ(this->Free("2g.20gb"), 1);
}

TYPED_TEST(SchedulerMigRelayoutTest, SeveralRequestsGetPlansOnSeveralGpus) {
  ASSERT_OK(this->s().RegisterNode(MakeNode(
      "n7", {SevenSmall("GPU-a", 0), SevenSmall("GPU-b", 1)}, kRelayouts)));
  ASSERT_OK(this->s().Allocate(QueuedFor("big-1", "3g.40gb")));
  ASSERT_OK(this->s().Allocate(QueuedFor("big-2", "3g.40gb")));
  ASSERT_OK(this->s().Sweep());
  EXPECT_TRUE(DeviceOf(this->s(), "n7", "GPU-a").mig_plan.has_value());
  EXPECT_TRUE(DeviceOf(this->s(), "n7", "GPU-b").mig_plan.has_value());
  EXPECT_EQ(this->ReasonOf("big-1"),
            "waiting for the MIG re-layout of GPU-a on n7");
  EXPECT_EQ(this->ReasonOf("big-2"),
            "waiting for the MIG re-layout of GPU-b on n7");
  EXPECT_EQ(this->StateOf("big-1"), AllocationState::kPending);
}

TYPED_TEST(SchedulerMigRelayoutTest,
           AGpuWhoseSlicesFreeSoonIsHeldThenReLaidOutOnceTheyDo) {
  const absl::Time frees = this->clock_.Now() + absl::Minutes(5);
  ASSERT_NO_FATAL_FAILURE(this->PlanAheadForBig());
  // Nothing to apply yet: the GPU's slices are held for it from when the
  // allocations end.
  EXPECT_FALSE(DeviceOf(this->s(), "n7", "GPU-a").mig_plan.has_value());
  EXPECT_THAT(
      this->ReasonOf("big"),
      HasSubstr(absl::StrCat("; holds n7 from ", absl::FormatTime(frees),
                             " for a MIG re-layout of GPU-a once the "
                             "allocations on its slices end")));
  // Meanwhile a request that would still run then does not get the free
  // slices; one that ends by then does (backfill).
  AllocationRequest late = Want("late", "nvidia-h100", 1, "1g.10gb");
  late.lease = absl::Hours(1);
  EXPECT_THAT(this->s().Allocate(late),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("held for waiting requests")));
  AllocationRequest brief = Want("brief", "nvidia-h100", 1, "1g.10gb");
  brief.lease = absl::Minutes(1);
  ASSERT_OK(this->s().Allocate(brief));
  // The hold outlives the passes between periodic ones.
  ASSERT_OK(this->s().Release({"", "brief"}));
  EXPECT_THAT(this->s().Allocate(late),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("held for waiting requests")));

  // The leases end: the next periodic pass plans the re-layout.
  ASSERT_NO_FATAL_FAILURE(this->SweepAfter(absl::Minutes(5)));
  const Device planned = DeviceOf(this->s(), "n7", "GPU-a");
  ASSERT_TRUE(planned.mig_plan.has_value());
  EXPECT_EQ(DescribeMigLayout(planned.mig_plan->slices),
            "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 3g.40gb@4");
  EXPECT_EQ(this->ReasonOf("big"),
            "waiting for the MIG re-layout of GPU-a on n7");
}

// Between periodic passes the hold planned ahead stands as made, whatever
// order the passes visit requests in: a request of another tenant (ahead of
// "big" in the order, its tenant holding nothing) that would still run at
// the hold's start waits, and "big" keeps its hold and its reason.
TYPED_TEST(SchedulerMigRelayoutTest,
           AHoldPlannedAheadStandsInThePassesBetweenPeriodicOnes) {
  ASSERT_NO_FATAL_FAILURE(this->PlanAheadForBig());
  const std::string held = this->ReasonOf("big");
  ASSERT_THAT(held, HasSubstr("; holds n7 from "));
  AllocationRequest other = QueuedFor("other", "1g.10gb");
  other.tenant = "t2";
  other.lease = absl::Hours(1);
  ASSERT_OK_AND_ASSIGN(Allocation waiting, this->s().Allocate(other));
  EXPECT_EQ(waiting.state, AllocationState::kPending);
  EXPECT_THAT(waiting.pending_reason, HasSubstr("1g.10gb"));
  EXPECT_EQ(this->Free("1g.10gb"), 5);
  EXPECT_THAT(this->ReasonOf("big"), HasSubstr("; holds n7 from "));
  EXPECT_THAT(this->ReasonOf("big"),
              HasSubstr("for a MIG re-layout of GPU-a once the allocations "
                        "on its slices end"));
  // As a nominated hold, it stands against its own priority or lower only:
  // a request of higher priority takes a held slice.
  AllocationRequest urgent = Want("urgent", "nvidia-h100", 1, "1g.10gb");
  urgent.lease = absl::Hours(1);
  urgent.priority = 5;
  ASSERT_OK(this->s().Allocate(urgent));
  EXPECT_EQ(this->Free("1g.10gb"), 4);
}

// A hold kept from the last periodic pass for a re-layout that no GPU can
// give any more (the node stopped re-laying out) is let go at the next pass,
// not kept until the next periodic one.
TYPED_TEST(SchedulerMigRelayoutTest,
           AHoldPlannedAheadIsLetGoWhenNoGpuCanServe) {
  ASSERT_NO_FATAL_FAILURE(this->PlanAheadForBig());
  ASSERT_THAT(this->ReasonOf("big"), HasSubstr("; holds n7 from "));
  ASSERT_OK(this->s().RegisterNode(MakeNode("n7", {SevenSmall("GPU-a", 0)})));
  AllocationRequest other = Want("other", "nvidia-h100", 1, "1g.10gb");
  other.tenant = "t2";
  other.lease = absl::Hours(1);
  ASSERT_OK_AND_ASSIGN(Allocation a, this->s().Allocate(other));
  EXPECT_EQ(a.state, AllocationState::kActive);
  EXPECT_THAT(this->ReasonOf("big"), Not(HasSubstr("; holds n7 from ")));
}

// A hold planned ahead never takes over another request's hold, not even a
// nominated one of lower priority: the preemptor keeps the slice it
// preempted for.
TYPED_TEST(SchedulerMigRelayoutTest, APlanAheadLeavesAPreemptorsHoldAlone) {
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n7", {SevenSmall("GPU-a", 0)}, kRelayouts)));
  ASSERT_NO_FATAL_FAILURE(this->HoldOnly(
      7, [](const std::string&) { return true; }, absl::Minutes(5)));
  AllocationRequest preemptor = QueuedFor("preemptor", "1g.10gb");
  preemptor.priority = 5;
  ASSERT_OK(this->s().Allocate(preemptor));
  // The periodic pass finds no re-layout for it, and it preempts.
  ASSERT_OK(this->s().Sweep());
  ASSERT_THAT(this->ReasonOf("preemptor"), HasSubstr("preempted 1 allocation"));
  AllocationRequest big = QueuedFor("big", "3g.40gb");
  big.priority = 10;
  ASSERT_OK(this->s().Allocate(big));
  ASSERT_OK(this->s().Sweep());
  EXPECT_THAT(this->ReasonOf("big"), Not(HasSubstr("re-layout")));
  // The victim's grace ends: its slice goes to the preemptor.
  ASSERT_NO_FATAL_FAILURE(
      this->SweepAfter(this->options_.preemption_grace + absl::Seconds(1)));
  EXPECT_EQ(this->StateOf("preemptor"), AllocationState::kActive);
}

// Where a slice of the profile exists, the one that frees first is reserved
// as for any request: no GPU is re-sliced ahead for what a release gives.
TYPED_TEST(SchedulerMigRelayoutTest,
           NothingIsPlannedAheadWhereASliceOfTheProfileExists) {
  Device b = Gpu("GPU-b", "nvidia-h100", 0);
  b.mig_enabled = true;
  b.mig_slices.push_back({"GPU-b-3g", "3g.40gb", 4});
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n7", {SevenSmall("GPU-a", 0)}, kRelayouts)));
  ASSERT_OK(this->s().RegisterNode(MakeNode("n8", {b})));
  ASSERT_NO_FATAL_FAILURE(this->HoldOnly(
      7,
      [](const std::string& slice) {
        return slice == "GPU-a-s3" || slice == "GPU-a-s4";
      },
      absl::Minutes(5)));
  AllocationRequest taken = Want("taken", "nvidia-h100", 1, "3g.40gb");
  taken.lease = absl::Minutes(8);
  ASSERT_OK(this->s().Allocate(taken));
  const absl::Time frees = this->clock_.Now() + absl::Minutes(8);
  ASSERT_OK(this->s().Allocate(QueuedFor("big", "3g.40gb")));
  ASSERT_OK(this->s().Sweep());
  EXPECT_FALSE(DeviceOf(this->s(), "n7", "GPU-a").mig_plan.has_value());
  EXPECT_THAT(
      this->ReasonOf("big"),
      HasSubstr(absl::StrCat("; holds n8 from ", absl::FormatTime(frees))));
  EXPECT_THAT(this->ReasonOf("big"), Not(HasSubstr("re-layout")));
  EXPECT_EQ(this->Free("1g.10gb"), 5);
}

TYPED_TEST(SchedulerMigRelayoutTest, PlansAndDropsAreEventsOfTheirNode) {
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n7", {SevenSmall("GPU-a", 0)}, kRelayouts)));
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n8", {SevenSmall("GPU-z", 0)})));  // does not re-lay out
  auto on_n7 = this->s().scheduler().events().Subscribe({"", "", "n7"});
  auto on_n8 = this->s().scheduler().events().Subscribe({"", "", "n8"});
  auto drain = [](const std::shared_ptr<EventHub::Watcher>& w) {
    std::vector<Event> events;
    for (;;) {
      absl::StatusOr<std::shared_ptr<const Event>> e = w->TryNext();
      if (!e.ok() || *e == nullptr) break;
      events.push_back(**e);
    }
    return events;
  };
  ASSERT_OK_AND_ASSIGN(Allocation big,
                       this->s().Allocate(QueuedFor("big", "3g.40gb")));
  ASSERT_OK(this->s().Sweep());
  const Device planned = DeviceOf(this->s(), "n7", "GPU-a");
  ASSERT_TRUE(planned.mig_plan.has_value());
  std::vector<Event> seen = drain(on_n7);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].type, Event::Type::kMigRelayoutPlanned);
  EXPECT_EQ(seen[0].node, "n7");
  EXPECT_EQ(seen[0].allocation.id, big.id);
  EXPECT_EQ(seen[0].reason,
            absl::StrCat("GPU-a: 1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 "
                         "3g.40gb@4 (generation ",
                         planned.mig_plan->generation,
                         "; destroys 3 free slices, creates 1)"));
  Scheduler::HeartbeatReport failed;
  failed.relayout_failures = {
      {"GPU-a", planned.mig_plan->generation, "NVML_ERROR_IN_USE"}};
  ASSERT_OK(this->s().HeartbeatPlans("n7", failed));
  seen = drain(on_n7);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].type, Event::Type::kMigRelayoutDropped);
  EXPECT_THAT(seen[0].reason,
              HasSubstr("could not apply it: NVML_ERROR_IN_USE"));
  EXPECT_TRUE(drain(on_n8).empty());
}

TYPED_TEST(SchedulerMigRelayoutTest,
           ARequestARelayoutMayServeWaitsForItRatherThanPreempt) {
  // GPU-a's seven 1g slices are held at low priority; GPU-b has three free
  // 2g slices, one of which a re-layout turns into 1g slices.
  Device b = Gpu("GPU-b", "nvidia-h100", 1);
  b.mig_enabled = true;
  for (int start : {0, 2, 4}) {
    b.mig_slices.push_back({absl::StrCat("GPU-b-", start), "2g.20gb", start});
  }
  ASSERT_OK(this->s().RegisterNode(
      MakeNode("n7", {SevenSmall("GPU-a", 0), b}, kRelayouts)));
  ASSERT_OK(this->s().Allocate(Want("low", "nvidia-h100", 7, "1g.10gb")));
  AllocationRequest urgent = QueuedFor("urgent", "1g.10gb");
  urgent.priority = 10;
  ASSERT_OK_AND_ASSIGN(Allocation a, this->s().Allocate(urgent));
  EXPECT_EQ(a.state, AllocationState::kPending);
  EXPECT_THAT(a.pending_reason, HasSubstr("at the next periodic pass"));
  EXPECT_EQ(this->StateOf("low"), AllocationState::kActive);
  ASSERT_OK(this->s().Sweep());
  EXPECT_EQ(this->StateOf("low"), AllocationState::kActive);
  EXPECT_TRUE(DeviceOf(this->s(), "n7", "GPU-b").mig_plan.has_value());
  EXPECT_EQ(this->ReasonOf("urgent"),
            "waiting for the MIG re-layout of GPU-b on n7");
}

// After a failed commit the scheduler reloads what the store holds: the
// slices held after a plan's deadline stay held (its agent may be under way
// whatever the store says), and the plans of the failed write leave no gap
// in the generations: each plan's generation is at most the number of the
// event written with it, so a restart, which starts from the last event's
// number, never draws one an agent has seen.
class SchedulerMigRelayoutFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(s_.Load());
    ASSERT_OK(
        s_.RegisterNode(MakeNode("n7", {SevenSmall("GPU-a", 0)}, kRelayouts)));
    ASSERT_OK(s_.Allocate(QueuedFor("big", "3g.40gb")));
  }
  // A sweep plans for "big", and its commit fails, and so does the reload
  // after it: memory still shows the plan, which was not written. The store
  // then answers again.
  void LeaveMemoryStale() {
    const absl::Status gone = absl::UnavailableError("disk gone");
    store_.FailWrites(gone);
    store_.FailLoads(gone);
    EXPECT_THAT(s_.Sweep(), StatusIs(absl::StatusCode::kUnavailable, _));
    store_.FailWrites(absl::OkStatus());
    store_.FailLoads(absl::OkStatus());
  }
  int64_t Free() {
    for (const CapacityEntry& e : s_.GetCapacity()) {
      if (e.partition == "1g.10gb") return e.free;
    }
    return 0;
  }

  FakeStore store_;
  FakeClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  Scheduler::Options options_ = [] {
    Scheduler::Options o;
    o.mig_relayout_timeout = absl::Minutes(4);
    return o;
  }();
  BlockingScheduler s_{&store_, &clock_, BuiltinAcceleratorTypes(), options_};
};

TEST_F(SchedulerMigRelayoutFaultTest, SlicesHeldAfterADeadlineOutliveAReload) {
  ASSERT_OK(s_.Sweep());
  ASSERT_TRUE(DeviceOf(s_, "n7", "GPU-a").mig_plan.has_value());
  clock_.Advance(absl::Minutes(4));
  ASSERT_OK(s_.Heartbeat("n7", {}));
  ASSERT_OK(s_.Sweep());
  ASSERT_FALSE(DeviceOf(s_, "n7", "GPU-a").mig_plan.has_value());
  EXPECT_EQ(Free(), 4);
  ASSERT_OK(s_.Release({"", "big"}));  // planned for no more
  store_.FailWrites(absl::UnavailableError("disk gone"));
  EXPECT_THAT(s_.Allocate(Want("one", "nvidia-h100", 1, "1g.10gb")),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("disk gone")));
  store_.FailWrites(absl::OkStatus());
  EXPECT_EQ(Free(), 4);
  // One more timeout after the deadline, and they serve again.
  clock_.Advance(absl::Minutes(4));
  ASSERT_OK(s_.Heartbeat("n7", {}));
  ASSERT_OK(s_.Sweep());
  EXPECT_EQ(Free(), 7);
}

// A registration ends the hold, but only once it is written: one whose
// write fails leaves the node as it was, its agent perhaps still at work.
TEST_F(SchedulerMigRelayoutFaultTest,
       AHoldEndedByARegistrationThatFailsToCommitStands) {
  ASSERT_OK(s_.Sweep());
  ASSERT_TRUE(DeviceOf(s_, "n7", "GPU-a").mig_plan.has_value());
  clock_.Advance(absl::Minutes(4));
  ASSERT_OK(s_.Heartbeat("n7", {}));
  ASSERT_OK(s_.Sweep());
  ASSERT_OK(s_.Release({"", "big"}));  // planned for no more
  ASSERT_EQ(Free(), 4);
  store_.FailWrites(absl::UnavailableError("disk gone"));
  EXPECT_THAT(
      s_.RegisterNode(MakeNode("n7", {SevenSmall("GPU-a", 0)}, kRelayouts)),
      StatusIs(absl::StatusCode::kUnavailable, HasSubstr("disk gone")));
  store_.FailWrites(absl::OkStatus());
  EXPECT_EQ(Free(), 4);
  ASSERT_OK(
      s_.RegisterNode(MakeNode("n7", {SevenSmall("GPU-a", 0)}, kRelayouts)));
  EXPECT_EQ(Free(), 7);
}

// A commit fails and so does the reload after it: memory still shows the
// plan that was not written. A heartbeat that gets in before the next sweep
// is refused rather than answered with that plan, though its own write
// would commit.
TEST_F(SchedulerMigRelayoutFaultTest,
       NoReplyCarriesAPlanLeftInMemoryByAFailedReload) {
  ASSERT_NO_FATAL_FAILURE(LeaveMemoryStale());
  ASSERT_TRUE(DeviceOf(s_, "n7", "GPU-a").mig_plan.has_value());
  EXPECT_THAT(s_.HeartbeatPlans("n7", Scheduler::HeartbeatReport{}),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("lost track of the store")));
  // The sweep reloads: no plan was written, and the next is made afresh.
  ASSERT_OK(s_.Sweep());
  ASSERT_OK_AND_ASSIGN(Scheduler::MigPlans plans,
                       s_.HeartbeatPlans("n7", Scheduler::HeartbeatReport{}));
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(FindDevice(store_.nodes().at("n7"), "GPU-a")->mig_plan,
            plans.at("GPU-a"));
}

// Nor is a change of the tenants' policies taken while memory is stale: the
// caller is told it failed, and it did.
TEST_F(SchedulerMigRelayoutFaultTest, PoliciesAreNotChangedWhileMemoryIsStale) {
  ASSERT_NO_FATAL_FAILURE(LeaveMemoryStale());
  ASSERT_OK_AND_ASSIGN(
      TenantPolicies policies,
      ParseTenantPolicies(R"pb(tenants { name: "t9" cohort: "c" })pb",
                          "tenants.textproto", *s_.accelerator_types()));
  EXPECT_THAT(s_.SetTenantPolicies(
                  std::make_shared<const TenantPolicies>(std::move(policies))),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("lost track of the store")));
  ASSERT_OK(s_.Sweep());
  EXPECT_TRUE(s_.TenantStandings("t9").empty());
}

TEST_F(SchedulerMigRelayoutFaultTest,
       APlansGenerationIsAtMostItsEventsNumberAfterAFailedCommit) {
  // Four GPUs and four requests: the failed pass plans more than the store
  // holds events.
  ASSERT_OK(
      s_.RegisterNode(MakeNode("n7",
                               {SevenSmall("GPU-a", 0), SevenSmall("GPU-b", 1),
                                SevenSmall("GPU-c", 2), SevenSmall("GPU-d", 3)},
                               kRelayouts)));
  for (int i = 2; i <= 4; ++i) {
    ASSERT_OK(s_.Allocate(QueuedFor(absl::StrCat("big", i), "3g.40gb")));
  }
  auto watch = s_.scheduler().events().Subscribe({"", "", "n7"});
  store_.FailWrites(absl::UnavailableError("disk gone"));
  EXPECT_THAT(s_.Sweep(),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("disk gone")));
  store_.FailWrites(absl::OkStatus());
  // The reload forgot the plans that were not written.
  ASSERT_FALSE(DeviceOf(s_, "n7", "GPU-a").mig_plan.has_value());
  ASSERT_OK(s_.Sweep());
  int seen = 0;
  for (;;) {
    absl::StatusOr<std::shared_ptr<const Event>> e = watch->TryNext();
    if (!e.ok() || *e == nullptr) break;
    if ((*e)->type != Event::Type::kMigRelayoutPlanned) continue;
    ++seen;
    const std::string gpu = (*e)->reason.substr(0, (*e)->reason.find(':'));
    const Device planned = DeviceOf(s_, "n7", gpu);
    ASSERT_TRUE(planned.mig_plan.has_value()) << gpu;
    EXPECT_LE(planned.mig_plan->generation, (*e)->sequence) << gpu;
  }
  EXPECT_EQ(seen, 4);
}

// A heartbeat's reply carries no plan that is not durable when it is
// delivered: one made after the heartbeat was accepted (its write queued
// behind the heartbeat's) waits for the next heartbeat.
TEST(SchedulerMigRelayoutRaceTest, AReplyCarriesOnlyPlansWrittenBeforeIt) {
  FakeStore store;
  FakeClock clock{absl::FromUnixSeconds(1'700'000'000)};
  Scheduler::Options options;
  // One write per transaction, committed on the committer's thread: the
  // heartbeat's commits alone, and its reply is built before the next.
  options.commit_mode = GroupCommitter::Mode::kThread;
  options.max_commit_batch = 1;
  BlockingScheduler s(&store, &clock, BuiltinAcceleratorTypes(), options);
  ASSERT_OK(s.Load());
  ASSERT_OK(
      s.RegisterNode(MakeNode("n7", {SevenSmall("GPU-a", 0)}, kRelayouts)));
  ASSERT_OK(s.Allocate(QueuedFor("big", "3g.40gb")));

  store.HoldCommits(true);
  absl::Notification replied;
  absl::StatusOr<Scheduler::MigPlans> reply;
  std::map<std::string, Node> durable_then;
  s.scheduler().nodes().Heartbeat(
      "n7", Scheduler::HeartbeatReport{}, [] {},
      [&](absl::StatusOr<Scheduler::MigPlans> plans) {
        reply = std::move(plans);
        durable_then = store.nodes();
        replied.Notify();
      });
  // The periodic pass plans while the heartbeat's write waits for the disk.
  absl::Status swept;
  std::thread sweep([&] { swept = s.Sweep().status(); });
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  bool planned = false;
  while (!(planned = DeviceOf(s, "n7", "GPU-a").mig_plan.has_value()) &&
         absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  // Let go and joined before any assertion can return.
  store.HoldCommits(false);
  replied.WaitForNotification();
  sweep.join();
  ASSERT_TRUE(planned) << "the sweep planned nothing in 30 s";
  ASSERT_OK(swept);
  ASSERT_OK(reply);
  for (const auto& [gpu, plan] : *reply) {
    const Node& n = durable_then.at("n7");
    const Device* d = FindDevice(n, gpu);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->mig_plan, plan) << gpu << "'s plan was not yet written";
  }
  EXPECT_TRUE(reply->empty());
  // The next heartbeat carries it, written.
  ASSERT_OK_AND_ASSIGN(Scheduler::MigPlans next,
                       s.HeartbeatPlans("n7", Scheduler::HeartbeatReport{}));
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(FindDevice(store.nodes().at("n7"), "GPU-a")->mig_plan,
            next.at("GPU-a"));
}

}  // namespace
}  // namespace accelsched
