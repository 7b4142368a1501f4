// The quota verdicts of admission (Kueue's ClusterQueue quotas): a tenant's
// usage of a pool stays within its nominal quota, or, in a cohort, borrows
// the cohort's unused nominal quota up to its borrowing limit; a pool it has
// no quota for is not limited. A tenant within its nominal quota that its
// cohort's quota stops may reclaim what other members borrow. Stateless:
// every verdict is read from the context's book and policies as they are
// when asked (usage counts live allocations, PREEMPTED ones in their grace
// included).
#ifndef ACCELSCHED_CORE_ADMISSION_QUOTA_PLANNER_H_
#define ACCELSCHED_CORE_ADMISSION_QUOTA_PLANNER_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "core/admission/admission_context.h"

namespace accelsched {

// Units of `pool` a tenant within its nominal quota may take back from its
// cohort's borrowers, when the cohort's quota is what stops it.
struct Reclaim {
  PoolKey pool;
  int64_t units = 0;
};

// Why `tenant` (whose policy is `policy`) may not take `demand` more units of
// `pool`; "" when it may. The reasons, in the order they are checked:
//   "quota: tenant a at 8/8 nvidia-tesla-a100 devices, asks 1 more"
//       (over its nominal quota, no cohort);
//   "quota: tenant a at 8/8 ... would borrow 3, over its borrowing limit 2";
//   "quota: cohort c at 16/16 ..., tenant a asks 1 more" (the cohort's
//       nominal quotas, summed over the members with a quota of `pool`).
// `*excess` (when not null) is set, on the cohort's reason only, to the
// units the cohort is short of when the tenant stays within its own nominal
// quota: what it may reclaim from borrowers. Left alone otherwise.
std::string QuotaBlock(const AdmissionContext& ctx, absl::string_view tenant,
                       const TenantPolicy& policy, const PoolKey& pool,
                       int64_t demand, int64_t* excess = nullptr);

// Whether `tenant` has a quota of `pool` and stays within its nominal quota
// after taking `demand` more units.
bool WithinNominal(const AdmissionContext& ctx, absl::string_view tenant,
                   const PoolKey& pool, int64_t demand);

// Units of `pool` `tenant` holds above its nominal quota that are not
// already preempted (those are being given back); 0 without a quota.
int64_t Borrowed(const AdmissionContext& ctx, absl::string_view tenant,
                 const PoolKey& pool);

// `spec` narrowed to the pools `tenant` may take spec.count x spec.replicas
// more units of under its quota (models sorted when narrowed; `spec` as is
// when nothing stops it). When no pool is left the result is nullopt; either
// way `*reason` (when empty) gets the first non-empty QuotaBlock reason, and
// `*reclaim` (when not null and not yet set) the first pool a reclaim would
// open.
std::optional<MatchSpec> WithinQuota(const AdmissionContext& ctx,
                                     absl::string_view tenant,
                                     const MatchSpec& spec, std::string* reason,
                                     Reclaim* reclaim = nullptr);

// Whether `request`'s tenant may take back borrowed units of `pool`: it is
// in a cohort, within its nominal quota there even after `request`, and
// another member of its cohort borrows units of `pool`.
bool ReclaimPossible(const AdmissionContext& ctx, const Allocation& request,
                     const PoolKey& pool);

// Whether ReclaimPossible for some pool of `spec`; false when preemption is
// off.
bool MayReclaim(const AdmissionContext& ctx, const Allocation& request,
                const MatchSpec& spec);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_ADMISSION_QUOTA_PLANNER_H_
