// A tenant's dominant resource share (DRF): the largest fraction of any
// pool's units it holds (live allocations, PREEMPTED ones in their grace
// included; a GPU share as its fraction of a unit), divided by its weight.
// What the fair_share plugin orders tenants by, what GetQueue and the metrics
// show. Pure function.
#ifndef ACCELSCHED_CORE_TENANTS_DOMINANT_SHARE_H_
#define ACCELSCHED_CORE_TENANTS_DOMINANT_SHARE_H_

#include "absl/strings/string_view.h"
#include "core/book/allocation_book.h"
#include "core/catalog/capacity_index.h"
#include "core/tenants/tenant_policy.h"

namespace accelsched {

// 0 for a tenant holding nothing; pools with no units are left out.
double DominantShare(const CapacityIndex& index, const AllocationBook& book,
                     const TenantPolicies& tenants, absl::string_view tenant);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_TENANTS_DOMINANT_SHARE_H_
