// Quota usage on its own (core/tenants/quota_usage.h): usage from a real
// allocation book, quotas and cohorts from TenantPolicies; no framework.
#include "core/tenants/quota_usage.h"

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "core/model/gpu_share.h"
#include "gtest/gtest.h"
#include "tests/support/framework_fixture.h"

namespace accelsched {
namespace {

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

class QuotaBlockTest : public FrameworkFixture,
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
  EXPECT_EQ(QuotaBlock(book_, tenants_, c.tenant, tenants_.Find(c.tenant),
                       GpuPool(kT4), c.demand_milli, &excess),
            c.reason);
  EXPECT_EQ(excess, c.excess_milli);
  // Without a place for the excess the reason is the same.
  EXPECT_EQ(QuotaBlock(book_, tenants_, c.tenant, tenants_.Find(c.tenant),
                       GpuPool(kT4), c.demand_milli),
            c.reason);
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

class QuotaUsageTest : public FrameworkFixture {};

TEST_F(QuotaUsageTest, BorrowedLeavesOutPreemptedUnits) {
  AddNode("n1", 8);
  SetTenants({{"a", Quoted(2, "c")}, {"b", Quoted(2, "c")}});
  AddLive({.id = "a-1", .tenant = "a", .node = "n1", .units = 2});
  AddLive({.id = "a-2", .tenant = "a", .node = "n1", .units = 2});
  EXPECT_EQ(BorrowedMilli(book_, tenants_, "a", GpuPool(kT4)), 2000);
  EXPECT_EQ(BorrowedMilli(book_, tenants_, "b", GpuPool(kT4)), 0);
  EXPECT_EQ(BorrowedMilli(book_, tenants_, "nobody", GpuPool(kT4)), 0);
  Preempted("a-2", "b-1");
  // Still used (in its grace), but being given back.
  EXPECT_EQ(book_.tallies().UsageMilli("a", GpuPool(kT4)), 4000);
  EXPECT_EQ(BorrowedMilli(book_, tenants_, "a", GpuPool(kT4)), 0);
}

TEST_F(QuotaUsageTest, WithinNominalNeedsAQuota) {
  AddNode("n1", 8);
  SetTenants({{"a", Quoted(2)}});
  AddLive({.id = "a-1", .tenant = "a", .node = "n1", .units = 1});
  EXPECT_TRUE(WithinNominal(book_, tenants_, "a", GpuPool(kT4), 1000));
  EXPECT_FALSE(WithinNominal(book_, tenants_, "a", GpuPool(kT4), 1001));
  EXPECT_FALSE(WithinNominal(book_, tenants_, "a", GpuPool(kL4), 0));
  EXPECT_FALSE(WithinNominal(book_, tenants_, "nobody", GpuPool(kT4), 0));
}

// The reclaim half of the old AMemberWithinNominalMayReclaimFromABorrower
// (the quota half is in tests/core/plugins/quota/quota_test.cc): b, within
// its nominal quota, may take back what a borrows; a, the borrower, may not.
TEST_F(QuotaUsageTest, AMemberWithinNominalMayReclaimFromABorrower) {
  AddNode("n1", 4);
  SetTenants({{"a", Quoted(2, "c")}, {"b", Quoted(2, "c")}});
  AddLive({.id = "a-1", .tenant = "a", .node = "n1", .units = 3});
  AddLive({.id = "b-0", .tenant = "b", .node = "n1", .units = 1});
  const Allocation& b = AddPending("b-1", "b", 1);
  EXPECT_TRUE(ReclaimPossible(book_, tenants_, b, GpuPool(kT4)));
  // a borrows: it may not reclaim from anyone.
  const Allocation& a = AddPending("a-2", "a", 1);
  EXPECT_FALSE(ReclaimPossible(book_, tenants_, a, GpuPool(kT4)));
}

struct ReclaimCase {
  const char* name;
  std::map<std::string, TenantPolicy> tenants;
  std::map<std::string, int> used;  // tenant -> T4 units it holds
  int count;                        // what b asks for
  bool possible;

  friend void PrintTo(const ReclaimCase& c, std::ostream* os) { *os << c.name; }
};

class ReclaimPossibleTest : public FrameworkFixture,
                            public testing::WithParamInterface<ReclaimCase> {};

// Each condition of ReclaimPossible on its own: b asks, a may borrow.
TEST_P(ReclaimPossibleTest, ForTenantB) {
  const ReclaimCase& c = GetParam();
  AddNode("n1", 8);
  SetTenants(c.tenants);
  for (const auto& [tenant, units] : c.used) {
    AddLive({.id = "live-" + tenant,
             .tenant = tenant,
             .node = "n1",
             .units = units});
  }
  const Allocation& b = AddPending("b-1", "b", c.count);
  EXPECT_EQ(ReclaimPossible(book_, tenants_, b, GpuPool(kT4)), c.possible);
}

INSTANTIATE_TEST_SUITE_P(
    Conditions, ReclaimPossibleTest,
    testing::Values(
        ReclaimCase{"AnotherMemberBorrows",
                    {{"a", Quoted(2, "c")}, {"b", Quoted(2, "c")}},
                    {{"a", 3}},
                    1,
                    true},
        ReclaimCase{"NoCohort",
                    {{"a", Quoted(2)}, {"b", Quoted(2)}},
                    {{"a", 3}},
                    1,
                    false},
        // Within nominal "even after the request": 2 more would be 3/2.
        ReclaimCase{"OverNominalAfterTheRequest",
                    {{"a", Quoted(2, "c")}, {"b", Quoted(2, "c")}},
                    {{"a", 3}, {"b", 1}},
                    2,
                    false},
        ReclaimCase{"NobodyBorrows",
                    {{"a", Quoted(2, "c")}, {"b", Quoted(2, "c")}},
                    {{"a", 2}},
                    1,
                    false},
        // Another cohort's borrower is not b's to take from.
        ReclaimCase{"ABorrowerOfAnotherCohort",
                    {{"a", Quoted(2, "d")},
                     {"d2", Quoted(4, "d")},
                     {"b", Quoted(2, "c")}},
                    {{"a", 3}},
                    1,
                    false}),
    [](const testing::TestParamInfo<ReclaimCase>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace accelsched
