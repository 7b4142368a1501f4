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
// - Preemption: a request that cannot be placed may preempt ACTIVE
//   allocations of lower priority, or, when its tenant is within its nominal
//   quota, allocations of cohort members that borrow; the node needing the
//   fewest victims wins (then the lowest victim priority; victims borrowers
//   first, lowest priority, most recently admitted), and only if the request
//   then fits (and, for a reclaim, gets back the quota it lacks). Victims
//   keep their devices for the grace period (never past their lease); their
//   nodes are held for the preemptor against requests of its priority or
//   lower, and when the last has ended it goes first in the next pass.
#ifndef ACCELSCHED_CORE_ADMISSION_ADMISSION_H_
#define ACCELSCHED_CORE_ADMISSION_ADMISSION_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "core/book/allocation_book.h"
#include "core/catalog/catalog.h"
#include "core/matching/matcher.h"
#include "core/admission/queue.h"
#include "core/admission/tenant_policy.h"

namespace accelsched {

// What an admission pass leaves for the next one and for requests that are
// not queued.
struct ReservationState {
  Reservations reservations;
  // Holders whose reservation was not found within the walk limit: they look
  // again at the next refresh.
  absl::flat_hash_set<std::string> unplaced;
};

struct AdmissionContext {
  const Catalog* catalog = nullptr;
  const AllocationBook* book = nullptr;
  const TenantPolicies* tenants = nullptr;
  EligibilityRules rules;  // now and heartbeat timeout
  absl::Duration default_lease;
  bool preemption = true;
  absl::Duration preemption_grace = absl::Seconds(30);
  // The last pass's reservations, taken over for holders that still wait
  // unless `refresh_reservations`: a pass after a release then need not
  // walk the leases again; the periodic sweep refreshes them. A reservation
  // taken over may start later than the node could now (a release came
  // early): what it promised still holds.
  const ReservationState* previous = nullptr;
  bool refresh_reservations = true;
  // Leases a new reservation may look through when not refreshing (0: no
  // limit): past it the holder waits for the next refresh for one, so that
  // a release never pays for a walk through the whole cluster's leases.
  size_t reservation_walk_limit = 0;
};

// What a pending (or new) allocation asks for, as a match spec.
MatchSpec SpecOf(const Allocation& request);

// The pools `spec` may be met from, whether or not any units are free.
std::vector<PoolKey> PoolsFor(const CapacityIndex& index,
                              const MatchSpec& spec);

// The tenant's dominant resource share: the largest fraction of any pool's
// units it holds, divided by its weight.
double DominantShare(const AdmissionContext& ctx, absl::string_view tenant);

// Units of `pool` a tenant within its nominal quota may take back from its
// cohort's borrowers, when the cohort's quota is what stops it.
struct Reclaim {
  PoolKey pool;
  int64_t units = 0;
};

// `spec` narrowed to the pools `tenant` may take spec.count x spec.replicas
// more units of under its quota; when none, `reason` says why ("quota:
// tenant a at 8/8 nvidia-tesla-a100 devices, asks 1 more") and the result is
// nullopt, with `reclaim` (when not null) set for the first pool a reclaim
// would open.
std::optional<MatchSpec> WithinQuota(const AdmissionContext& ctx,
                                     absl::string_view tenant,
                                     const MatchSpec& spec, std::string* reason,
                                     Reclaim* reclaim = nullptr);

// Units for `spec` (a group per replica) under `rules`, or nullopt.
std::optional<std::vector<std::vector<const Unit*>>> MatchRequest(
    const AdmissionContext& ctx, const MatchSpec& spec,
    const EligibilityRules& rules);

// Why `spec` does not fit now, cheaply (no per-node account): "no node has 2
// free nvidia-h100 devices (5 free of 16)".
std::string WaitReason(const AdmissionContext& ctx, const MatchSpec& spec);

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
};

// One pass over `queue` in its order. Returns the reservations it made,
// which hold until the next pass (a request that is not queued respects
// them too).
ReservationState RunAdmissionPass(const AdmissionContext& ctx,
                                  const Queue& queue,
                                  const AdmissionActions& actions);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_ADMISSION_ADMISSION_H_
