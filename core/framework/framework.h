// The scheduling framework: one cycle that Allocate, the admission pass and
// Explain all run (Kubernetes' scheduling cycle; KAI-Scheduler's actions and
// plugins), built from a registry and a profile (registry.h). A request goes
// through
//   PreFilter   refuse it, narrow what it may take, prepare the filters;
//   placement   Filter and Score: the placement plugin of its kind walks the
//               index, asks the filters of each node it would take, weighs
//               with the Score plugins, and the unit plugin chooses units;
//   Reserve     when it is placed, before it is booked;
//   PostFilter  when it is not: the actions of the profile, in order.
// Explain runs the same code in CycleMode::kExplain, recording each step.
//
// Thread-safe once built: plugins are read only, and what a cycle changes
// lives in its session and cycle state.
#ifndef ACCELSCHED_CORE_FRAMEWORK_FRAMEWORK_H_
#define ACCELSCHED_CORE_FRAMEWORK_FRAMEWORK_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"
#include "core/framework/plugin_set.h"
#include "core/framework/registry.h"
#include "core/framework/session.h"

namespace accelsched {

// How a cycle ended.
struct CycleResult {
  enum class Outcome {
    kPlaced,    // `groups`: the caller books them
    kWaiting,   // `reason`: what keeps it waiting (a pass blocks its shape)
    kUnderWay,  // `reason`: it waits for room under way (a MIG re-layout)
    kRefused,   // `refusal`: FAILED_PRECONDITION, no node could ever hold it
  };
  Outcome outcome = Outcome::kWaiting;
  Groups groups;
  absl::Status refusal;
  std::string reason;
  // Where a cycle not placed stopped.
  CycleFailure failure;
  // What Explain's summary adds, in order ("; "-joined after the account).
  std::vector<std::string> summary;
  // In Explain, past PreFilter: the candidates the placement weighed, best
  // first (RankPlacements).
  std::vector<RankedPlacement> ranked;
};

class Framework {
 public:
  // The plugins `profile` names, made by `registry`'s factories.
  // INVALID_ARGUMENT naming the plugin for a name the registry does not
  // know or a plugin named twice, for a second QueueSort or UnitScore plugin,
  // and when it names no placement plugin. (Which kinds of request the
  // profile's placements place is its author's to check: a request none
  // places fits nowhere.)
  static absl::StatusOr<std::unique_ptr<Framework>> Create(
      const Registry& registry, const Profile& profile);
  Framework(const Framework&) = delete;
  Framework& operator=(const Framework&) = delete;

  // One request through the whole cycle (kAllocate or kExplain; a pass runs
  // the steps below itself, skipping blocked shapes between them). Placed:
  // kPlaced with its groups (not booked). Refused by a PreFilter plugin for
  // good: kRefused (FAILED_PRECONDITION). Otherwise kWaiting (or kUnderWay,
  // or kRefused by a check of new requests) after the PostFilter plugins
  // that apply: in kAllocate those of new requests, in kExplain those too
  // and, when the request queues, the pass's (acting on the session's
  // scratch holds and dry statement).
  CycleResult RunCycle(Session& session, CycleState& cycle) const;

  // --- The steps. ---
  // The PreFilter plugins of the cycle's mode, in order, then Prepare. The
  // first refusal is returned, but for a kUnresolvable one that a PostFilter
  // plugin may some day resolve (MayResolve): that one is let through.
  Verdict PreFilter(Session& session, CycleState& cycle) const;
  // The filters that apply to the cycle (and the room they require): what
  // placing a request of another spec for the same requester needs first.
  void Prepare(CycleState& cycle) const;
  // The units the request would take now (Filter and Score), or nullopt.
  // Changes nothing.
  std::optional<Groups> Place(const Session& session,
                              const CycleState& cycle) const;
  // Reserve: tells the Reserve plugins, and notes it placed in the session.
  void Reserve(Session& session, const CycleState& cycle,
               const Groups& groups) const;
  // The PostFilter plugins of the cycle's mode, in order, for `failure`.
  // A request a PreFilter refused holds nothing first (its holds are
  // released).
  CycleResult PostFilter(Session& session, CycleState& cycle,
                         CycleFailure failure) const;
  // Whether a PostFilter plugin may still make room for a request whose
  // shape found none this pass.
  bool MayHelpBlocked(const Session& session, const CycleState& cycle) const;
  // `reason`, or what a PostFilter plugin under way for pending `id` says.
  std::string ReasonWhileSkipped(Session& session, const std::string& id,
                                 const std::string& reason) const;
  // What the pass leaves for the next: the holds, with what the PostFilter
  // plugins add. The session's holds are spent after.
  ReservationState CloseSession(Session& session) const;

  // The profile's plugins, by extension point.
  const PluginSet& plugins() const { return plugins_; }

 private:
  Framework() = default;
  // Adds a step to the cycle's record, when it has one.
  static void Record(const CycleState& cycle, const Plugin& plugin,
                     ExtensionPoint point, int nodes_in, int nodes_out,
                     std::string detail);
  bool MayResolve(const Session& session, const CycleState& cycle,
                  const Plugin** by) const;

  PluginSet plugins_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_FRAMEWORK_FRAMEWORK_H_
