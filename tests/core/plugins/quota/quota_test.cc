// The quota plugin: WithinQuota's narrowing on its own, and the plugin's
// PreFilter on a cycle (what it narrows, what it refuses, what it leaves for
// the reclaim plugin); usage from a real allocation book, quotas from
// TenantPolicies, through the fixture's snapshot.
#include "core/plugins/quota/quota.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "core/framework/cycle_state.h"
#include "core/framework/framework.h"
#include "core/matching/match_spec.h"
#include "core/model/gpu_share.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/framework_fixture.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A quota of `nominal` T4s, in thousandths as Quota keeps it.
TenantPolicy Quoted(int64_t nominal, std::string cohort = "") {
  TenantPolicy p;
  p.cohort = std::move(cohort);
  p.quotas[GpuPool(kT4)] = Quota{nominal * kGpuMilli, std::nullopt};
  return p;
}

class WithinQuotaTest : public FrameworkFixture {};

TEST_F(WithinQuotaTest, NarrowsToThePoolsLeft) {
  AddNode("n1", 4, kT4);
  AddNode("n2", 4, kL4);
  SetTenants({{"a", Quoted(2)}});
  AddLive({.id = "a-1", .tenant = "a", .node = "n1", .units = 2});
  const Allocation& any = AddPending("a-2", "a", 1, 0, {});
  std::string reason;
  std::optional<MatchSpec> spec =
      WithinQuota(snapshot_, "a", MatchSpec::Of(any), &reason);
  ASSERT_TRUE(spec.has_value());
  EXPECT_THAT(spec->requested_models, ElementsAre(kL4));
  EXPECT_EQ(reason,
            "quota: tenant a at 2/2 nvidia-tesla-t4 devices, asks 1 more");

  const Allocation& t4 = AddPending("a-3", "a", 1, 0, {kT4});
  reason.clear();
  EXPECT_EQ(WithinQuota(snapshot_, "a", MatchSpec::Of(t4), &reason),
            std::nullopt);
  EXPECT_EQ(reason,
            "quota: tenant a at 2/2 nvidia-tesla-t4 devices, asks 1 more");
}

TEST_F(WithinQuotaTest, LeavesASpecNothingStopsAsItIs) {
  AddNode("n1", 4, kT4);
  AddNode("n2", 4, kL4);
  SetTenants({{"a", Quoted(2)}});
  const Allocation& any = AddPending("a-1", "a", 2, 0, {});
  std::string reason;
  std::optional<MatchSpec> spec =
      WithinQuota(snapshot_, "a", MatchSpec::Of(any), &reason);
  ASSERT_TRUE(spec.has_value());
  EXPECT_THAT(spec->requested_models, IsEmpty());
  EXPECT_EQ(reason, "");
}

// A reason already there is kept: WithinQuota only fills an empty one.
TEST_F(WithinQuotaTest, KeepsAReasonGivenAlready) {
  AddNode("n1", 4, kT4);
  SetTenants({{"a", Quoted(1)}});
  AddLive({.id = "a-1", .tenant = "a", .node = "n1", .units = 1});
  const Allocation& t4 = AddPending("a-2", "a", 1);
  std::string reason = "earlier";
  EXPECT_EQ(WithinQuota(snapshot_, "a", MatchSpec::Of(t4), &reason),
            std::nullopt);
  EXPECT_EQ(reason, "earlier");
}

// The quota half of the old AMemberWithinNominalMayReclaimFromABorrower (the
// reclaim half, ReclaimPossible, is in tests/core/tenants/): b within its
// nominal quota is stopped by its cohort only once the cohort is full, and
// is then told what it may take back; the reclaim plugin (preemption on)
// then may still help it though its shape is blocked.
TEST_F(WithinQuotaTest, AMemberWithinNominalMayReclaimFromABorrower) {
  AddNode("n1", 4);
  SetTenants({{"a", Quoted(2, "c")}, {"b", Quoted(2, "c")}});
  AddLive({.id = "a-1", .tenant = "a", .node = "n1", .units = 3});
  const Allocation& b = AddPending("b-1", "b", 1);
  const MatchSpec spec = MatchSpec::Of(b);
  std::string reason;
  Reclaim reclaim;
  // The cohort has room (3 + 1 <= 4): nothing to reclaim.
  EXPECT_TRUE(WithinQuota(snapshot_, "b", spec, &reason, &reclaim).has_value());
  EXPECT_EQ(reason, "");
  EXPECT_EQ(reclaim.milli, 0);

  AddLive({.id = "b-0", .tenant = "b", .node = "n1", .units = 1});
  reason.clear();
  EXPECT_EQ(WithinQuota(snapshot_, "b", spec, &reason, &reclaim), std::nullopt);
  EXPECT_EQ(reason,
            "quota: cohort c at 4/4 nvidia-tesla-t4 devices, tenant b asks 1 "
            "more");
  EXPECT_EQ(reclaim.pool, GpuPool(kT4));
  EXPECT_EQ(reclaim.milli, 1000);

  // What the old MayReclaim said: yes with preemption, no without (the
  // reclaim plugin is then not in the profile).
  for (bool preemption : {true, false}) {
    SCOPED_TRACE(preemption ? "preemption" : "no preemption");
    framework_ = MakeFramework({.preemption = preemption});
    std::unique_ptr<PassSession> s = NewSession();
    std::unique_ptr<CycleState> cycle = Cycle(*s, b, spec);
    EXPECT_EQ(framework_->MayHelpBlocked(s->session, *cycle), preemption);
  }
}

// A share is not helped past a blocked shape: it takes back quota only
// where it fits now (the old MayReclaim's "spec is a share").
TEST_F(WithinQuotaTest, AShareMayNotReclaimPastABlockedShape) {
  AddNode("n1", 4);
  SetTenants({{"a", Quoted(2, "c")}, {"b", Quoted(2, "c")}});
  AddLive({.id = "a-1", .tenant = "a", .node = "n1", .units = 3});
  AddLive({.id = "b-0", .tenant = "b", .node = "n1", .units = 1});
  const Allocation& b = AddPending("b-1", "b", 1);
  MatchSpec share = MatchSpec::Of(b);
  share.share = GpuShare{.compute_milli = 500};
  std::unique_ptr<PassSession> s = NewSession();
  EXPECT_FALSE(framework_->MayHelpBlocked(s->session, *Cycle(*s, b, share)));
  // The same request for a whole unit is.
  EXPECT_TRUE(
      framework_->MayHelpBlocked(s->session, *Cycle(*s, b, MatchSpec::Of(b))));
}

// --- QuotaPlugin::PreFilter ---

class QuotaPluginTest : public FrameworkFixture {
 protected:
  void SetUp() override {
    AddNode("n1", 4, kT4);
    AddNode("n2", 4, kL4);
  }

  QuotaPlugin plugin_;
};

TEST_F(QuotaPluginTest, NarrowsTheCycleSpecNotTheRequestedOne) {
  SetTenants({{"a", Quoted(2)}});
  AddLive({.id = "a-1", .tenant = "a", .node = "n1", .units = 2});
  const Allocation& any = AddPending("a-2", "a", 1, 0, {});
  const MatchSpec spec = MatchSpec::Of(any);
  std::unique_ptr<PassSession> s = NewSession();
  std::unique_ptr<CycleState> cycle = Cycle(*s, any, spec);

  const Verdict v = plugin_.PreFilter(s->session, *cycle);
  EXPECT_EQ(v.code, Verdict::Code::kSuccess);
  EXPECT_EQ(v.reason, "");
  EXPECT_EQ(v.detail,
            "narrowed to nvidia-l4: quota: tenant a at 2/2 nvidia-tesla-t4 "
            "devices, asks 1 more");
  EXPECT_THAT(cycle->spec().requested_models, ElementsAre(kL4));
  EXPECT_THAT(cycle->requested_spec().requested_models, IsEmpty());
  EXPECT_EQ(cycle->data().Find<QuotaRefusal>(), nullptr);
}

TEST_F(QuotaPluginTest, ASpecWithinQuotaIsLeftAsItIs) {
  SetTenants({{"a", Quoted(2)}});
  const Allocation& any = AddPending("a-1", "a", 1, 0, {});
  const MatchSpec spec = MatchSpec::Of(any);
  std::unique_ptr<PassSession> s = NewSession();
  std::unique_ptr<CycleState> cycle = Cycle(*s, any, spec);

  const Verdict v = plugin_.PreFilter(s->session, *cycle);
  EXPECT_EQ(v.code, Verdict::Code::kSuccess);
  EXPECT_EQ(v.detail, "");
  // Not narrowed: the cycle places the requested spec itself.
  EXPECT_EQ(&cycle->spec(), &cycle->requested_spec());
}

struct RefusalCase {
  const char* name;
  std::map<std::string, TenantPolicy> tenants;
  std::map<std::string, int> used;  // tenant -> T4 units it holds on n1
  std::string reason;
  int64_t reclaim_milli;  // what the QuotaRefusal names of the T4 pool

  friend void PrintTo(const RefusalCase& c, std::ostream* os) { *os << c.name; }
};

class QuotaRefusalTest : public QuotaPluginTest,
                         public testing::WithParamInterface<RefusalCase> {};

// b asks for one T4 and is refused: the reason is QuotaBlock's, and the
// refusal names what a reclaim would take back (0: nothing).
TEST_P(QuotaRefusalTest, IsUnschedulableWithTheReasonAndTheReclaim) {
  const RefusalCase& c = GetParam();
  SetTenants(c.tenants);
  for (const auto& [tenant, units] : c.used) {
    AddLive({.id = "live-" + tenant,
             .tenant = tenant,
             .node = "n1",
             .units = units});
  }
  const Allocation& b = AddPending("b-1", "b", 1, 0, {kT4});
  const MatchSpec spec = MatchSpec::Of(b);
  std::unique_ptr<PassSession> s = NewSession();
  std::unique_ptr<CycleState> cycle = Cycle(*s, b, spec);

  const Verdict v = plugin_.PreFilter(s->session, *cycle);
  EXPECT_EQ(v.code, Verdict::Code::kUnschedulable);
  EXPECT_EQ(v.reason, c.reason);
  EXPECT_EQ(v.detail, "");
  const QuotaRefusal* refusal = cycle->data().Find<QuotaRefusal>();
  ASSERT_NE(refusal, nullptr);
  EXPECT_EQ(refusal->reclaim.milli, c.reclaim_milli);
  if (c.reclaim_milli > 0) {
    EXPECT_EQ(refusal->reclaim.pool, GpuPool(kT4));
  }
  // A refusal narrows nothing.
  EXPECT_EQ(&cycle->spec(), &cycle->requested_spec());
}

INSTANTIATE_TEST_SUITE_P(
    Refusals, QuotaRefusalTest,
    testing::Values(
        RefusalCase{"OverNominalWithoutCohortReclaimsNothing",
                    {{"b", Quoted(1)}},
                    {{"b", 1}},
                    "quota: tenant b at 1/1 nvidia-tesla-t4 device, asks 1 "
                    "more",
                    0},
        RefusalCase{"CohortFullWithinNominalReclaimsTheExcess",
                    {{"a", Quoted(2, "c")}, {"b", Quoted(2, "c")}},
                    {{"a", 3}, {"b", 1}},
                    "quota: cohort c at 4/4 nvidia-tesla-t4 devices, tenant b "
                    "asks 1 more",
                    1000}),
    [](const testing::TestParamInfo<RefusalCase>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace accelsched
