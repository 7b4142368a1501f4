// The mig_relayout plugin (PostFilter, queued requests): a request for MIG
// slices of one profile that cannot be placed, and that re-slicing idle MIG
// GPUs of one node would serve (PlanRelayout, relayout_planner.h), gets a
// plan for them (the session's statement writes it as the GPUs' MIG plans)
// and waits for it instead of preempting; it does not block the requests of
// its shape (each may get a plan of its own). Plans are made only by the
// periodic pass, at most kMaxRelayoutsPerPass per pass (each costs a search
// over the candidate GPUs); in another pass a request a re-layout might
// serve waits for the periodic one (CycleNotes::deferred: preemption and
// planning ahead stand back). A request with a re-layout in flight waits
// for it, and starts as soon as its agent reports the new layout. A
// request no node could ever hold as the cluster is, that a re-layout could
// some day serve (RelayoutCouldServe), is let through PreFilter.
// Explain's dry run says what the next periodic pass would plan.
#ifndef ACCELSCHED_CORE_PLUGINS_MIG_RELAYOUT_MIG_RELAYOUT_H_
#define ACCELSCHED_CORE_PLUGINS_MIG_RELAYOUT_MIG_RELAYOUT_H_

#include <memory>
#include <optional>
#include <string>

#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"
#include "core/framework/session.h"

namespace accelsched {

class MigRelayoutPlugin final : public PostFilterPlugin {
 public:
  static constexpr char kName[] = "mig_relayout";
  static constexpr int kMaxRelayoutsPerPass = 16;
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }
  PostFilterResult PostFilter(Session& session, CycleState& cycle,
                              const CycleFailure& failure) const override;
  bool MayResolve(const Session& session,
                  const CycleState& cycle) const override;
  // "waiting for the MIG re-layout of GPU-1 on n7" for a request whose
  // re-layout is in flight.
  std::optional<std::string> ReasonWhileSkipped(
      Session& session, const std::string& id) const override;
  // A request whose re-layout is under way is expected to start now.
  void OnSessionClose(Session& session, ReservationState& next) const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_MIG_RELAYOUT_MIG_RELAYOUT_H_
