// The reclaim plugin (PostFilter, queued requests, after the quota plugin
// refused): a tenant within its nominal quota whose cohort's quota stops it
// may take back what other members of its cohort borrow of the pool
// (Kueue's reclaimWithinCohort). When the request would fit now, the
// borrowers' allocations that give back what it lacks are preempted from
// anywhere (VictimSearch::ChooseReclaimVictims) and the nodes it fits on are
// held for it; else the borrowers on the node that then fits it are (a
// share takes back quota only where it fits now). A reclaimer whose victims
// are in their grace waits for them, holding their nodes (not for a share,
// whose reclaim victims free quota, not its room) and where it fits.
#ifndef ACCELSCHED_CORE_PLUGINS_RECLAIM_RECLAIM_H_
#define ACCELSCHED_CORE_PLUGINS_RECLAIM_RECLAIM_H_

#include <memory>

#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"
#include "core/framework/session.h"

namespace accelsched {

class ReclaimPlugin final : public PostFilterPlugin {
 public:
  static constexpr char kName[] = "reclaim";
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }
  PostFilterResult PostFilter(Session& session, CycleState& cycle,
                              const CycleFailure& failure) const override;
  // Whether the request's tenant may take back what its cohort borrows of
  // one of its pools (not for a share, which reclaims only quota).
  bool MayHelpBlocked(const Session& session,
                      const CycleState& cycle) const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_RECLAIM_RECLAIM_H_
