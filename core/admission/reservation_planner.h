// Backfill reservations of one admission pass (Slurm's conservative
// backfill, Kubernetes' nominated nodes): the nodes held for requests that
// must wait, against the requests after them. Not thread-safe: one pass
// builds one, under the scheduler's lock, and the context's catalog and book
// must not change under it but through the pass's own actions.
//
// - The first request of each pool that cannot be placed reserves the nodes
//   that free first for it (known from leases): its lease-end order walk
//   stops at the first point where spec.replicas eligible nodes (in one
//   topology domain) have spec.count units each and room for
//   spec.pod_resources (counting what the walked leases free, a GPU holding
//   shares when the last of them ends; CPU held by allocations of other
//   pools counts as held: such a reservation may start later than it could,
//   never earlier). A request after it takes a
//   reserved node only if its own lease ends by the reservation's start
//   (EligibilityRules, in the matcher).
// - Between refreshes (ctx.refresh_reservations false) a holder takes over
//   the last pass's reservation as it was (its own, or one Reserve found for
//   another request of the same walk key: same spec and priority, the lease
//   aside), and a new one walks at most ctx.reservation_walk_limit leases:
//   one not found within it is `unplaced` and waits for the next refresh, as
//   does every request of its walk key until then. The first request of a
//   pool changes with the tenants' shares from pass to pass; without these a
//   release would walk thousands of leases for each new one.
// - A preemptor holds its victims' nodes (nominated) against requests of its
//   priority or lower until it is admitted: those holds are kept from pass
//   to pass while it is still queued.
// - A request a MIG re-layout will serve once some slices free holds their
//   pools on that node (HoldPools, a backfill hold from their lease end),
//   made at each refresh and kept as they were between refreshes while it
//   waits, against requests of its priority or lower (as a nominated hold).
//   They do not take their pools' turn to Reserve: the first request of
//   such a pool that waits still reserves, elsewhere.
#ifndef ACCELSCHED_CORE_ADMISSION_RESERVATION_PLANNER_H_
#define ACCELSCHED_CORE_ADMISSION_RESERVATION_PLANNER_H_

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "core/admission/admission_context.h"

namespace accelsched {

class ReservationPlanner {
 public:
  // Takes over the nominated holds of ctx.previous whose holders are still
  // `waiting`; makes every other reservation afresh. `ctx` (and what it
  // points to) is not owned and must outlive the planner; `waiting` is only
  // called here.
  ReservationPlanner(const AdmissionContext& ctx,
                     absl::FunctionRef<bool(absl::string_view id)> waiting);
  ReservationPlanner(const ReservationPlanner&) = delete;
  ReservationPlanner& operator=(const ReservationPlanner&) = delete;

  // This pass's reservations so far, for EligibilityRules::reservations:
  // valid until Take, and changed by every call below.
  const Reservations* reservations() const { return &state_.reservations; }
  // Preemptors whose nominated holds were kept from the last pass.
  const std::set<std::string>& kept_holders() const { return kept_holders_; }

  // Drops every reservation `id` holds (admitted, or held afresh); what it
  // held last pass passes to no other request this pass.
  void Forget(const std::string& id);

  // Whether node `home` of `pool` is held for a request other than `id`
  // against one of `priority` (a nominated hold, or one for a re-layout
  // planned ahead, yields to a higher priority).
  bool ReservedForOther(const PoolKey& pool, const std::string& home,
                        const std::string& id, int priority) const;

  // Holds, from now and nominated, the nodes `spec` fits on now under
  // `rules` for `id` (a reclaimer waiting for its quota), so that nothing
  // after it takes them; nodes already held for another are left alone.
  void HoldFit(const std::string& id, const MatchSpec& spec,
               const EligibilityRules& rules);

  // Holds the nodes of `victims` (ids of PREEMPTED allocations in the book)
  // for preemptor `id` of `priority`, nominated, each from the latest grace
  // end of its victims; nodes an earlier request holds this pass stay its.
  // Their pools count as held for Reserve.
  void HoldVictimNodes(const std::string& id, int priority,
                       const std::set<std::string>& victims);

  // Whether node `home` of `pool` is held, in any way, for a request other
  // than `id`.
  bool HeldForOther(const PoolKey& pool, const std::string& home,
                    const std::string& id) const;

  // Holds `pools` on `node` for `id` (of `priority`) from `start`: the
  // slices a MIG re-layout planned ahead will destroy once their leases end,
  // so that no request of `priority` or lower takes them meanwhile (one
  // whose lease ends by `start` still may, as with Reserve). The caller has
  // checked that none is held for another (HeldForOther). Kept, with `what`,
  // until the next refresh while `id` waits (KeptAhead). Returns what to add
  // to its reason: "; holds n7 from <start>" followed by `what`.
  std::string HoldPools(const std::string& id, int priority,
                        const std::string& node,
                        const std::vector<PoolKey>& pools, absl::Time start,
                        absl::string_view what);

  // What HoldPools returned for `id` at the last refresh, when its holds
  // were kept into this pass; "" otherwise.
  std::string KeptAhead(const std::string& id) const;

  // Reserves for `id` (a request of `priority` for `spec` that must wait),
  // when it is the first of one of its pools to wait this pass, the nodes of
  // that pool that free first (now, or at a lease end; the earliest pool
  // wins, the first of spec's pools on a tie). Between refreshes it first
  // takes over its last reservation, or the last pass's reservation of
  // another request of its walk key, as it was (unless a pool of it is held
  // already this pass), and one `unplaced` (or of an unplaced walk key)
  // since the refresh stays so and holds nothing. Returns what to add to its
  // reason: "; holds n3 and 1 more from <start>", or "" when it holds
  // nothing (not first of any pool, nothing found, or `unplaced`).
  std::string Reserve(const std::string& id, const MatchSpec& spec,
                      int priority);

  // What the pass leaves for the next one, with each holder's start
  // (ReservationState::starts). The planner is spent after.
  ReservationState Take();

 private:
  // The last pass's reservation of `id`, taken over as it was, unless a pool
  // of it is already held this pass. nullopt when there is none to take.
  // Also the last pass's reservation made by Reserve for another request of
  // the same `walk_key`, now held by `id`.
  std::optional<std::string> Reuse(const std::string& id,
                                   const std::string& walk_key);

  const AdmissionContext& ctx_;
  const CapacityIndex& index_;
  ReservationState state_;
  // Pools whose first waiting request has had its turn to hold this pass.
  std::set<PoolKey> reserved_pools_;
  // The last pass's reservations by holder, indexed on first use.
  struct Held {
    const PoolKey* pool;
    const std::string* node;
    const Reservation* reservation;
  };
  bool previous_indexed_ = false;
  absl::flat_hash_map<std::string, std::vector<Held>> previous_by_holder_;
  std::set<std::string> kept_holders_;
  // Ids Forget was called for this pass (admitted, holding nothing, or
  // looked for again): their last reservation passes to nobody.
  absl::flat_hash_set<std::string> forgotten_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_ADMISSION_RESERVATION_PLANNER_H_
