#include "core/admission/quota_planner.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace accelsched {
namespace {

// "2.5 nvidia-tesla-t4 devices", "1 nvidia-tesla-t4 device".
std::string Plural(const PoolKey& pool, int64_t milli) {
  return absl::StrCat(UnitName(pool), milli == kGpuMilli ? "" : "s");
}

}  // namespace

std::string QuotaBlock(const AdmissionContext& ctx, absl::string_view tenant,
                       const TenantPolicy& policy, const PoolKey& pool,
                       int64_t demand_milli, int64_t* excess_milli) {
  auto q = policy.quotas.find(pool);
  if (q == policy.quotas.end()) return "";
  const int64_t used = ctx.book->UsageMilli(tenant, pool);
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
  for (const std::string& member : ctx.tenants->CohortMembers(policy.cohort)) {
    const TenantPolicy& m = ctx.tenants->Find(member);
    auto mq = m.quotas.find(pool);
    if (mq == m.quotas.end()) continue;
    cohort_nominal += mq->second.nominal_milli;
    cohort_used += ctx.book->UsageMilli(member, pool);
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

bool WithinNominal(const AdmissionContext& ctx, absl::string_view tenant,
                   const PoolKey& pool, int64_t demand_milli) {
  const TenantPolicy& policy = ctx.tenants->Find(tenant);
  auto q = policy.quotas.find(pool);
  return q != policy.quotas.end() &&
         ctx.book->UsageMilli(tenant, pool) + demand_milli <=
             q->second.nominal_milli;
}

int64_t BorrowedMilli(const AdmissionContext& ctx, absl::string_view tenant,
                      const PoolKey& pool) {
  const TenantPolicy& policy = ctx.tenants->Find(tenant);
  auto q = policy.quotas.find(pool);
  if (q == policy.quotas.end()) return 0;
  return std::max<int64_t>(0, ctx.book->UsageMilli(tenant, pool) -
                                  ctx.book->PreemptedUsageMilli(tenant, pool) -
                                  q->second.nominal_milli);
}

std::optional<MatchSpec> WithinQuota(const AdmissionContext& ctx,
                                     absl::string_view tenant,
                                     const MatchSpec& spec, std::string* reason,
                                     Reclaim* reclaim) {
  const TenantPolicy& policy = ctx.tenants->Find(tenant);
  if (policy.quotas.empty()) return spec;
  std::vector<std::string> allowed;
  bool narrowed = false;
  for (const PoolKey& pool : PoolsFor(ctx.catalog->index(), spec)) {
    int64_t excess = 0;
    std::string why =
        QuotaBlock(ctx, tenant, policy, pool, DemandMilli(spec), &excess);
    if (excess > 0 && reclaim != nullptr && reclaim->milli == 0) {
      *reclaim = Reclaim{pool, excess};
    }
    if (why.empty()) {
      allowed.push_back(pool.model);
    } else {
      narrowed = true;
      if (reason->empty()) *reason = std::move(why);
    }
  }
  if (!narrowed) return spec;
  if (allowed.empty()) return std::nullopt;
  MatchSpec out = spec;
  std::sort(allowed.begin(), allowed.end());
  out.requested_models = std::move(allowed);
  return out;
}

bool ReclaimPossible(const AdmissionContext& ctx, const Allocation& p,
                     const PoolKey& key) {
  const TenantPolicy& policy = ctx.tenants->Find(p.tenant);
  if (policy.cohort.empty() ||
      !WithinNominal(ctx, p.tenant, key, DemandMilli(SpecOf(p)))) {
    return false;
  }
  for (const std::string& m : ctx.tenants->CohortMembers(policy.cohort)) {
    if (m != p.tenant && BorrowedMilli(ctx, m, key) > 0) return true;
  }
  return false;
}

bool MayReclaim(const AdmissionContext& ctx, const Allocation& p,
                const MatchSpec& spec) {
  // A share takes back quota only where it fits now (ChooseReclaimVictims,
  // before this is asked); it does not preempt borrowers to make room on a
  // node (README, "GPU sharing").
  if (!ctx.preemption || spec.share.has_value()) return false;
  for (const PoolKey& key : PoolsFor(ctx.catalog->index(), spec)) {
    if (ReclaimPossible(ctx, p, key)) return true;
  }
  return false;
}

}  // namespace accelsched
