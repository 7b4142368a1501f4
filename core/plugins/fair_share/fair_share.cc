#include "core/plugins/fair_share/fair_share.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "core/tenants/dominant_share.h"

namespace accelsched {
namespace {

// The session's shares, each tenant's computed on first use.
struct Shares : SessionState {
  explicit Shares(Session&) {}
  absl::flat_hash_map<std::string, double> by_tenant;
};

}  // namespace

std::unique_ptr<Plugin> FairSharePlugin::New() {
  return std::make_unique<FairSharePlugin>();
}

double FairSharePlugin::TenantRank(Session& session,
                                   const std::string& tenant) const {
  const Snapshot& snap = session.snapshot();
  if (snap.book == nullptr) return 0;
  auto& shares = session.StateOf<Shares>(*this).by_tenant;
  auto [it, fresh] = shares.try_emplace(tenant, 0.0);
  if (fresh) {
    it->second = DominantShare(*snap.index, *snap.book, *snap.tenants, tenant);
  }
  return it->second;
}

double FairSharePlugin::RankAdded(const Snapshot& snapshot,
                                  const Allocation& request) const {
  int64_t total = 0;
  for (const PoolKey& key : PoolsFor(*snapshot.index, request)) {
    if (const auto* pool = snapshot.index->FindPool(key)) total += pool->total;
  }
  return static_cast<double>(DemandMilli(request)) /
         (static_cast<double>(std::max<int64_t>(total, 1)) * kGpuMilli) /
         snapshot.tenants->Find(request.tenant).weight;
}

void FairSharePlugin::Reserve(Session& session, const CycleState& cycle,
                              const Groups& groups) const {
  session.StateOf<Shares>(*this).by_tenant.erase(cycle.request().tenant);
}

}  // namespace accelsched
