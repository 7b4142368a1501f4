#include "core/tenants/quota_usage.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/matching/match_spec.h"

namespace accelsched {
namespace {

// "2.5 nvidia-tesla-t4 devices", "1 nvidia-tesla-t4 device".
std::string Plural(const PoolKey& pool, int64_t milli) {
  return absl::StrCat(UnitName(pool), milli == kGpuMilli ? "" : "s");
}

}  // namespace

std::string QuotaBlock(const AllocationBook& book,
                       const TenantPolicies& tenants, absl::string_view tenant,
                       const TenantPolicy& policy, const PoolKey& pool,
                       int64_t demand_milli, int64_t* excess_milli) {
  auto q = policy.quotas.find(pool);
  if (q == policy.quotas.end()) return "";
  const int64_t used = book.tallies().UsageMilli(tenant, pool);
  const int64_t nominal = q->second.nominal_milli;
  const bool within = used + demand_milli <= nominal;
  if (within && policy.cohort.empty()) return "";
  if (policy.cohort.empty()) {
    return absl::StrCat("quota: tenant ", tenant, " at ", MilliUnitsText(used),
                        "/", MilliUnitsText(nominal), " ",
                        Plural(pool, nominal), ", asks ",
                        MilliUnitsText(demand_milli), " more");
  }
  const int64_t borrow = used + demand_milli - nominal;
  if (!within && q->second.borrowing_limit_milli &&
      borrow > *q->second.borrowing_limit_milli) {
    return absl::StrCat("quota: tenant ", tenant, " at ", MilliUnitsText(used),
                        "/", MilliUnitsText(nominal), " ",
                        Plural(pool, nominal), " would borrow ",
                        MilliUnitsText(borrow), ", over its borrowing limit ",
                        MilliUnitsText(*q->second.borrowing_limit_milli));
  }
  int64_t cohort_nominal = 0, cohort_used = 0;
  for (const std::string& member : tenants.CohortMembers(policy.cohort)) {
    const TenantPolicy& m = tenants.Find(member);
    auto mq = m.quotas.find(pool);
    if (mq == m.quotas.end()) continue;
    cohort_nominal += mq->second.nominal_milli;
    cohort_used += book.tallies().UsageMilli(member, pool);
  }
  if (cohort_used + demand_milli > cohort_nominal) {
    if (within && excess_milli != nullptr) {
      *excess_milli = cohort_used + demand_milli - cohort_nominal;
    }
    return absl::StrCat(
        "quota: cohort ", policy.cohort, " at ", MilliUnitsText(cohort_used),
        "/", MilliUnitsText(cohort_nominal), " ", Plural(pool, cohort_nominal),
        ", tenant ", tenant, " asks ", MilliUnitsText(demand_milli), " more");
  }
  return "";
}

bool WithinNominal(const AllocationBook& book, const TenantPolicies& tenants,
                   absl::string_view tenant, const PoolKey& pool,
                   int64_t demand_milli) {
  const TenantPolicy& policy = tenants.Find(tenant);
  auto q = policy.quotas.find(pool);
  return q != policy.quotas.end() &&
         book.tallies().UsageMilli(tenant, pool) + demand_milli <=
             q->second.nominal_milli;
}

int64_t BorrowedMilli(const AllocationBook& book, const TenantPolicies& tenants,
                      absl::string_view tenant, const PoolKey& pool) {
  const TenantPolicy& policy = tenants.Find(tenant);
  auto q = policy.quotas.find(pool);
  if (q == policy.quotas.end()) return 0;
  return std::max<int64_t>(
      0, book.tallies().UsageMilli(tenant, pool) -
             book.tallies().PreemptedUsageMilli(tenant, pool) -
             q->second.nominal_milli);
}

bool ReclaimPossible(const AllocationBook& book, const TenantPolicies& tenants,
                     const Allocation& p, const PoolKey& key) {
  const TenantPolicy& policy = tenants.Find(p.tenant);
  if (policy.cohort.empty() ||
      !WithinNominal(book, tenants, p.tenant, key, DemandMilli(p))) {
    return false;
  }
  for (const std::string& m : tenants.CohortMembers(policy.cohort)) {
    if (m != p.tenant && BorrowedMilli(book, tenants, m, key) > 0) return true;
  }
  return false;
}

}  // namespace accelsched
