// The quota plugin (PreFilter): a tenant's usage of a pool stays within its
// nominal quota, or, in a cohort, borrows the cohort's unused nominal quota up
// to its borrowing limit (core/tenants/quota_usage.h); a pool it has no quota
// for is not limited. The request's models are narrowed to the pools its
// tenant may take DemandMilli more of (sorted); when none is left it is
// refused for now (kUnschedulable) with the first pool's reason, and leaves
// a QuotaRefusal naming the first pool a reclaim would open (the reclaim
// plugin's to act on).
#ifndef ACCELSCHED_CORE_PLUGINS_QUOTA_QUOTA_H_
#define ACCELSCHED_CORE_PLUGINS_QUOTA_QUOTA_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"
#include "core/framework/snapshot.h"
#include "core/matching/match_spec.h"

namespace accelsched {

// What of `pool` (thousandths of a unit) a tenant within its nominal quota
// may take back from its cohort's borrowers, when the cohort's quota is what
// stops it.
struct Reclaim {
  PoolKey pool;
  int64_t milli = 0;
};

// What the quota plugin leaves in a cycle it refused.
struct QuotaRefusal : CycleData {
  static constexpr char kKey[] = "quota";
  Reclaim reclaim;  // milli 0: no reclaim would open a pool
};

// `spec` narrowed to the pools `tenant` may take DemandMilli(spec) more of
// under its quota (models sorted when narrowed; `spec` as is when nothing
// stops it). When no pool is left the result is nullopt; either way
// `*reason` (when empty) gets the first non-empty QuotaBlock reason, and
// `*reclaim` (when not null and not yet set) the first pool a reclaim would
// open.
std::optional<MatchSpec> WithinQuota(const Snapshot& snapshot,
                                     absl::string_view tenant,
                                     const MatchSpec& spec, std::string* reason,
                                     Reclaim* reclaim = nullptr);

class QuotaPlugin final : public PreFilterPlugin {
 public:
  static constexpr char kName[] = "quota";
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }
  Verdict PreFilter(Session& session, CycleState& cycle) const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_QUOTA_QUOTA_H_
