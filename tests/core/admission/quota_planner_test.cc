// The quota verdicts on their own: usage from a real allocation book,
// quotas and cohorts from TenantPolicies; no scheduler.
#include "core/admission/quota_planner.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/admission_fixture.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TenantPolicy QuotedMilli(int64_t nominal_milli, std::string cohort = "") {
  TenantPolicy p;
  p.cohort = std::move(cohort);
  p.quotas[GpuPool(kT4)] = Quota{nominal_milli, std::nullopt};
  return p;
}

// A quota of `nominal` T4s (or of `model`), in thousandths as Quota keeps it.
TenantPolicy Quoted(int64_t nominal, std::string cohort = "",
                    std::optional<int64_t> borrowing_limit = std::nullopt,
                    const char* model = kT4) {
  TenantPolicy p;
  p.cohort = std::move(cohort);
  p.quotas[GpuPool(model)] =
      Quota{nominal * kGpuMilli,
            borrowing_limit.has_value()
                ? std::optional<int64_t>(*borrowing_limit * kGpuMilli)
                : std::nullopt};
  return p;
}

struct BlockCase {
  const char* name;
  std::map<std::string, TenantPolicy> tenants;
  std::map<std::string, int> used;  // tenant -> T4 units it holds
  std::string tenant;
  int64_t demand_milli;
  std::string reason;    // "" : it may
  int64_t excess_milli;  // what a reclaim may take back

  friend void PrintTo(const BlockCase& c, std::ostream* os) { *os << c.name; }
};

class QuotaBlockTest : public AdmissionFixture,
                       public testing::WithParamInterface<BlockCase> {};

TEST_P(QuotaBlockTest, ReasonAndExcess) {
  const BlockCase& c = GetParam();
  AddNode("n1", 8);
  SetTenants(c.tenants);
  for (const auto& [tenant, units] : c.used) {
    AddLive({.id = "live-" + tenant,
             .tenant = tenant,
             .node = "n1",
             .units = units});
  }
  int64_t excess = 0;
  EXPECT_EQ(QuotaBlock(ctx_, c.tenant, tenants_.Find(c.tenant), GpuPool(kT4),
                       c.demand_milli, &excess),
            c.reason);
  EXPECT_EQ(excess, c.excess_milli);
}

INSTANTIATE_TEST_SUITE_P(
    Verdicts, QuotaBlockTest,
    testing::Values(
        BlockCase{"NoQuotaIsNotLimited",
                  {{"a", TenantPolicy()}},
                  {{"a", 6}},
                  "a",
                  2000,
                  "",
                  0},
        BlockCase{"WithinNominalWithoutCohort",
                  {{"a", Quoted(4)}},
                  {{"a", 2}},
                  "a",
                  2000,
                  "",
                  0},
        BlockCase{"OverNominalWithoutCohort",
                  {{"a", Quoted(2)}},
                  {{"a", 2}},
                  "a",
                  1000,
                  "quota: tenant a at 2/2 nvidia-tesla-t4 devices, asks 1 more",
                  0},
        BlockCase{"OneDeviceQuotaIsSingular",
                  {{"a", Quoted(1)}},
                  {{"a", 1}},
                  "a",
                  1000,
                  "quota: tenant a at 1/1 nvidia-tesla-t4 device, asks 1 more",
                  0},
        BlockCase{"BorrowsWithinLimitAndCohortRoom",
                  {{"a", Quoted(2, "c", 2)}, {"b", Quoted(4, "c")}},
                  {{"a", 2}},
                  "a",
                  2000,
                  "",
                  0},
        BlockCase{"OverBorrowingLimit",
                  {{"a", Quoted(2, "c", 1)}, {"b", Quoted(4, "c")}},
                  {{"a", 2}},
                  "a",
                  2000,
                  "quota: tenant a at 2/2 nvidia-tesla-t4 devices would "
                  "borrow 2, over its borrowing limit 1",
                  0},
        BlockCase{"CohortFullAndTenantOverNominalMayNotReclaim",
                  {{"a", Quoted(2, "c")}, {"b", Quoted(2, "c")}},
                  {{"a", 2}, {"b", 2}},
                  "a",
                  1000,
                  "quota: cohort c at 4/4 nvidia-tesla-t4 devices, tenant a "
                  "asks 1 more",
                  0},
        BlockCase{"CohortFullAndTenantWithinNominalMayReclaim",
                  {{"a", Quoted(2, "c")}, {"b", Quoted(2, "c")}},
                  {{"a", 3}, {"b", 1}},
                  "b",
                  1000,
                  "quota: cohort c at 4/4 nvidia-tesla-t4 devices, tenant b "
                  "asks 1 more",
                  1000},
        BlockCase{"CohortMemberWithoutQuotaOfThePoolIsNotCounted",
                  {{"a", Quoted(2, "c")},
                   {"b", Quoted(2, "c")},
                   {"z", Quoted(4, "c", std::nullopt, kL4)}},
                  {{"a", 1}, {"z", 4}},
                  "a",
                  1000,
                  "",
                  0},
        // A share asks for its compute_milli; a quota may be written in
        // thousandths (nominal_milli).
        BlockCase{"AShareWithinAQuotaInThousandths",
                  {{"a", QuotedMilli(1500)}},
                  {{"a", 1}},
                  "a",
                  500,
                  "",
                  0},
        BlockCase{"AShareOverAQuotaInThousandthsIsToldInDecimals",
                  {{"a", QuotedMilli(1500)}},
                  {{"a", 1}},
                  "a",
                  600,
                  "quota: tenant a at 1/1.5 nvidia-tesla-t4 devices, asks 0.6 "
                  "more",
                  0},
        BlockCase{"ACohortReclaimsInThousandths",
                  {{"a", QuotedMilli(1500, "c")}, {"b", Quoted(2, "c")}},
                  {{"a", 1}, {"b", 3}},
                  "a",
                  250,
                  "quota: cohort c at 4/3.5 nvidia-tesla-t4 devices, tenant a "
                  "asks 0.25 more",
                  750}),
    [](const testing::TestParamInfo<BlockCase>& info) {
      return std::string(info.param.name);
    });

class QuotaPlannerTest : public AdmissionFixture {};

TEST_F(QuotaPlannerTest, BorrowedLeavesOutPreemptedUnits) {
  AddNode("n1", 8);
  SetTenants({{"a", Quoted(2, "c")}, {"b", Quoted(2, "c")}});
  AddLive({.id = "a-1", .tenant = "a", .node = "n1", .units = 2});
  AddLive({.id = "a-2", .tenant = "a", .node = "n1", .units = 2});
  EXPECT_EQ(BorrowedMilli(ctx_, "a", GpuPool(kT4)), 2000);
  EXPECT_EQ(BorrowedMilli(ctx_, "b", GpuPool(kT4)), 0);
  EXPECT_EQ(BorrowedMilli(ctx_, "nobody", GpuPool(kT4)), 0);
  Preempted("a-2", "b-1");
  // Still used (in its grace), but being given back.
  EXPECT_EQ(book_.UsageMilli("a", GpuPool(kT4)), 4000);
  EXPECT_EQ(BorrowedMilli(ctx_, "a", GpuPool(kT4)), 0);
}

TEST_F(QuotaPlannerTest, WithinNominalNeedsAQuota) {
  AddNode("n1", 8);
  SetTenants({{"a", Quoted(2)}});
  AddLive({.id = "a-1", .tenant = "a", .node = "n1", .units = 1});
  EXPECT_TRUE(WithinNominal(ctx_, "a", GpuPool(kT4), 1000));
  EXPECT_FALSE(WithinNominal(ctx_, "a", GpuPool(kT4), 1001));
  EXPECT_FALSE(WithinNominal(ctx_, "a", GpuPool(kL4), 0));
  EXPECT_FALSE(WithinNominal(ctx_, "nobody", GpuPool(kT4), 0));
}

TEST_F(QuotaPlannerTest, WithinQuotaNarrowsToThePoolsLeft) {
  AddNode("n1", 4, kT4);
  AddNode("n2", 4, kL4);
  SetTenants({{"a", Quoted(2)}});
  AddLive({.id = "a-1", .tenant = "a", .node = "n1", .units = 2});
  const Allocation& any = AddPending("a-2", "a", 1, 0, {});
  std::string reason;
  std::optional<MatchSpec> spec = WithinQuota(ctx_, "a", SpecOf(any), &reason);
  ASSERT_TRUE(spec.has_value());
  EXPECT_THAT(spec->requested_models, ElementsAre(kL4));
  EXPECT_EQ(reason,
            "quota: tenant a at 2/2 nvidia-tesla-t4 devices, asks 1 more");

  const Allocation& t4 = AddPending("a-3", "a", 1, 0, {kT4});
  reason.clear();
  EXPECT_EQ(WithinQuota(ctx_, "a", SpecOf(t4), &reason), std::nullopt);
  EXPECT_EQ(reason,
            "quota: tenant a at 2/2 nvidia-tesla-t4 devices, asks 1 more");
}

TEST_F(QuotaPlannerTest, WithinQuotaLeavesASpecNothingStopsAsItIs) {
  AddNode("n1", 4, kT4);
  AddNode("n2", 4, kL4);
  SetTenants({{"a", Quoted(2)}});
  const Allocation& any = AddPending("a-1", "a", 2, 0, {});
  std::string reason;
  std::optional<MatchSpec> spec = WithinQuota(ctx_, "a", SpecOf(any), &reason);
  ASSERT_TRUE(spec.has_value());
  EXPECT_THAT(spec->requested_models, IsEmpty());
  EXPECT_EQ(reason, "");
}

TEST_F(QuotaPlannerTest, AMemberWithinNominalMayReclaimFromABorrower) {
  AddNode("n1", 4);
  SetTenants({{"a", Quoted(2, "c")}, {"b", Quoted(2, "c")}});
  AddLive({.id = "a-1", .tenant = "a", .node = "n1", .units = 3});
  const Allocation& b = AddPending("b-1", "b", 1);
  std::string reason;
  Reclaim reclaim;
  // The cohort has room (3 + 1 <= 4): nothing to reclaim.
  EXPECT_TRUE(WithinQuota(ctx_, "b", SpecOf(b), &reason, &reclaim).has_value());
  EXPECT_EQ(reason, "");
  EXPECT_EQ(reclaim.milli, 0);

  AddLive({.id = "b-0", .tenant = "b", .node = "n1", .units = 1});
  reason.clear();
  EXPECT_EQ(WithinQuota(ctx_, "b", SpecOf(b), &reason, &reclaim), std::nullopt);
  EXPECT_EQ(reason,
            "quota: cohort c at 4/4 nvidia-tesla-t4 devices, tenant b asks 1 "
            "more");
  EXPECT_EQ(reclaim.pool, GpuPool(kT4));
  EXPECT_EQ(reclaim.milli, 1000);
  EXPECT_TRUE(ReclaimPossible(ctx_, b, GpuPool(kT4)));
  EXPECT_TRUE(MayReclaim(ctx_, b, SpecOf(b)));
  // a borrows: it may not reclaim from anyone.
  const Allocation& a = AddPending("a-2", "a", 1);
  EXPECT_FALSE(ReclaimPossible(ctx_, a, GpuPool(kT4)));
  ctx_.preemption = false;
  EXPECT_FALSE(MayReclaim(ctx_, b, SpecOf(b)));
}

}  // namespace
}  // namespace accelsched
