// The plan_ahead plugin (PostFilter, queued requests): a request for a MIG
// profile that no slice offers, which no re-layout serves now, the first of
// its shape that must wait, holds the pools of a MIG GPU whose held slices
// free within --mig_relayout_ahead, where a re-layout will serve it then
// (PlanRelayout with `frees_by`; the first periodic pass after they are free
// plans it, as for any request). The holds are made at each periodic pass
// (at most kMaxSearchesPerPass searches a pass) and kept as they were
// between them while it waits (Holds::HoldAhead, KeptAhead), against
// requests of its priority or lower; they leave alone every hold of
// another, even one they would outrank (taking that over would end the
// preemptor's). Where some slice of the profile exists, the one that frees
// first is reserved as for any request (backfill): no GPU is re-sliced
// ahead for what a release gives. A share holds nothing.
#ifndef ACCELSCHED_CORE_PLUGINS_PLAN_AHEAD_PLAN_AHEAD_H_
#define ACCELSCHED_CORE_PLUGINS_PLAN_AHEAD_PLAN_AHEAD_H_

#include <memory>

#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"
#include "core/framework/session.h"

namespace accelsched {

class PlanAheadPlugin final : public PostFilterPlugin {
 public:
  static constexpr char kName[] = "plan_ahead";
  static constexpr int kMaxSearchesPerPass = 16;
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }
  PostFilterResult PostFilter(Session& session, CycleState& cycle,
                              const CycleFailure& failure) const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_PLAN_AHEAD_PLAN_AHEAD_H_
