// What every scheduling cycle reads: the cluster as the catalog, the
// allocation book and the tenants' policies hold it now (under the
// scheduler's lock), the server's settings that plugins read, and, for an
// admission pass, how the pass runs. Plain values and pointers, none owned:
// what they point to must outlive every session built on the snapshot, and
// must not change under it but through the session's own statement.
#ifndef ACCELSCHED_CORE_FRAMEWORK_SNAPSHOT_H_
#define ACCELSCHED_CORE_FRAMEWORK_SNAPSHOT_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "core/accelerators/accelerator_type_set.h"
#include "core/book/allocation_book.h"
#include "core/catalog/capacity_index.h"
#include "core/catalog/catalog.h"
#include "core/framework/holds.h"
#include "core/model/catalog_model.h"
#include "core/packing/duration_learner.h"
#include "core/packing/placement_score.h"
#include "core/packing/request_mix.h"
#include "core/tenants/tenant_policy.h"

namespace accelsched {

struct Snapshot {
  // The units and nodes placements are made of. Required.
  const CapacityIndex* index = nullptr;
  const NodeMap* nodes = nullptr;
  // Null in a bare index's cycles (the benchmarks'): the plugins that need
  // them (MIG re-layout; leases, victims, quotas) have nothing to say.
  const Catalog* catalog = nullptr;
  const AllocationBook* book = nullptr;
  const TenantPolicies* tenants = &TenantPolicies::Default();
  const AcceleratorTypeSet* types = nullptr;
  // The recent mix of requests (null: none, so that fragmentation weighs
  // nothing) and when allocations' units come free (null: no lease term).
  const RequestMix* mix = nullptr;
  const LeaseView* leases = nullptr;
  // What finished allocations taught of how long requests run (null: none;
  // a request's duration is then its own or its lease).
  const DurationLearner* durations = nullptr;
  // Where a new request is counted in the recent mix (the request_mix
  // plugin): the scheduler's for an Allocate, a copy for an Explain (which
  // `mix` then points to too, so that its placement weighs it as
  // Allocate's would), null for a pass (its requests were counted when they
  // were accepted).
  RequestMix* count_into = nullptr;

  absl::Time now;
  // Nodes whose last heartbeat is older get nothing; zero disables the check.
  absl::Duration heartbeat_timeout = absl::ZeroDuration();
  // The lease of a request that names none.
  absl::Duration default_lease = absl::Hours(1);
  // How long a preempted allocation keeps its devices (never past its lease).
  absl::Duration preemption_grace = absl::Seconds(30);
  // Dynamic MIG re-layout: a GPU in `relayout_backoff` (device id -> until
  // when) is not planned for (its last plan failed or timed out); a request
  // that must wait may be planned for this far ahead, onto slices whose
  // leases end within it (0: never).
  const absl::flat_hash_map<std::string, absl::Time>* relayout_backoff =
      nullptr;
  absl::Duration relayout_ahead = absl::ZeroDuration();

  // --- An admission pass's settings (and an Explain's, which reads the last
  // pass's holds as they stand). ---
  // The last pass's holds and walk memory, taken over for holders that still
  // wait unless `refresh`: a pass after a release then need not walk the
  // leases again; the periodic sweep refreshes them. A reservation taken
  // over may start later than the node could now (a release came early):
  // what it promised still holds.
  const ReservationState* previous = nullptr;
  bool refresh = true;
  // Leases a new backfill reservation may look through when not refreshing
  // (0: no limit): past it the holder waits for the next refresh for one, so
  // that a release never pays for a walk through the whole cluster's leases.
  size_t reservation_walk_limit = 0;
  // MIG re-layouts are planned only when `plan_relayouts` (the periodic pass:
  // a plan costs a search per candidate GPU); in other passes a request a
  // re-layout might serve waits for that pass rather than preempt.
  bool plan_relayouts = false;
  // Pending requests whose MIG re-layout the node has just reported done:
  // visited before every other (RunAdmissionPass), so that the slices made
  // for them go to them.
  std::vector<std::string> relayouts_done;

  // The node named `name`; nullptr when none is registered.
  const Node* FindNode(absl::string_view name) const {
    auto it = nodes->find(name);
    return it == nodes->end() ? nullptr : &it->second;
  }
};

// The pools `spec` may be met from, whether or not any units are free: its
// models', or, when it names none, every pool of its class and partition.
std::vector<PoolKey> PoolsFor(const CapacityIndex& index,
                              const RequestSpec& spec);

// When `request`'s lease would end if it were admitted now (the default lease
// when it asks for none).
absl::Time LeaseEnd(const Snapshot& snapshot, const RequestSpec& request);

// How long `request` is expected to run if it were admitted now
// (ExpectedDurationOf: given, learned from `snapshot.durations`, else its
// lease).
DurationEstimate ExpectedDuration(const Snapshot& snapshot,
                                  const Allocation& request);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_FRAMEWORK_SNAPSHOT_H_
