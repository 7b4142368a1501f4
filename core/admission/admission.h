// Admission: which pending requests to admit now, with which units, whom to
// preempt for them, and which nodes to hold for the ones that must wait.
// Pure decisions over the catalog, the allocation book, the queue and the
// tenants' policies, all read under the scheduler's lock; the scheduler
// applies each decision (and writes it) as the pass makes it, so that the
// rest of the pass sees it.
//
// The rules, in the words of Kueue and Slurm:
// - Order: Queue's (priority, then weighted dominant resource share, then
//   FIFO).
// - Quota: a tenant's usage of a pool stays within its nominal quota, or,
//   in a cohort, borrows the cohort's unused nominal quota up to its
//   borrowing limit. A pool it has no quota for is not limited.
// - Conservative backfill: the first request of each pool that cannot be
//   placed reserves the nodes that free first (known from leases); a request
//   after it in the order takes a reserved node only if its own lease ends
//   before the reservation starts.
// - MIG re-layout: a request for MIG slices that cannot be placed, and
//   that re-slicing idle MIG GPUs would serve, gets a plan for them
//   (relayout_planner.h) and waits for it instead of preempting; it does
//   not block the requests after it (each may get a plan of its own).
// - Preemption: a request that cannot be placed may preempt ACTIVE
//   allocations of lower priority, or, when its tenant is within its nominal
//   quota, allocations of cohort members that borrow; the node needing the
//   fewest victims wins (then the lowest victim priority; victims borrowers
//   first, lowest priority, most recently admitted), and only if the request
//   then fits (and, for a reclaim, gets back the quota it lacks). Victims
//   keep their devices for the grace period (never past their lease); their
//   nodes are held for the preemptor against requests of its priority or
//   lower, and when the last has ended it goes first in the next pass.
//
// Each rule is a planner with its own state and tests: the order is Queue's
// walk with ShareCache (dominant_share.h); quota, the verdicts of
// quota_planner.h; reservations, ReservationPlanner (reservation_planner.h);
// preemption, PreemptionPlanner (preemption_planner.h). The pass
// (AdmissionRound, in admission.cc) only composes them: it visits the queue
// in order, asks the quota, matches, else preempts or reserves, and tells
// the scheduler through AdmissionActions. This header includes the
// planners' headers, so that the scheduler sees the whole admission API
// through it.
#ifndef ACCELSCHED_CORE_ADMISSION_ADMISSION_H_
#define ACCELSCHED_CORE_ADMISSION_ADMISSION_H_

#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "core/admission/admission_context.h"
#include "core/admission/dominant_share.h"
#include "core/admission/preemption_planner.h"
#include "core/admission/queue.h"
#include "core/admission/quota_planner.h"
#include "core/admission/relayout_planner.h"
#include "core/admission/reservation_planner.h"
#include "core/admission/tenant_policy.h"

namespace accelsched {

// The scheduler's side of a pass: each call changes its state at once.
struct AdmissionActions {
  // Admit pending `id` with `groups`.
  absl::FunctionRef<void(const std::string& id,
                         std::vector<std::vector<const Unit*>> groups)>
      admit;
  // Preempt live `victim` for pending `preemptor`.
  absl::FunctionRef<void(const std::string& victim,
                         const std::string& preemptor)>
      preempt;
  // What keeps pending `id` waiting.
  absl::FunctionRef<void(const std::string& id, const std::string& reason)>
      wait;
  // Re-lay out MIG GPUs as `choice` says for pending `id`.
  absl::FunctionRef<void(const std::string& id, const RelayoutChoice& choice)>
      plan_relayout;
};

// One pass over `queue` in its order. Returns the reservations it made,
// which hold until the next pass (a request that is not queued respects
// them too).
ReservationState RunAdmissionPass(const AdmissionContext& ctx,
                                  const Queue& queue,
                                  const AdmissionActions& actions);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_ADMISSION_ADMISSION_H_
