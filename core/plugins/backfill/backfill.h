// The backfill plugin (PostFilter, queued requests, last): conservative
// backfill (Slurm's): the first request of each pool that must wait holds
// the nodes that free first for it (known from leases), so that nothing
// admitted ahead of it delays it; a request after it takes a held node only
// if its own lease ends before the hold starts (the reservations filter).
// - The lease-end order walk stops at the first point where spec.replicas
//   eligible nodes (in one topology domain) have spec.count units each and
//   room for spec.pod_resources (counting what the walked leases free, a GPU
//   holding shares when the last of them ends; CPU held by allocations of
//   other pools counts as held: such a hold may start later than it could,
//   never earlier). The earliest pool wins, the first of the spec's pools on
//   a tie.
// - Between refreshes (Snapshot::refresh false) a holder takes over the last
//   pass's hold as it was (its own, or one the walk found for another
//   request of the same walk key: same spec and priority, the lease aside),
//   and a new one walks at most the snapshot's reservation_walk_limit
//   leases: one not found within it is unplaced and waits for the next
//   refresh, as does every request of its walk key until then. The first
//   request of a pool changes with the tenants' shares from pass to pass;
//   without these a release would walk thousands of leases for each new one.
// - A share holds no reservation yet (docs/concepts/sharing.md), and does not
//   take its pool's turn, so that a whole request after it still holds the
//   GPUs that free first.
#ifndef ACCELSCHED_CORE_PLUGINS_BACKFILL_BACKFILL_H_
#define ACCELSCHED_CORE_PLUGINS_BACKFILL_BACKFILL_H_

#include <memory>

#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"
#include "core/framework/session.h"

namespace accelsched {

class BackfillPlugin final : public PostFilterPlugin {
 public:
  static constexpr char kName[] = "backfill";
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }
  // Holds for the request, when it is the first of one of its pools to wait
  // this pass, the nodes of that pool that free first: "; holds n3 and 1
  // more from <start>" (nothing when it is not first of any pool, nothing
  // is found, or it is unplaced). Always kWaiting: it is the last action.
  PostFilterResult PostFilter(Session& session, CycleState& cycle,
                              const CycleFailure& failure) const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_BACKFILL_BACKFILL_H_
