// What tenants hold against their quotas (Kueue's ClusterQueue quotas): a
// tenant's usage of a pool stays within its nominal quota, or, in a cohort,
// borrows the cohort's unused nominal quota up to its borrowing limit; a pool
// it has no quota for is not limited. Facts read from the allocation book
// (usage counts live allocations, PREEMPTED ones in their grace included)
// and the policies as they are when asked, for the quota, reclaim and
// preemption plugins. Amounts in thousandths of a unit (tenant_policy.h), so
// that a GPU share counts as its fraction of a GPU. Pure functions.
#ifndef ACCELSCHED_CORE_TENANTS_QUOTA_USAGE_H_
#define ACCELSCHED_CORE_TENANTS_QUOTA_USAGE_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "core/book/allocation_book.h"
#include "core/model/allocation_model.h"
#include "core/model/unit.h"
#include "core/tenants/tenant_policy.h"

namespace accelsched {

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
std::string QuotaBlock(const AllocationBook& book,
                       const TenantPolicies& tenants, absl::string_view tenant,
                       const TenantPolicy& policy, const PoolKey& pool,
                       int64_t demand_milli, int64_t* excess_milli = nullptr);

// Whether `tenant` has a quota of `pool` and stays within its nominal quota
// after taking `demand_milli` more.
bool WithinNominal(const AllocationBook& book, const TenantPolicies& tenants,
                   absl::string_view tenant, const PoolKey& pool,
                   int64_t demand_milli);

// What of `pool` `tenant` holds above its nominal quota (thousandths of a
// unit) that is not already preempted (that is being given back); 0 without
// a quota.
int64_t BorrowedMilli(const AllocationBook& book,
                      const TenantPolicies& tenants, absl::string_view tenant,
                      const PoolKey& pool);

// Whether `request`'s tenant may take back what others borrow of `pool`: it
// is in a cohort, within its nominal quota there even after `request`, and
// another member of its cohort borrows some of `pool`.
bool ReclaimPossible(const AllocationBook& book, const TenantPolicies& tenants,
                     const Allocation& request, const PoolKey& pool);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_TENANTS_QUOTA_USAGE_H_
