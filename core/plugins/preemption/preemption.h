// The preemption plugin (PostFilter, queued requests): a request that cannot
// be placed may preempt ACTIVE allocations of lower priority, or of cohort
// members that borrow the pool when its tenant may reclaim (VictimSearch,
// victim_search.h): the node needing the fewest victims wins, and only if
// the request then fits. Victims keep their devices for the grace (never
// past their lease); their nodes are held for the preemptor (nominated)
// against requests of its priority or lower, and when the last has ended it
// goes first in the next pass. A request whose victims are still in their
// grace waits for them, holding their nodes. It stands back while a MIG
// re-layout may serve the request at the next periodic pass
// (CycleNotes::deferred). Gangs wait; a share takes only shares.
#ifndef ACCELSCHED_CORE_PLUGINS_PREEMPTION_PREEMPTION_H_
#define ACCELSCHED_CORE_PLUGINS_PREEMPTION_PREEMPTION_H_

#include <memory>
#include <string>

#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"
#include "core/framework/session.h"
#include "core/matching/match_spec.h"

namespace accelsched {

// "; waiting for 2 preempted allocations to end": what a preemptor waiting
// out its victims' grace adds to its reason.
std::string WaitingForVictims(size_t n);

// Preempts, through the session's statement, the fewest allocations that let
// `request` (pending `id`, of `cycle`) fit `spec` on one node and holds
// their nodes for it; returns how many (0: none would do). `borrowed_only`
// and `quota_milli` as VictimSearch::ChooseVictims takes them (a reclaim).
int PreemptFor(Session& session, const CycleState& cycle, const Plugin& owner,
               const std::string& id, const Allocation& request,
               const MatchSpec& spec, bool borrowed_only = false,
               int64_t quota_milli = 0);

class PreemptionPlugin final : public PostFilterPlugin {
 public:
  static constexpr char kName[] = "preemption";
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }
  PostFilterResult PostFilter(Session& session, CycleState& cycle,
                              const CycleFailure& failure) const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_PREEMPTION_PREEMPTION_H_
