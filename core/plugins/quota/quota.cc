#include "core/plugins/quota/quota.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/tenants/quota_usage.h"

namespace accelsched {

std::optional<MatchSpec> WithinQuota(const Snapshot& snapshot,
                                     absl::string_view tenant,
                                     const MatchSpec& spec, std::string* reason,
                                     Reclaim* reclaim) {
  const TenantPolicy& policy = snapshot.tenants->Find(tenant);
  if (policy.quotas.empty() || snapshot.book == nullptr) return spec;
  std::vector<std::string> allowed;
  bool narrowed = false;
  for (const PoolKey& pool : PoolsFor(*snapshot.index, spec)) {
    int64_t excess = 0;
    std::string why = QuotaBlock(*snapshot.book, *snapshot.tenants, tenant,
                                 policy, pool, DemandMilli(spec), &excess);
    if (excess > 0 && reclaim != nullptr && reclaim->milli == 0) {
      *reclaim = Reclaim{pool, excess};
    }
    if (why.empty()) {
      allowed.push_back(pool.model);
    } else {
      narrowed = true;
      if (reason->empty()) *reason = std::move(why);
    }
  }
  if (!narrowed) return spec;
  if (allowed.empty()) return std::nullopt;
  MatchSpec out = spec;
  std::sort(allowed.begin(), allowed.end());
  out.requested_models = std::move(allowed);
  return out;
}

std::unique_ptr<Plugin> QuotaPlugin::New() {
  return std::make_unique<QuotaPlugin>();
}

Verdict QuotaPlugin::PreFilter(Session& session, CycleState& cycle) const {
  std::string why;
  Reclaim reclaim;
  std::optional<MatchSpec> allowed = WithinQuota(
      cycle.snapshot(), cycle.request().tenant, cycle.spec(), &why, &reclaim);
  if (!allowed.has_value()) {
    cycle.data().Emplace<QuotaRefusal>().reclaim = reclaim;
    return Verdict::Unschedulable(std::move(why));
  }
  if (allowed->requested_models == cycle.spec().requested_models) {
    return Verdict::Success();
  }
  std::string detail =
      absl::StrCat("narrowed to ",
                   absl::StrJoin(allowed->requested_models, ", "), ": ", why);
  cycle.Narrow(*std::move(allowed));
  return Verdict::Success(std::move(detail));
}

}  // namespace accelsched
