#include "core/admission/dominant_share.h"

#include <algorithm>

namespace accelsched {

double DominantShare(const AdmissionContext& ctx, absl::string_view tenant) {
  auto usage = ctx.book->usage_milli().find(tenant);
  if (usage == ctx.book->usage_milli().end()) return 0;
  double share = 0;
  for (const auto& [key, used_milli] : usage->second) {
    const CapacityIndex::Pool* pool = ctx.catalog->index().FindPool(key);
    if (pool == nullptr || pool->total == 0) continue;
    share = std::max(share, static_cast<double>(used_milli) /
                                (static_cast<double>(pool->total) * kGpuMilli));
  }
  return share / ctx.tenants->Find(tenant).weight;
}

double ShareCache::Share(const std::string& tenant) {
  auto [it, fresh] = shares_.try_emplace(tenant, 0.0);
  if (fresh) it->second = DominantShare(ctx_, tenant);
  return it->second;
}

}  // namespace accelsched
