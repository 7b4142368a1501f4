#include "core/tenants/dominant_share.h"

#include <algorithm>

#include "core/model/gpu_share.h"

namespace accelsched {

double DominantShare(const CapacityIndex& index, const AllocationBook& book,
                     const TenantPolicies& tenants, absl::string_view tenant) {
  auto usage = book.tallies().usage_milli().find(tenant);
  if (usage == book.tallies().usage_milli().end()) return 0;
  double share = 0;
  for (const auto& [key, used_milli] : usage->second) {
    const CapacityIndex::Pool* pool = index.FindPool(key);
    if (pool == nullptr || pool->total == 0) continue;
    share = std::max(share, static_cast<double>(used_milli) /
                                (static_cast<double>(pool->total) * kGpuMilli));
  }
  return share / tenants.Find(tenant).weight;
}

}  // namespace accelsched
