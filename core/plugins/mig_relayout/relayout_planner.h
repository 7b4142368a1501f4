// Dynamic MIG re-layout (docs/concepts/mig.md): when a waiting
// request for MIG slices of one profile cannot be met by the slices that
// exist, which GPUs of one node to re-slice, and into what
// (core/relayout/mig_layout_planner.h), so that it can be. Pure decisions
// over the cycle's snapshot; the mig_relayout and plan_ahead plugins act on
// them, the scheduler applies them (Catalog::SetMigPlan) and the node's
// agent carries them out.
//
// The rules:
// - Only GPUs in MIG mode on nodes labelled accelsched.io/mig-relayout=
//   enabled (whose agent applies plans), on nodes the cycle's gate and room
//   filters pass (its node_selector, cordon, heartbeat, pod resources), that
//   are healthy and have no plan in flight.
// - A slice is never planned away while it is allocated, held through a
//   preemption grace (its victim still holds it), reserved for another
//   request (a backfill or nominated hold on its pool and node), or
//   unhealthy.
// - Among the plans that let the request fit on one node, the one that
//   destroys the fewest free slices wins, then the one that leaves the least
//   free space the recent mix of requests could not use (MigFragmentation:
//   the change it makes), then the node's name and the GPUs' order.
// - Planned ahead (PlanRelayout's `frees_by`), a slice an ACTIVE allocation
//   holds counts as free when its lease ends by then; the plan's start is
//   the latest such lease end among the slices it destroys, and among nodes
//   the earliest start wins before the rules above. Such a plan is never
//   written: the plan_ahead plugin only holds its pools (Holds::HoldAhead),
//   and the next periodic pass plans it again once they are free.
#ifndef ACCELSCHED_CORE_PLUGINS_MIG_RELAYOUT_RELAYOUT_PLANNER_H_
#define ACCELSCHED_CORE_PLUGINS_MIG_RELAYOUT_RELAYOUT_PLANNER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "core/accelerators/accelerator_type_set.h"
#include "core/catalog/catalog.h"
#include "core/framework/cycle_state.h"
#include "core/matching/match_spec.h"
#include "core/relayout/mig_layout_planner.h"
#include "core/relayout/relayout_choice.h"

namespace accelsched {

// Whether the unit (a MIG slice) `unit` of `node` must stay as it is for a
// request `id` of `priority`: held, unhealthy or reserved for another.
using SliceHeld = absl::FunctionRef<bool(const Unit& unit)>;

// The re-layout that lets `spec` (count slices of one MIG profile, of one of
// spec.requested_models, on one node; replicas 1, no share) fit, or nullopt
// when none does or `spec` is not such a request. `types` gives each model's
// MIG geometry; `pinned` says which existing slices must stay (beyond what the
// catalog shows: unhealthy and held ones are always kept). A node whose
// free slices of the profile already suffice is not planned for (what keeps
// the request waiting is something else). O(candidate GPUs x the search of
// one GPU); GPUs in the same state share one search.
//
// Planning ahead: with `frees_by` later than the snapshot's now, a slice held
// by an ACTIVE allocation whose lease ends by then (not one in a preemption
// grace) counts as free, as it will be; such a plan cannot be applied
// before its `start`, and among nodes the earliest start wins first.
std::optional<RelayoutChoice> PlanRelayout(
    const CycleState& cycle, const AcceleratorTypeSet& types,
    const MatchSpec& spec, SliceHeld pinned,
    absl::Time frees_by = absl::InfinitePast());

// Whether some node could ever hold `spec` (as PlanRelayout takes it) once
// its MIG GPUs were re-laid out: a node whose agent re-lays out, whose labels
// match spec.selector and whose allocatable (when accounted) holds
// spec.pod_resources, has enough MIG GPUs of one of spec.requested_models to
// hold spec.count slices of the profile (each at most as many as its starts,
// instance limit and compute allow).
// Allocate takes such a request as one that may wait, where
// CheckSatisfiable (which counts the slices that exist) would refuse it.
// O(candidate GPUs).
bool RelayoutCouldServe(const Catalog& catalog, const AcceleratorTypeSet& types,
                        const MatchSpec& spec);

// What Explain adds for a request that `choice` would serve: "a MIG
// re-layout would serve it at the next periodic pass: GPU-1 on n7 into
// 1g.10gb@0 ... 3g.40gb@4 (destroys 3 free slices)".
std::string DescribeRelayout(const RelayoutChoice& choice);

// "waiting for the MIG re-layout of GPU-1 on n7", and ", GPU-2" for each
// further GPU.
std::string RelayoutReason(const std::string& node,
                           const std::vector<std::string>& device_ids);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_MIG_RELAYOUT_RELAYOUT_PLANNER_H_
