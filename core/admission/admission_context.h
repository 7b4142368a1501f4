// What every planner of an admission pass reads: the catalog, the allocation
// book and the tenants' policies under the scheduler's lock, the eligibility
// rules, and the last pass's reservations; plus the request helpers they
// share (a pending allocation as a match spec, the pools it may take, a match
// of it, why it does not fit). Plain values and pure functions: nothing here
// changes the catalog or the book.
#ifndef ACCELSCHED_CORE_ADMISSION_ADMISSION_CONTEXT_H_
#define ACCELSCHED_CORE_ADMISSION_ADMISSION_CONTEXT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "core/accelerators/accelerator_type_set.h"
#include "core/admission/tenant_policy.h"
#include "core/book/allocation_book.h"
#include "core/catalog/catalog.h"
#include "core/matching/matcher.h"

namespace accelsched {

// What an admission pass leaves for the next one and for requests that are
// not queued.
struct ReservationState {
  Reservations reservations;
  // Holders whose reservation was not found within the walk limit: they look
  // again at the next refresh.
  absl::flat_hash_set<std::string> unplaced;
  // What those holders asked for (ReservationPlanner's walk key): another
  // request that asks the same waits for the refresh too, instead of walking
  // the same leases to the same limit.
  absl::flat_hash_set<std::string> unplaced_walks;
  // Walk key -> the holder of the reservation that Reserve found for it (not
  // nominated holds): a request of the same key takes it over next pass.
  absl::flat_hash_map<std::string, std::string> walk_holders;
  // Holder -> what HoldPools added to its reason, for the holds of a MIG
  // re-layout planned ahead: kept, with their reason, until the next
  // refresh while the holder waits.
  absl::flat_hash_map<std::string, std::string> ahead;
  // Holder -> when it is expected to start (Allocation::estimated_start): the
  // latest start of its holds, no earlier than its victims' grace ends; the
  // pass's time for one whose MIG re-layout is under way. A waiting request
  // not in it holds nothing, and nothing bounds its start.
  absl::flat_hash_map<std::string, absl::Time> starts;
};

// Not owned: the pointers must outlive every planner built on the context.
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
  // Dynamic MIG re-layout (relayout_planner.h). `types` gives the MIG
  // geometries (null: no re-layout is planned). Plans are made only when
  // `plan_relayouts` (the periodic pass: a plan costs a search per
  // candidate GPU); in other passes a request a re-layout might serve
  // waits for that pass rather than preempt. A GPU in `relayout_backoff`
  // (device id -> until when) is not planned for (its last plan failed or
  // timed out).
  const AcceleratorTypeSet* types = nullptr;
  bool plan_relayouts = false;
  const absl::flat_hash_map<std::string, absl::Time>* relayout_backoff =
      nullptr;
  // How far ahead a re-layout may be planned for a request that must wait:
  // onto slices whose allocations' leases end within it (0: never).
  absl::Duration relayout_ahead = absl::ZeroDuration();
  // Pending requests whose MIG re-layout the node has just reported done:
  // visited before every other (RunAdmissionPass), so that the slices
  // made for them go to them.
  std::vector<std::string> relayouts_done;
};

// What a pending (or new) allocation asks for, as a match spec.
MatchSpec SpecOf(const Allocation& request);

// What `spec` asks for in all, in thousandths of a unit as quotas count
// (AllocationBook::UsageMilli): count x replicas units, or its share's
// compute_milli.
int64_t DemandMilli(const MatchSpec& spec);

// The pools `spec` may be met from, whether or not any units are free: its
// models', or, when it names none, every pool of its class and partition.
std::vector<PoolKey> PoolsFor(const CapacityIndex& index,
                              const MatchSpec& spec);

// When `request`'s lease would end if it were admitted now (the default
// lease when it asks for none).
absl::Time LeaseEnd(const AdmissionContext& ctx, const Allocation& request);

// Whether node `home` may take part in a match for `spec` under ctx.rules
// (reservations not considered); false for an unknown node, or one without
// spec.topology_key. When it may and spec.topology_key is set, `*domain` is
// set to the node's value of that label.
bool EligibleHome(const AdmissionContext& ctx, const std::string& home,
                  const MatchSpec& spec, std::string* domain);

// Units for `spec` (a group per replica) under `rules`, or nullopt; for a
// share, one group of the one GPU it goes on (MatchShare).
std::optional<std::vector<std::vector<const Unit*>>> MatchRequest(
    const AdmissionContext& ctx, const MatchSpec& spec,
    const EligibilityRules& rules);

// Why `spec` does not fit now, cheaply (no per-node account): "no node has 2
// free nvidia-h100 devices (5 free of 16)".
std::string WaitReason(const AdmissionContext& ctx, const MatchSpec& spec);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_ADMISSION_ADMISSION_CONTEXT_H_
