// What one allocation holds, and of which pool: the facts the book's
// indexes and the quotas are keyed by.
#ifndef ACCELSCHED_CORE_BOOK_ALLOCATION_HOLDS_H_
#define ACCELSCHED_CORE_BOOK_ALLOCATION_HOLDS_H_

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "core/catalog/capacity_index.h"
#include "core/model/allocation_model.h"

namespace accelsched {

// The pool an allocation's units are of.
PoolKey PoolOf(const Allocation& a);
// What a live allocation holding `units` units holds of its pool in
// thousandths of a unit: kGpuMilli per unit, or its share's compute_milli
// (a share holds no unit): what quotas and dominant shares count.
int64_t UsageMilliOf(const Allocation& a, size_t units);
// The unit key of the GPU an allocation holds a share of (a sharing GPU's
// unit is its whole device's: its device id); nullptr when it holds no share.
const std::string* SharedUnitOf(const Allocation& a);
// The nodes an allocation's devices are on (where its pod_resources are held).
std::set<std::string> NodesOf(const Allocation& a);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_BOOK_ALLOCATION_HOLDS_H_
