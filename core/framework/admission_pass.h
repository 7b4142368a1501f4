// An admission pass: the queue's pending requests, in its order, each
// through the scheduling cycle (CycleMode::kAdmit), in one session, so that
// each decision is seen by the rest of the pass.
//
// What the pass itself adds to the cycle (Kueue's and Slurm's rules):
// - Order: Queue's walk (priority, then the QueueSort plugin's tenant rank,
//   then FIFO).
// - A shape that found no room is given up on for the rest of the pass:
//   without quotas for every tenant's requests of it (each has the same
//   rights), with quotas for the requests that may take the same models
//   (unless a PostFilter plugin may still make room: a reclaim).
// - First, preemptors whose victims have all ended, onto the nodes held for
//   them (else a request ahead of them in the order, which could not
//   preempt, would take what was freed for them), then requests whose MIG
//   re-layout is done; each then has had its turn.
// Placed requests are booked through the session's statement.
#ifndef ACCELSCHED_CORE_FRAMEWORK_ADMISSION_PASS_H_
#define ACCELSCHED_CORE_FRAMEWORK_ADMISSION_PASS_H_

#include "core/framework/framework.h"
#include "core/framework/session.h"
#include "core/queue/queue.h"

namespace accelsched {

// One pass over `queue` in its order, in `session`. Returns what it leaves
// for the next pass (Framework::CloseSession): the holds made, which hold
// until then (a request that is not queued respects them too). The queue is
// not changed (its reasons aside): take out the requests placed once it
// returns.
ReservationState RunAdmissionPass(const Framework& framework, Session& session,
                                  Queue& queue);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_FRAMEWORK_ADMISSION_PASS_H_
