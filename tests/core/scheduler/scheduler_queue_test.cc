// Queueing through the scheduler with a fake store and clock: pending
// requests, order, fair share, backfill, quotas, preemption, gangs, restart.
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "config/accelerator_types_file.h"
#include "config/tenants_file.h"
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
using ::testing::SizeIs;

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

Scheduler::Options Opts() {
  Scheduler::Options o;
  o.default_lease = absl::Hours(1);
  o.heartbeat_timeout = absl::ZeroDuration();  // the clock jumps ahead
  o.pending_lease = absl::Minutes(10);
  o.preemption_grace = absl::Seconds(30);
  return o;
}

// `n` T4s on one node.
Node T4Node(const std::string& name, int n, Labels labels = {}) {
  std::vector<Device> devices;
  for (int i = 0; i < n; ++i) {
    devices.push_back(Gpu(absl::StrCat(name, "-gpu", i), "T4", i));
  }
  return MakeNode(name, std::move(devices), std::move(labels));
}

AllocationRequest Queued(std::string request_id, int count = 1,
                         std::string tenant = "", int priority = 0,
                         absl::Duration lease = absl::ZeroDuration()) {
  AllocationRequest r = Want(std::move(request_id), "T4", count);
  r.queue = true;
  r.tenant = std::move(tenant);
  r.priority = priority;
  r.lease = lease;
  return r;
}

class SchedulerQueueTest : public testing::Test {
 protected:
  explicit SchedulerQueueTest(Scheduler::Options options = Opts())
      : s_(std::make_unique<BlockingScheduler>(
            &store_, &clock_, BuiltinAcceleratorTypes(), options)) {}

  Allocation Must(absl::StatusOr<Allocation> a) {
    EXPECT_OK(a);
    return a.ok() ? *std::move(a) : Allocation();
  }
  Allocation Get(const std::string& request_id) {
    return Must(s_->GetAllocation({"", request_id}));
  }
  AllocationState StateOf(const std::string& request_id) {
    return Get(request_id).state;
  }
  void Policies(absl::string_view text) {
    absl::StatusOr<TenantPolicies> p = ParseTenantPolicies(
        text, "tenants.textproto", *s_->accelerator_types());
    ASSERT_OK(p);
    ASSERT_OK(s_->SetTenantPolicies(
        std::make_shared<const TenantPolicies>(*std::move(p))));
  }
  // Event types a watcher of `request_id` sees.
  std::vector<Event::Type> EventsOf(
      const std::shared_ptr<EventHub::Watcher>& w) {
    std::vector<Event::Type> types;
    for (;;) {
      absl::StatusOr<std::shared_ptr<const Event>> e = w->TryNext();
      if (!e.ok() || *e == nullptr) break;
      types.push_back((*e)->type);
    }
    return types;
  }

  FakeStore store_;
  FakeClock clock_{kStart};
  std::unique_ptr<BlockingScheduler> s_;
};

TEST_F(SchedulerQueueTest, AQueuedRequestWaitsDurablyAndIsAdmittedOnRelease) {
  ASSERT_OK(s_->RegisterNode(T4Node("n1", 1)));
  ASSERT_OK(s_->Allocate(Want("first", "T4")));
  auto watcher = s_->events().Subscribe({"", "second", ""});
  // Not queued: refused as before.
  EXPECT_THAT(s_->Allocate(Want("plain", "T4")),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("0/1")));
  const Allocation pending = Must(s_->Allocate(Queued("second")));
  EXPECT_EQ(pending.state, AllocationState::kPending);
  EXPECT_EQ(pending.queue_position, 1);
  EXPECT_THAT(pending.pending_reason,
              HasSubstr("no node has 1 free nvidia-tesla-t4 device"));
  EXPECT_THAT(pending.devices, IsEmpty());
  EXPECT_EQ(store_.allocations().at(pending.id).allocation.state,
            AllocationState::kPending);
  EXPECT_EQ(s_->Stats().pending_by_tenant,
            (std::map<std::string, int64_t>{{"", 1}}));

  clock_.Advance(absl::Seconds(7));
  ASSERT_OK(s_->Release({"", "first"}));
  const Allocation admitted = Get("second");
  EXPECT_EQ(admitted.id, pending.id);
  EXPECT_EQ(admitted.state, AllocationState::kActive);
  EXPECT_EQ(admitted.queue_position, 0);
  EXPECT_EQ(admitted.created_at, kStart);
  EXPECT_EQ(admitted.admitted_at, kStart + absl::Seconds(7));
  EXPECT_EQ(admitted.expires_at, admitted.admitted_at + absl::Hours(1));
  EXPECT_THAT(admitted.devices, SizeIs(1));
  EXPECT_EQ(store_.allocations().at(pending.id).allocation, admitted);
  EXPECT_THAT(EventsOf(watcher), ElementsAre(Event::Type::kAdmitted));
  EXPECT_THAT(s_->Stats().pending_by_tenant, IsEmpty());
}

TEST_F(SchedulerQueueTest, ARetryReturnsThePendingRequestAndKeepsItAlive) {
  ASSERT_OK(s_->RegisterNode(T4Node("n1", 1)));
  ASSERT_OK(s_->Allocate(Want("first", "T4")));
  const Allocation pending = Must(s_->Allocate(Queued("second")));
  clock_.Advance(absl::Minutes(8));
  const Allocation retry = Must(s_->Allocate(Queued("second")));
  EXPECT_EQ(retry.id, pending.id);
  EXPECT_EQ(retry.expires_at, kStart + absl::Minutes(18));
  EXPECT_EQ(store_.allocations().at(pending.id).allocation.expires_at,
            retry.expires_at);
  EXPECT_THAT(s_->Allocate(Queued("second", 2)),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       HasSubstr("already holds allocation")));
  // Not kept alive past its pending lease: it expires, and a later retry
  // queues anew.
  clock_.Advance(absl::Minutes(11));
  ASSERT_OK(s_->Sweep());
  const Allocation expired = Must(s_->GetAllocation({pending.id, ""}));
  EXPECT_EQ(expired.state, AllocationState::kExpired);
  EXPECT_EQ(expired.end_reason, kReasonPendingExpired);
  const Allocation again = Must(s_->Allocate(Queued("second")));
  EXPECT_NE(again.id, pending.id);
  EXPECT_EQ(again.state, AllocationState::kPending);
}

TEST_F(SchedulerQueueTest, ReleasingAPendingRequestWithdrawsIt) {
  ASSERT_OK(s_->RegisterNode(T4Node("n1", 1)));
  ASSERT_OK(s_->Allocate(Want("first", "T4")));
  ASSERT_OK(s_->Allocate(Queued("second")));
  const Allocation withdrawn = Must(s_->Release({"", "second"}));
  EXPECT_EQ(withdrawn.state, AllocationState::kReleased);
  EXPECT_EQ(withdrawn.end_reason, kReasonWithdrawn);
  ASSERT_OK(s_->Release({"", "first"}));
  EXPECT_EQ(StateOf("second"), AllocationState::kReleased);
  EXPECT_EQ(s_->GetCapacity()[0].free, 1);
}

TEST_F(SchedulerQueueTest, HigherPriorityFirstThenFirstComeFirstServed) {
  ASSERT_OK(s_->RegisterNode(T4Node("n1", 1)));
  ASSERT_OK(s_->Allocate(Want("running", "T4")));
  ASSERT_OK(s_->Allocate(Queued("low-1", 1, "", 0)));
  ASSERT_OK(s_->Allocate(Queued("high", 1, "", 5)));
  ASSERT_OK(s_->Allocate(Queued("low-2", 1, "", 0)));
  absl::StatusOr<QueuePage> q = s_->GetQueue("", 0, "");
  ASSERT_OK(q);
  std::vector<std::string> order;
  for (const Allocation& a : q->pending) {
    order.push_back(a.request_id);
    EXPECT_EQ(a.queue_position, static_cast<int>(order.size()));
  }
  EXPECT_THAT(order, ElementsAre("high", "low-1", "low-2"));
  std::vector<std::string> admitted;
  std::string holder = "running";
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(s_->Release({"", holder}));
    for (const char* id : {"high", "low-1", "low-2"}) {
      if (StateOf(id) == AllocationState::kActive) holder = id;
    }
    admitted.push_back(holder);
  }
  EXPECT_THAT(admitted, ElementsAre("high", "low-1", "low-2"));
}

// Admissions over time as each of `tenants` keeps `per_tenant` requests
// queued on a cluster of `gpus`: the oldest allocation is released, the
// queue admits one, `rounds` times.
std::map<std::string, int> AdmissionsUnderLoad(
    BlockingScheduler& s, const std::vector<std::string>& tenants, int rounds) {
  std::map<std::string, int> admitted;
  std::map<std::string, int> next;
  std::deque<std::string> running;
  // Keeps two of each tenant's requests waiting, queued in turns.
  auto top_up = [&] {
    for (bool more = true; more;) {
      more = false;
      for (const std::string& t : tenants) {
        if (s.Stats().pending_by_tenant[t] >= 2) continue;
        more = true;
        const std::string id = absl::StrCat(t, "-", next[t]++);
        absl::StatusOr<Allocation> a = s.Allocate(Queued(id, 1, t));
        EXPECT_OK(a);
        if (a.ok() && a->state == AllocationState::kActive) {
          running.push_back(id);
        }
      }
    }
  };
  top_up();
  std::set<std::string> seen(running.begin(), running.end());
  for (int round = 0; round < rounds; ++round) {
    const std::string oldest = running.front();
    running.pop_front();
    EXPECT_OK(s.Release({"", oldest}));
    absl::StatusOr<AllocationPage> active =
        s.ListAllocations({AllocationState::kActive, "", ""}, 1000, "");
    for (const Allocation& a : active->allocations) {
      if (seen.insert(a.request_id).second) {
        running.push_back(a.request_id);
        ++admitted[a.tenant];
      }
    }
    top_up();
  }
  return admitted;
}

// Tenant a's part of 1,000 admissions between tenants a and b keeping two
// nodes of 8 T4s busy.
double ShareOfA(BlockingScheduler& s) {
  EXPECT_OK(s.RegisterNode(T4Node("n1", 8)));
  EXPECT_OK(s.RegisterNode(T4Node("n2", 8)));
  std::map<std::string, int> admitted =
      AdmissionsUnderLoad(s, {"a", "b"}, 1000);
  EXPECT_EQ(admitted["a"] + admitted["b"], 1000);
  return admitted["a"] / 1000.0;
}

TEST_F(SchedulerQueueTest, EqualWeightsShareWithinFivePercent) {
  EXPECT_NEAR(ShareOfA(*s_), 0.5, 0.05);
}

TEST_F(SchedulerQueueTest, WeightsThreeToOneShareSeventyFiveTwentyFive) {
  Policies(R"pb(
    tenants { name: "a" weight: 3 }
    tenants { name: "b" weight: 1 }
  )pb");
  EXPECT_NEAR(ShareOfA(*s_), 0.75, 0.05);
  // What they hold at the end, too.
  std::vector<TenantStanding> standings = s_->TenantStandings("");
  ASSERT_THAT(standings, SizeIs(2));
  EXPECT_NEAR(standings[0].pools[0].used_milli, 12000, 1000);  // 16 x 3/4
  EXPECT_NEAR(standings[0].dominant_share, standings[1].dominant_share, 0.07);
}

// Conservative backfill: an 8-GPU request behind a stream of 1-GPU ones is
// admitted as soon as its node frees, and what is backfilled ahead of it
// ends before then.
TEST_F(SchedulerQueueTest, BackfillNeverDelaysTheReservedHead) {
  Scheduler::Options options = Opts();
  options.pending_lease = absl::Hours(24);  // no retries needed here
  s_ = std::make_unique<BlockingScheduler>(&store_, &clock_,
                                           BuiltinAcceleratorTypes(), options);
  ASSERT_OK(s_->RegisterNode(T4Node("n1", 8)));
  // Eight 1-GPU jobs ending 10..80 minutes from now.
  for (int i = 0; i < 8; ++i) {
    AllocationRequest r = Want(absl::StrCat("run-", i), "T4");
    r.lease = absl::Minutes(10 * (i + 1));
    ASSERT_OK(s_->Allocate(r));
  }
  const Allocation big = Must(s_->Allocate(Queued("big", 8)));
  ASSERT_EQ(big.state, AllocationState::kPending);
  EXPECT_THAT(big.pending_reason, HasSubstr("holds n1 from"));
  // 10 minutes on, one GPU frees. A 1-GPU request that would run two hours
  // is not let in, queued or not; one that ends within the 70 minutes left
  // is.
  clock_.Advance(absl::Minutes(10));
  ASSERT_OK(s_->Sweep());
  const Allocation long_one =
      Must(s_->Allocate(Queued("long", 1, "", 0, absl::Hours(2))));
  EXPECT_EQ(long_one.state, AllocationState::kPending);
  AllocationRequest plain_long = Want("plain-long", "T4");
  plain_long.lease = absl::Minutes(71);
  EXPECT_THAT(s_->Allocate(plain_long),
              StatusIs(absl::StatusCode::kResourceExhausted, testing::_));
  AllocationRequest short_plain = Want("short", "T4");
  short_plain.lease = absl::Minutes(70);
  const Allocation backfilled = Must(s_->Allocate(short_plain));
  EXPECT_EQ(backfilled.state, AllocationState::kActive);
  EXPECT_LE(backfilled.expires_at, kStart + absl::Minutes(80));
  // At 80 minutes every GPU is free (the backfilled one included): the big
  // request goes first, the long one after it.
  clock_.Advance(absl::Minutes(70));
  ASSERT_OK(s_->Sweep());
  EXPECT_EQ(StateOf("big"), AllocationState::kActive);
  EXPECT_EQ(Get("big").admitted_at, kStart + absl::Minutes(80));
  EXPECT_EQ(StateOf("long"), AllocationState::kPending);
}

// A waiting request's estimated start is its reservation's: shown by the
// Allocate reply, GetAllocation, GetQueue and Explain; never in the past; none
// for a request that holds nothing.
TEST_F(SchedulerQueueTest, TheHeadsReservationIsItsEstimatedStart) {
  Scheduler::Options options = Opts();
  options.pending_lease = absl::Hours(24);
  s_ = std::make_unique<BlockingScheduler>(&store_, &clock_,
                                           BuiltinAcceleratorTypes(), options);
  ASSERT_OK(s_->RegisterNode(T4Node("n1", 4)));
  for (int i = 0; i < 4; ++i) {
    AllocationRequest r = Want(absl::StrCat("run-", i), "T4");
    r.lease = absl::Minutes(10 * (i + 1));
    ASSERT_OK(s_->Allocate(r));
  }
  const absl::Time at_40 = kStart + absl::Minutes(40);
  const Allocation big = Must(s_->Allocate(Queued("big", 4)));
  ASSERT_EQ(big.state, AllocationState::kPending);
  EXPECT_EQ(big.estimated_start, at_40);
  EXPECT_EQ(Get("big").estimated_start, at_40);
  // Behind the pool's head: nothing bounds it.
  const Allocation next = Must(s_->Allocate(Queued("next", 2)));
  ASSERT_EQ(next.state, AllocationState::kPending);
  EXPECT_EQ(next.estimated_start, std::nullopt);
  ASSERT_OK_AND_ASSIGN(QueuePage q, s_->GetQueue("", 0, ""));
  ASSERT_THAT(q.pending, SizeIs(2));
  EXPECT_EQ(q.pending[0].request_id, "big");
  EXPECT_EQ(q.pending[0].estimated_start, at_40);
  EXPECT_EQ(q.pending[1].estimated_start, std::nullopt);
  ASSERT_OK_AND_ASSIGN(ExplainResult e, s_->Explain(Queued("big", 4)));
  EXPECT_EQ(e.estimated_start, at_40);
  ASSERT_OK_AND_ASSIGN(ExplainResult other, s_->Explain(Queued("next", 2)));
  EXPECT_EQ(other.estimated_start, std::nullopt);
  // Overdue (the last lease ran out, no pass since): expected now.
  clock_.Advance(absl::Minutes(45));
  EXPECT_EQ(Get("big").estimated_start, kStart + absl::Minutes(45));
  ASSERT_OK(s_->Sweep());
  const Allocation admitted = Get("big");
  EXPECT_EQ(admitted.state, AllocationState::kActive);
  EXPECT_EQ(admitted.estimated_start, std::nullopt);
}

TEST_F(SchedulerQueueTest, QuotaWithoutACohortIsAHardLimit) {
  Policies(R"pb(
    tenants {
      name: "a"
      quotas { model: "T4" nominal: 2 }
    }
  )pb");
  ASSERT_OK(s_->RegisterNode(T4Node("n1", 8)));
  ASSERT_OK(s_->Allocate(Queued("a-1", 2, "a")));
  AllocationRequest plain = Want("a-plain", "T4");
  plain.tenant = "a";
  EXPECT_THAT(s_->Allocate(plain),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("quota: tenant a at 2/2 nvidia-tesla-t4 "
                                 "devices, asks 1 more")));
  const Allocation waiting = Must(s_->Allocate(Queued("a-2", 1, "a")));
  EXPECT_EQ(waiting.state, AllocationState::kPending);
  EXPECT_THAT(waiting.pending_reason, HasSubstr("quota: tenant a at 2/2"));
  // Another tenant is not limited by a's quota.
  EXPECT_EQ(Must(s_->Allocate(Queued("b-1", 4, "b"))).state,
            AllocationState::kActive);
  ASSERT_OK(s_->Release({"", "a-1"}));
  EXPECT_EQ(StateOf("a-2"), AllocationState::kActive);
}

// Kueue's cohort example (docs/concepts/cluster_queue.md): team-a (nominal
// 9) and team-b (nominal 12) share a cohort, so team-a may use up to 21
// while team-b is idle; a borrowing limit caps that; and team-b reclaims
// what team-a borrows by preemption.
TEST_F(SchedulerQueueTest, CohortsLendUnusedQuotaAndReclaimIt) {
  Policies(R"pb(
    tenants {
      name: "team-a"
      cohort: "team-ab"
      quotas { model: "T4" nominal: 9 }
    }
    tenants {
      name: "team-b"
      cohort: "team-ab"
      quotas { model: "T4" nominal: 12 }
    }
    tenants {
      name: "team-c"
      cohort: "team-ab"
      quotas { model: "T4" nominal: 0 borrowing_limit: 2 }
    }
  )pb");
  for (int n = 0; n < 4; ++n) {
    ASSERT_OK(s_->RegisterNode(T4Node(absl::StrCat("n", n), 8)));
  }
  for (int i = 0; i < 21; ++i) {
    EXPECT_EQ(
        Must(s_->Allocate(Queued(absl::StrCat("a-", i), 1, "team-a"))).state,
        AllocationState::kActive)
        << i;
  }
  const Allocation over = Must(s_->Allocate(Queued("a-21", 1, "team-a")));
  EXPECT_EQ(over.state, AllocationState::kPending);
  EXPECT_THAT(over.pending_reason, HasSubstr("quota: cohort team-ab at 21/21"));
  // team-c may borrow at most 2, and there is nothing left to borrow.
  EXPECT_THAT(Must(s_->Allocate(Queued("c-0", 3, "team-c"))).pending_reason,
              HasSubstr("over its borrowing limit 2"));
  // team-b wants 4 of its own 12. There are GPUs free, but the cohort's 21
  // are in use: team-a's four most recently admitted (borrowed)
  // allocations are preempted, and no more.
  const Allocation b = Must(s_->Allocate(Queued("b-0", 4, "team-b")));
  EXPECT_EQ(b.state, AllocationState::kPending);
  EXPECT_THAT(b.pending_reason, HasSubstr("preempted 4 borrowing"));
  std::vector<std::string> preempted;
  for (int i = 0; i < 21; ++i) {
    const Allocation a = Get(absl::StrCat("a-", i));
    if (a.state == AllocationState::kPreempted) {
      preempted.push_back(a.request_id);
      EXPECT_EQ(a.preempted_by, b.id);
      EXPECT_THAT(a.devices, SizeIs(1));  // kept through the grace
    }
  }
  EXPECT_THAT(preempted, ElementsAre("a-17", "a-18", "a-19", "a-20"));
  clock_.Advance(absl::Seconds(30));
  ASSERT_OK(s_->Sweep());
  EXPECT_EQ(StateOf("b-0"), AllocationState::kActive);
  // team-a stays at 17 while the cohort is full.
  EXPECT_EQ(StateOf("a-21"), AllocationState::kPending);
}

TEST_F(SchedulerQueueTest, PreemptionTakesTheFewestLowerPriorityVictims) {
  ASSERT_OK(s_->RegisterNode(T4Node("n1", 4)));
  ASSERT_OK(s_->RegisterNode(T4Node("n2", 4)));
  // n1: four 1-GPU jobs; n2: one 4-GPU job.
  for (int i = 0; i < 4; ++i) {
    AllocationRequest r = Want(absl::StrCat("small-", i), "T4");
    r.node_selector = {};
    ASSERT_OK(s_->Allocate(r));
  }
  ASSERT_OK(s_->Allocate(Want("wide", "T4", 4)));
  ASSERT_NE(Get("wide").node, Get("small-0").node);
  // Same priority: no preemption.
  EXPECT_EQ(Must(s_->Allocate(Queued("peer", 4, "", 0))).state,
            AllocationState::kPending);
  EXPECT_EQ(StateOf("wide"), AllocationState::kActive);
  ASSERT_OK(s_->Release({"", "peer"}));
  auto watcher = s_->events().Subscribe({"", "wide", ""});
  const Allocation urgent = Must(s_->Allocate(Queued("urgent", 4, "", 10)));
  EXPECT_EQ(urgent.state, AllocationState::kPending);
  EXPECT_THAT(urgent.pending_reason, HasSubstr("preempted 1 allocation"));
  EXPECT_EQ(urgent.estimated_start, kStart + absl::Seconds(30));  // the grace
  const Allocation wide = Get("wide");
  EXPECT_EQ(wide.state, AllocationState::kPreempted);
  EXPECT_EQ(wide.preempted_by, urgent.id);
  EXPECT_EQ(wide.expires_at, kStart + absl::Seconds(30));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(StateOf(absl::StrCat("small-", i)), AllocationState::kActive);
  }
  EXPECT_THAT(EventsOf(watcher), ElementsAre(Event::Type::kPreempted));
  // The victim's devices are its own through the grace; released early, they
  // pass at once.
  clock_.Advance(absl::Seconds(5));
  ASSERT_OK(s_->Sweep());
  EXPECT_EQ(StateOf("urgent"), AllocationState::kPending);
  const Allocation released = Must(s_->Release({"", "wide"}));
  EXPECT_EQ(released.state, AllocationState::kPreempted);
  EXPECT_EQ(released.end_reason, kReasonPreempted);
  const Allocation admitted = Get("urgent");
  EXPECT_EQ(admitted.state, AllocationState::kActive);
  EXPECT_EQ(admitted.node, wide.node);
}

TEST_F(SchedulerQueueTest, NoPreemptionForARequestThatStillWouldNotFit) {
  Policies(R"pb(
    tenants { name: "keep" non_preemptible: true }
  )pb");
  ASSERT_OK(s_->RegisterNode(T4Node("n1", 4)));
  AllocationRequest kept = Want("kept", "T4", 2);
  kept.tenant = "keep";
  ASSERT_OK(s_->Allocate(kept));
  ASSERT_OK(s_->Allocate(Want("other", "T4", 2)));
  // 4 GPUs needs both; one is not preemptible.
  EXPECT_EQ(Must(s_->Allocate(Queued("urgent", 4, "", 10))).state,
            AllocationState::kPending);
  EXPECT_EQ(StateOf("other"), AllocationState::kActive);
  EXPECT_EQ(StateOf("kept"), AllocationState::kActive);
}

TEST_F(SchedulerQueueTest, AGangIsAdmittedWholeOrNotAtAll) {
  for (int n = 0; n < 5; ++n) {
    const std::string name = absl::StrCat("n", n);
    ASSERT_OK(s_->RegisterNode(
        T4Node(name, 8, {{"rack", n < 3 ? "r1" : "r2"}, {"host", name}})));
  }
  // Two nodes busy with one GPU each: only three are wholly free.
  AllocationRequest x = Want("x", "T4");
  x.node_selector = {{"host", "n0"}};
  ASSERT_OK(s_->Allocate(x));
  AllocationRequest y = Want("y", "T4");
  y.node_selector = {{"host", "n3"}};
  ASSERT_OK(s_->Allocate(y));
  AllocationRequest gang = Queued("gang", 8);
  gang.replicas = 4;
  const Allocation waiting = Must(s_->Allocate(gang));
  EXPECT_EQ(waiting.state, AllocationState::kPending);
  EXPECT_THAT(waiting.devices, IsEmpty());
  EXPECT_EQ(s_->GetCapacity()[0].allocated, 2);
  ASSERT_OK(s_->Release({"", "x"}));
  const Allocation admitted = Get("gang");
  ASSERT_EQ(admitted.state, AllocationState::kActive);
  EXPECT_THAT(admitted.devices, SizeIs(32));
  EXPECT_THAT(admitted.targets, SizeIs(4));
  std::set<std::string> nodes;
  for (const AllocatedDevice& d : admitted.devices) nodes.insert(d.node);
  EXPECT_THAT(nodes, SizeIs(4));
  // More groups than nodes can ever exist is refused outright.
  AllocationRequest huge = Queued("huge", 8);
  huge.replicas = 6;
  EXPECT_THAT(s_->Allocate(huge),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("replicas 6 is more than the cluster holds")));
}

TEST_F(SchedulerQueueTest, AGangStaysInOneTopologyDomain) {
  for (int n = 0; n < 5; ++n) {
    const std::string name = absl::StrCat("n", n);
    ASSERT_OK(s_->RegisterNode(
        T4Node(name, 8, {{"rack", n < 3 ? "r1" : "r2"}, {"host", name}})));
  }
  AllocationRequest gang = Queued("gang", 8);
  gang.replicas = 3;
  gang.topology_key = "rack";
  const Allocation a = Must(s_->Allocate(gang));
  ASSERT_EQ(a.state, AllocationState::kActive);
  for (const AllocatedDevice& d : a.devices) {
    EXPECT_THAT(d.node, testing::AnyOf("n0", "n1", "n2"));
  }
  // r2 has two nodes: a 3-node gang there waits even with 16 GPUs free.
  AllocationRequest second = Queued("second", 8);
  second.replicas = 3;
  second.topology_key = "rack";
  EXPECT_EQ(Must(s_->Allocate(second)).state, AllocationState::kPending);
  // Refused at once: what is free (16 GPUs of r2) is not held, it is in a
  // rack too small, and the message does not say otherwise.
  AllocationRequest at_once = second;
  at_once.request_id = "at-once";
  at_once.queue = false;
  EXPECT_THAT(s_->Allocate(at_once),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       testing::Not(HasSubstr("held for waiting requests"))));
  second.request_id = "two";
  second.replicas = 2;
  const Allocation two = Must(s_->Allocate(second));
  EXPECT_EQ(two.state, AllocationState::kActive);
}

TEST_F(SchedulerQueueTest, TheQueueAndPreemptionsSurviveARestart) {
  ASSERT_OK(s_->RegisterNode(T4Node("n1", 2)));
  ASSERT_OK(s_->Allocate(Want("low", "T4", 2)));
  ASSERT_OK(s_->Allocate(Queued("p-1", 1, "a")));
  ASSERT_OK(s_->Allocate(Queued("p-2", 1, "b")));
  ASSERT_OK(s_->Allocate(Queued("urgent", 2, "c", 9)));
  ASSERT_EQ(StateOf("low"), AllocationState::kPreempted);
  absl::StatusOr<QueuePage> before = s_->GetQueue("", 0, "");
  ASSERT_OK(before);
  s_ = std::make_unique<BlockingScheduler>(&store_, &clock_,
                                           BuiltinAcceleratorTypes(), Opts());
  ASSERT_OK(s_->Load());
  absl::StatusOr<QueuePage> after = s_->GetQueue("", 0, "");
  ASSERT_OK(after);
  ASSERT_THAT(after->pending, SizeIs(3));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(after->pending[i].id, before->pending[i].id);
  }
  const Allocation low = Get("low");
  EXPECT_EQ(low.state, AllocationState::kPreempted);
  // The preemptor does not start before its victim's grace ends, and does
  // then.
  ASSERT_OK(s_->Sweep());
  EXPECT_EQ(StateOf("urgent"), AllocationState::kPending);
  clock_.Advance(absl::Seconds(30));
  ASSERT_OK(s_->Sweep());
  EXPECT_EQ(StateOf("urgent"), AllocationState::kActive);
  EXPECT_EQ(StateOf("p-1"), AllocationState::kPending);
}

}  // namespace
}  // namespace accelsched
