// What is read off the capacity index's pools as a whole: the pools of one
// device class and partition, and the capacity of every pool.
#ifndef ACCELSCHED_CORE_CATALOG_POOL_QUERIES_H_
#define ACCELSCHED_CORE_CATALOG_POOL_QUERIES_H_

#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/catalog/capacity_index.h"
#include "core/model/capacity.h"

namespace accelsched {

// The pools of `index` of `device_class` with `partition`, in model order.
std::vector<std::pair<const PoolKey*, const CapacityIndex::Pool*>> PoolsOf(
    const CapacityIndex& index, DeviceClass device_class,
    absl::string_view partition);

// Every pool's totals, in pool order.
std::vector<CapacityEntry> CapacityOf(const CapacityIndex& index);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_CATALOG_POOL_QUERIES_H_
