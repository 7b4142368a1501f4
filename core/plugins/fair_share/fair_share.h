// The fair_share plugin (QueueSort, Reserve): within a priority, the tenant
// with the lowest weighted dominant resource share (DRF,
// core/tenants/dominant_share.h) goes first. A pass computes a tenant's share
// once and again after each admission of its own (Reserve), so that a walk
// over many groups of a tenant does not recompute it.
#ifndef ACCELSCHED_CORE_PLUGINS_FAIR_SHARE_FAIR_SHARE_H_
#define ACCELSCHED_CORE_PLUGINS_FAIR_SHARE_FAIR_SHARE_H_

#include <memory>
#include <string>

#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"
#include "core/framework/session.h"

namespace accelsched {

class FairSharePlugin final : public QueueSortPlugin, public ReservePlugin {
 public:
  static constexpr char kName[] = "fair_share";
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }
  // The tenant's dominant share as of its first use in the session since
  // its last admission there; 0 without an allocation book.
  double TenantRank(Session& session, const std::string& tenant) const override;
  // What admitting `request` adds to its tenant's share, counted against
  // every pool it may take: its DemandMilli over their units, divided by the
  // tenant's weight.
  double RankAdded(const Snapshot& snapshot,
                   const Allocation& request) const override;
  // The request's tenant's share is computed again at its next use.
  void Reserve(Session& session, const CycleState& cycle,
               const Groups& groups) const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_FAIR_SHARE_FAIR_SHARE_H_
