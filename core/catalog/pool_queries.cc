#include "core/catalog/pool_queries.h"

namespace accelsched {

std::vector<std::pair<const PoolKey*, const CapacityIndex::Pool*>> PoolsOf(
    const CapacityIndex& index, DeviceClass device_class,
    absl::string_view partition) {
  std::vector<std::pair<const PoolKey*, const CapacityIndex::Pool*>> out;
  const std::map<PoolKey, CapacityIndex::Pool>& pools = index.pools();
  for (auto it = pools.lower_bound(PoolKey{device_class, "", ""});
       it != pools.end() && it->first.device_class == device_class; ++it) {
    if (it->first.partition == partition) {
      out.emplace_back(&it->first, &it->second);
    }
  }
  return out;
}

std::vector<CapacityEntry> CapacityOf(const CapacityIndex& index) {
  std::vector<CapacityEntry> out;
  out.reserve(index.pools().size());
  for (const auto& [key, pool] : index.pools()) {
    out.push_back(CapacityEntry{key.device_class, key.model, key.partition,
                                pool.total, pool.allocated, pool.free(),
                                pool.unhealthy, pool.free_share_milli,
                                pool.free_share_memory, pool.shared_milli});
  }
  return out;
}

}  // namespace accelsched
