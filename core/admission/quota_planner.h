// The quota verdicts of admission (Kueue's ClusterQueue quotas): a tenant's
// usage of a pool stays within its nominal quota, or, in a cohort, borrows
// the cohort's unused nominal quota up to its borrowing limit; a pool it has
// no quota for is not limited. A tenant within its nominal quota that its
// cohort's quota stops may reclaim what other members borrow. Stateless:
// every verdict is read from the context's book and policies as they are
// when asked (usage counts live allocations, PREEMPTED ones in their grace
// included). Quotas, usage and demands are in thousandths of a unit
// (tenant_policy.h), so that a GPU share counts as its fraction of a GPU.
#ifndef ACCELSCHED_CORE_ADMISSION_QUOTA_PLANNER_H_
#define ACCELSCHED_CORE_ADMISSION_QUOTA_PLANNER_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "core/admission/admission_context.h"

namespace accelsched {

// What of `pool` (thousandths of a unit) a tenant within its nominal quota
// may take back from its cohort's borrowers, when the cohort's quota is what
// stops it.
struct Reclaim {
  PoolKey pool;
  int64_t milli = 0;
};

// Why `tenant` (whose policy is `policy`) may not take `demand_milli` more
// of `pool`; "" when it may. The reasons, in the order they are checked
// (amounts in units, with decimals where shares make them fractional):
//   "quota: tenant a at 8/8 nvidia-tesla-a100 devices, asks 1 more"
//       (over its nominal quota, no cohort);
//   "quota: tenant a at 8/8 ... would borrow 3, over its borrowing limit 2";
//   "quota: cohort c at 16/16 ..., tenant a asks 1 more" (the cohort's
//       nominal quotas, summed over the members with a quota of `pool`).
// `*excess_milli` (when not null) is set, on the cohort's reason only, to
// what the cohort is short of when the tenant stays within its own nominal
// quota: what it may reclaim from borrowers. Left alone otherwise.
std::string QuotaBlock(const AdmissionContext& ctx, absl::string_view tenant,
                       const TenantPolicy& policy, const PoolKey& pool,
                       int64_t demand_milli, int64_t* excess_milli = nullptr);

// Whether `tenant` has a quota of `pool` and stays within its nominal quota
// after taking `demand_milli` more.
bool WithinNominal(const AdmissionContext& ctx, absl::string_view tenant,
                   const PoolKey& pool, int64_t demand_milli);

// What of `pool` `tenant` holds above its nominal quota (thousandths of a
// unit) that is not already preempted (that is being given back); 0 without
// a quota.
int64_t BorrowedMilli(const AdmissionContext& ctx, absl::string_view tenant,
                      const PoolKey& pool);

// `spec` narrowed to the pools `tenant` may take DemandMilli(spec) more of
// under its quota (models sorted when narrowed; `spec` as is
// when nothing stops it). When no pool is left the result is nullopt; either
// way `*reason` (when empty) gets the first non-empty QuotaBlock reason, and
// `*reclaim` (when not null and not yet set) the first pool a reclaim would
// open.
std::optional<MatchSpec> WithinQuota(const AdmissionContext& ctx,
                                     absl::string_view tenant,
                                     const MatchSpec& spec, std::string* reason,
                                     Reclaim* reclaim = nullptr);

// Whether `request`'s tenant may take back what others borrow of `pool`: it
// is in a cohort, within its nominal quota there even after `request`, and
// another member of its cohort borrows some of `pool`.
bool ReclaimPossible(const AdmissionContext& ctx, const Allocation& request,
                     const PoolKey& pool);

// Whether ReclaimPossible for some pool of `spec`, so that a request whose
// shape did not fit may still preempt borrowers for room; false when
// preemption is off or `spec` is a share (which reclaims only quota).
bool MayReclaim(const AdmissionContext& ctx, const Allocation& request,
                const MatchSpec& spec);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_ADMISSION_QUOTA_PLANNER_H_
