// Preemption and reclaim through the scheduler with a fake store and clock:
// who is preempted, and who is not, when quotas, cohorts and priorities
// meet (the cases a review of the first queueing change found wrong).
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

using ::testing::HasSubstr;

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

Scheduler::Options Opts(bool preemption = true) {
  Scheduler::Options o;
  o.default_lease = absl::Hours(1);
  o.heartbeat_timeout = absl::ZeroDuration();
  o.pending_lease = absl::Hours(10);
  o.preemption_grace = absl::Seconds(30);
  o.preemption = preemption;
  return o;
}

Node GpuNode(const std::string& name, const char* model, int n,
             Labels labels = {}) {
  std::vector<Device> devices;
  for (int i = 0; i < n; ++i) {
    devices.push_back(Gpu(absl::StrCat(name, "-gpu", i), model, i));
  }
  labels["name"] = name;
  return MakeNode(name, std::move(devices), std::move(labels));
}

AllocationRequest Req(std::string id, int count, std::string tenant,
                      int priority = 0, bool queue = true,
                      std::string node = "") {
  AllocationRequest r = Want(std::move(id), "T4", count);
  r.queue = queue;
  r.tenant = std::move(tenant);
  r.priority = priority;
  if (!node.empty()) r.node_selector = {{"name", node}};
  return r;
}

class SchedulerPreemptionTest : public testing::Test {
 protected:
  explicit SchedulerPreemptionTest(Scheduler::Options o = Opts())
      : options_(o),
        s_(std::make_unique<BlockingScheduler>(&store_, &clock_,
                                               BuiltinAcceleratorTypes(), o)) {}
  Allocation Must(absl::StatusOr<Allocation> a) {
    EXPECT_OK(a);
    return a.ok() ? *std::move(a) : Allocation();
  }
  Allocation Get(const std::string& request_id) {
    return Must(s_->GetAllocation({"", request_id}));
  }
  void Policies(absl::string_view text) {
    absl::StatusOr<TenantPolicies> p = ParseTenantPolicies(
        text, "tenants.textproto", *s_->accelerator_types());
    ASSERT_OK(p);
    ASSERT_OK(s_->SetTenantPolicies(
        std::make_shared<const TenantPolicies>(*std::move(p))));
  }
  Scheduler::Options options_;
  FakeStore store_;
  FakeClock clock_{kStart};
  std::unique_ptr<BlockingScheduler> s_;
};

// Issue 30: a free device is not enough when the node's CPU is taken; the
// victim is chosen so that the CPU it frees lets the request fit.
TEST_F(SchedulerPreemptionTest, VictimsFreeTheCpuTheRequestNeeds) {
  Node n1 = GpuNode("n1", "T4", 2);
  n1.allocatable = NodeResources{8000, int64_t{64} << 30, 0};
  ASSERT_OK(s_->RegisterNode(n1));
  AllocationRequest low = Req("low", 1, "a", /*priority=*/0);
  low.pod_resources = NodeResources{6000, 1 << 30, 0};
  ASSERT_EQ(Must(s_->Allocate(low)).state, AllocationState::kActive);
  AllocationRequest high = Req("high", 1, "a", /*priority=*/10);
  high.pod_resources = NodeResources{4000, 1 << 30, 0};
  const Allocation h = Must(s_->Allocate(high));
  EXPECT_EQ(h.state, AllocationState::kPending);  // until the grace ends
  EXPECT_EQ(Get("low").state, AllocationState::kPreempted);
  EXPECT_EQ(Get("low").preempted_by, h.id);
  // The grace over, the victim's CPU is free and the request lands on n1.
  clock_.Advance(absl::Seconds(31));
  ASSERT_OK(s_->Sweep());
  EXPECT_EQ(Get("high").state, AllocationState::kActive);
  EXPECT_EQ(Get("high").node, "n1");
}

// The units are there; only CPU is short. A victim that holds a T4 but no
// CPU would free nothing the request lacks: it keeps running.
TEST_F(SchedulerPreemptionTest, VictimsThatFreeNoCpuAreNotTaken) {
  Node n1 = GpuNode("n1", "T4", 3);
  n1.allocatable = NodeResources{8000, int64_t{64} << 30, 0};
  ASSERT_OK(s_->RegisterNode(n1));
  AllocationRequest cpu = Req("cpu", 1, "a", /*priority=*/0);
  cpu.pod_resources = NodeResources{6000, 1 << 30, 0};
  ASSERT_EQ(Must(s_->Allocate(cpu)).state, AllocationState::kActive);
  clock_.Advance(absl::Seconds(1));
  // Admitted later, so the first candidate in victim order.
  ASSERT_EQ(Must(s_->Allocate(Req("gpu-only", 1, "a", /*priority=*/0))).state,
            AllocationState::kActive);
  AllocationRequest high = Req("high", 1, "a", /*priority=*/10);
  high.pod_resources = NodeResources{4000, 1 << 30, 0};
  const Allocation h = Must(s_->Allocate(high));
  EXPECT_EQ(h.state, AllocationState::kPending);
  EXPECT_EQ(Get("cpu").state, AllocationState::kPreempted);
  EXPECT_EQ(Get("gpu-only").state, AllocationState::kActive);
  clock_.Advance(absl::Seconds(31));
  ASSERT_OK(s_->Sweep());
  EXPECT_EQ(Get("high").state, AllocationState::kActive);
  EXPECT_EQ(Get("gpu-only").state, AllocationState::kActive);
}

// CPU and memory both short: a victim that frees only memory still helps and
// is taken with the one that frees the CPU.
TEST_F(SchedulerPreemptionTest, AVictimFreeingAnyShortResourceIsTaken) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  Node n1 = GpuNode("n1", "T4", 3);
  n1.allocatable = NodeResources{8000, 8 * kGiB, 0};
  ASSERT_OK(s_->RegisterNode(n1));
  AllocationRequest cpu = Req("cpu", 1, "a", /*priority=*/0);
  cpu.pod_resources = NodeResources{6000, 1 * kGiB, 0};
  ASSERT_EQ(Must(s_->Allocate(cpu)).state, AllocationState::kActive);
  clock_.Advance(absl::Seconds(1));
  AllocationRequest mem = Req("mem", 1, "a", /*priority=*/0);
  mem.pod_resources = NodeResources{0, 6 * kGiB, 0};
  ASSERT_EQ(Must(s_->Allocate(mem)).state, AllocationState::kActive);
  AllocationRequest high = Req("high", 1, "a", /*priority=*/10);
  high.pod_resources = NodeResources{4000, 4 * kGiB, 0};
  const Allocation h = Must(s_->Allocate(high));
  EXPECT_EQ(h.state, AllocationState::kPending);
  EXPECT_EQ(Get("cpu").state, AllocationState::kPreempted);
  EXPECT_EQ(Get("mem").state, AllocationState::kPreempted);
  clock_.Advance(absl::Seconds(31));
  ASSERT_OK(s_->Sweep());
  EXPECT_EQ(Get("high").state, AllocationState::kActive);
}

// AdmissionRound::blocked_ is keyed by shape alone: another tenant's blocked
// request of the same shape stops a tenant within its nominal quota from
// reclaiming what its cohort lends.
TEST_F(SchedulerPreemptionTest, BlockedShapeOfAnotherTenantStopsReclaim) {
  Policies(R"pb(
    tenants {
      name: "a"
      cohort: "ab"
      quotas { model: "T4" nominal: 4 }
    }
    tenants {
      name: "b"
      cohort: "ab"
      quotas { model: "T4" nominal: 4 }
    }
  )pb");
  ASSERT_OK(s_->RegisterNode(GpuNode("n1", "T4", 4)));
  ASSERT_OK(s_->RegisterNode(GpuNode("n2", "T4", 4)));
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(Must(s_->Allocate(Req(absl::StrCat("a-", i), 1, "a"))).state,
              AllocationState::kActive);
  }
  // x: no quota, no cohort; same shape; queued first.
  const Allocation x = Must(s_->Allocate(Req("x", 1, "x")));
  ASSERT_EQ(x.state, AllocationState::kPending);
  const Allocation b = Must(s_->Allocate(Req("b", 1, "b")));
  ASSERT_EQ(b.state, AllocationState::kPending);
  int preempted = 0;
  for (int i = 0; i < 8; ++i) {
    if (Get(absl::StrCat("a-", i)).state == AllocationState::kPreempted) {
      ++preempted;
    }
  }
  // Per admission.h, b (0/4, within nominal) reclaims 1 of a's 4 borrowed.
  EXPECT_EQ(preempted, 1) << "b did not reclaim: blocked by x's shape";
  clock_.Advance(absl::Minutes(5));
  ASSERT_OK(s_->Sweep());
  EXPECT_EQ(Get("b").state, AllocationState::kActive)
      << Get("b").pending_reason;
}

class SchedulerNoPreemptionTest : public SchedulerPreemptionTest {
 protected:
  SchedulerNoPreemptionTest()
      : SchedulerPreemptionTest(Opts(/*preemption=*/false)) {}
};

// blocked_ is keyed by the shape before quota narrowing.
TEST_F(SchedulerNoPreemptionTest, QuotaNarrowedShapeBlocksOtherTenants) {
  Policies(R"pb(
    tenants {
      name: "q"
      quotas { model: "T4" nominal: 1 }
    }
  )pb");
  ASSERT_OK(s_->RegisterNode(GpuNode("t", "T4", 2)));
  ASSERT_OK(s_->RegisterNode(GpuNode("l", "L4", 1)));
  ASSERT_OK(s_->Allocate(Req("q-hold", 1, "q", 0, false)));
  ASSERT_OK(s_->Allocate(Req("z-t4", 1, "z", 0, false)));
  AllocationRequest zl = Want("z-l4", "L4");
  zl.tenant = "z";
  ASSERT_OK(s_->Allocate(zl));
  AllocationRequest q = Req("q", 1, "q", /*priority=*/1);
  q.alternative_devices = {"L4"};
  AllocationRequest r = Req("r", 1, "r", /*priority=*/0);
  r.alternative_devices = {"L4"};
  ASSERT_EQ(Must(s_->Allocate(q)).state, AllocationState::kPending);
  ASSERT_EQ(Must(s_->Allocate(r)).state, AllocationState::kPending);
  ASSERT_OK(s_->Release({"", "z-t4"}));  // a T4 is free: r (no quota) fits
  const Allocation got = Get("r");
  EXPECT_EQ(got.state, AllocationState::kActive);
}

// the reclaim path's Preempt takes lower-priority victims outside the
// cohort, which frees no quota: the request still does not fit after their
// grace, and then preempts borrowers too.
TEST_F(SchedulerPreemptionTest, ReclaimPreemptsAVictimThatFreesNoQuota) {
  Policies(R"pb(
    tenants {
      name: "a"
      cohort: "ab"
      quotas { model: "T4" nominal: 4 }
    }
    tenants {
      name: "b"
      cohort: "ab"
      quotas { model: "T4" nominal: 4 }
    }
  )pb");
  for (const char* n : {"n1", "n2", "n3"}) {
    ASSERT_OK(s_->RegisterNode(GpuNode(n, "T4", 4)));
  }
  ASSERT_OK(s_->Allocate(Req("e", 4, "e", 0, false, "n1")));
  ASSERT_OK(s_->Allocate(Req("b1", 4, "b", 0, false, "n3")));
  ASSERT_OK(s_->Allocate(Req("b2", 2, "b", 0, false, "n2")));
  ASSERT_OK(s_->Allocate(Req("d", 2, "d", 0, false, "n2")));
  const Allocation a = Must(s_->Allocate(Req("a", 4, "a", /*priority=*/10)));
  ASSERT_EQ(a.state, AllocationState::kPending);
  EXPECT_EQ(Get("e").state, AllocationState::kActive)
      << "e (tenant e, outside the cohort) was preempted: it frees no quota";
  clock_.Advance(absl::Seconds(31));
  ASSERT_OK(s_->Sweep());
  // Only borrowers free cohort quota: b's are reclaimed, and a starts once
  // their grace is over.
  EXPECT_EQ(Get("a").state, AllocationState::kActive)
      << Get("a").pending_reason;
  EXPECT_EQ(Get("e").state, AllocationState::kActive);
}

// Borrowed() counts units already PREEMPTED (still in usage during their
// grace), so a second reclaimer takes a borrower's allocations again and
// leaves it below its own nominal quota.
TEST_F(SchedulerPreemptionTest, SecondReclaimDuringGraceOverReclaims) {
  Policies(R"pb(
    tenants {
      name: "a"
      cohort: "abc"
      quotas { model: "T4" nominal: 4 }
    }
    tenants {
      name: "b"
      cohort: "abc"
      quotas { model: "T4" nominal: 4 }
    }
    tenants {
      name: "c"
      cohort: "abc"
      quotas { model: "T4" nominal: 4 }
    }
  )pb");
  for (const char* n : {"n1", "n2", "n3"}) {
    ASSERT_OK(s_->RegisterNode(GpuNode(n, "T4", 4)));
  }
  ASSERT_OK(s_->Allocate(Req("b1", 4, "b", 0, false, "n1")));
  ASSERT_OK(s_->Allocate(Req("b2", 2, "b", 0, false, "n2")));
  ASSERT_OK(s_->Allocate(Req("b3", 2, "b", 0, false, "n2")));
  ASSERT_OK(s_->Allocate(Req("x", 4, "x", 0, false, "n3")));
  // b holds 8: 4 borrowed. a and c each want their nominal 4.
  ASSERT_EQ(Must(s_->Allocate(Req("a", 4, "a"))).state,
            AllocationState::kPending);
  AllocationRequest c = Req("c", 4, "c");
  c.lease = absl::Hours(2);  // another shape: not skipped through blocked_
  ASSERT_EQ(Must(s_->Allocate(c)).state, AllocationState::kPending);
  int preempted_units = 0;
  for (const char* id : {"b1", "b2", "b3"}) {
    const Allocation v = Get(id);
    if (v.state == AllocationState::kPreempted) {
      preempted_units += static_cast<int>(v.devices.size());
    }
  }
  // b borrows 4: reclaiming should take 4 of b's units, not 8.
  EXPECT_EQ(preempted_units, 4);
}

// preempting sets expires_at = now + grace even when the victim's own
// lease ends sooner: the victim keeps its devices past its lease.
TEST_F(SchedulerPreemptionTest, PreemptionExtendsAVictimsLease) {
  ASSERT_OK(s_->RegisterNode(GpuNode("n1", "T4", 1)));
  AllocationRequest v = Req("v", 1, "", 0, false);
  v.lease = absl::Seconds(5);
  ASSERT_OK(s_->Allocate(v));
  ASSERT_EQ(Must(s_->Allocate(Req("hi", 1, "", 10))).state,
            AllocationState::kPending);
  const Allocation got = Get("v");
  EXPECT_LE(got.expires_at, kStart + absl::Seconds(5));
}

// a borrower of higher priority is admitted in a pass and preempted in
// the same pass by a cohort member within its nominal quota.
TEST_F(SchedulerPreemptionTest, AdmittedThenPreemptedInOnePass) {
  Policies(R"pb(
    tenants {
      name: "a"
      cohort: "ab"
      quotas { model: "T4" nominal: 2 }
    }
    tenants {
      name: "b"
      cohort: "ab"
      quotas { model: "T4" nominal: 2 }
    }
    tenants { name: "x" non_preemptible: true }
  )pb");
  ASSERT_OK(s_->RegisterNode(GpuNode("n1", "T4", 4)));
  ASSERT_OK(s_->RegisterNode(GpuNode("n2", "T4", 2)));
  ASSERT_OK(s_->Allocate(Req("b-hold", 2, "b", 10, false, "n2")));
  ASSERT_OK(s_->Allocate(Req("x", 4, "x", 0, false, "n1")));
  ASSERT_EQ(Must(s_->Allocate(Req("b-more", 2, "b", 10))).state,
            AllocationState::kPending);
  AllocationRequest a = Req("a", 2, "a", 0);
  a.lease = absl::Hours(2);
  ASSERT_EQ(Must(s_->Allocate(a)).state, AllocationState::kPending);
  auto w = s_->events().Subscribe({"", "b-more", ""});
  ASSERT_OK(s_->Release({"", "x"}));
  std::vector<int> types;
  for (;;) {
    auto e = w->TryNext();
    if (!e.ok() || *e == nullptr) break;
    types.push_back(static_cast<int>((*e)->type));
  }
  EXPECT_NE(Get("b-more").state, AllocationState::kPreempted);
}

// Sanity: a failed admission write reloads and nothing is double booked.
// A preemptor that no longer gets in once its victims are gone (its tenant
// reached its quota meanwhile) lets go of the node freed for it.
TEST_F(SchedulerPreemptionTest, AHoldIsLetGoWhenItsHolderCannotUseIt) {
  Policies(R"pb(
    tenants {
      name: "q"
      quotas { model: "T4" nominal: 1 }
    }
  )pb");
  ASSERT_OK(s_->RegisterNode(GpuNode("n1", "T4", 1)));
  ASSERT_OK(s_->RegisterNode(GpuNode("n2", "T4", 1)));
  ASSERT_OK(s_->Allocate(Req("low-1", 1, "", 0, false, "n1")));
  ASSERT_OK(s_->Allocate(Req("low-2", 1, "", 0, false, "n2")));
  ASSERT_EQ(Must(s_->Allocate(Req("q-1", 1, "q", 5))).state,
            AllocationState::kPending);
  // Another shape (lease), so not given up on behind q-1 in its group.
  AllocationRequest q2 = Req("q-2", 1, "q", 5);
  q2.lease = absl::Hours(2);
  ASSERT_EQ(Must(s_->Allocate(q2)).state, AllocationState::kPending);
  EXPECT_EQ(Get("low-1").state, AllocationState::kPreempted);
  EXPECT_EQ(Get("low-2").state, AllocationState::kPreempted);
  const Allocation other = Must(s_->Allocate(Req("other", 1, "z", 0)));
  ASSERT_EQ(other.state, AllocationState::kPending);
  clock_.Advance(absl::Seconds(30));
  ASSERT_OK(s_->Sweep());
  // q-1 runs; q-2 is at q's quota, so the other GPU goes to the next in line.
  EXPECT_EQ(Get("q-1").state, AllocationState::kActive);
  EXPECT_EQ(Get("q-2").state, AllocationState::kPending);
  EXPECT_THAT(Get("q-2").pending_reason, HasSubstr("quota: tenant q at 1/1"));
  EXPECT_EQ(Get("other").state, AllocationState::kActive);
}

TEST_F(SchedulerPreemptionTest, FailedAdmissionWriteReloads) {
  ASSERT_OK(s_->RegisterNode(GpuNode("n1", "T4", 1)));
  ASSERT_OK(s_->Allocate(Req("x", 1, "", 0, false)));
  ASSERT_EQ(Must(s_->Allocate(Req("p", 1, ""))).state,
            AllocationState::kPending);
  store_.FailWrites(absl::UnavailableError("disk"));
  EXPECT_FALSE(s_->Release({"", "x"}).ok());
  store_.FailWrites(absl::OkStatus());
  EXPECT_EQ(Get("x").state, AllocationState::kActive);
  EXPECT_EQ(Get("p").state, AllocationState::kPending);
  EXPECT_EQ(s_->Allocate(Req("y", 1, "", 0, false)).status().code(),
            absl::StatusCode::kResourceExhausted);
  ASSERT_OK(s_->Release({"", "x"}));
  EXPECT_EQ(Get("p").state, AllocationState::kActive);
}

}  // namespace
}  // namespace accelsched
