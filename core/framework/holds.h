// Holds: the nodes a session keeps for queued requests against the requests
// after them (Slurm's conservative backfill reservations, Kubernetes'
// nominated nodes), and what a pass leaves for the next. Not thread-safe:
// one session builds one, under the scheduler's lock.
//
// Four kinds of hold, each a Reservation of one pool on one node:
// - backfill (the backfill plugin's Reserve): from when the node frees for
//   the request it is held for; a request after it takes the node only if
//   its own lease
//   ends by then;
// - nominated (HoldVictimNodes, the reclaim plugin's hold of where it fits):
//   a preemptor's hold on its victims' nodes, kept from pass to pass until
//   it is admitted, against requests of its priority or lower only;
// - ahead (HoldAhead): a MIG re-layout planned ahead, made at each refresh
//   and kept as it was between refreshes while its request waits, against
//   requests of its priority or lower;
// - and the last pass's, read as they stand, by a session that makes none
//   (an Allocate now, an Explain: Holds::Standing).
//
// The pools whose first waiting request has had its turn to hold this pass
// are kept here too (TakeTurn): a pool's turn is taken by a backfill
// reservation, by a preemptor's victims or by a reclaimer's hold.
#ifndef ACCELSCHED_CORE_FRAMEWORK_HOLDS_H_
#define ACCELSCHED_CORE_FRAMEWORK_HOLDS_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/book/allocation_book.h"
#include "core/model/unit.h"

namespace accelsched {

// A node held for a queued request: from `start`, its units of one pool go to
// the request it is `held_for` or to one whose lease ends by then, so that
// nothing admitted ahead of it delays it.
struct Reservation {
  absl::Time start;
  std::string held_for;  // the pending allocation's id
  // Held for a preemptor, on its victims' nodes (Kubernetes' nominated
  // node): kept from pass to pass until it is admitted, against requests of
  // its priority or lower only.
  bool nominated = false;
  int priority = 0;
  // Held for a MIG re-layout planned ahead (Holds::HoldAhead): against
  // requests of its priority or lower only, as a nominated hold.
  bool ahead = false;

  // Whether a request of `requester_priority` (not the one it is held for)
  // may take what this holds regardless: a nominated or planned-ahead hold
  // yields to a higher priority.
  bool YieldsTo(int requester_priority) const {
    return (nominated || ahead) && requester_priority > priority;
  }
};
// pool -> node -> reservation.
using Reservations =
    std::map<PoolKey, absl::flat_hash_map<std::string, Reservation>>;

// What a pass leaves for the next one and for requests that are not queued.
struct ReservationState {
  Reservations reservations;
  // The backfill walk's memory (the backfill plugin): requests whose
  // reservation was not found within the walk limit look again at the next
  // refresh;
  absl::flat_hash_set<std::string> unplaced;
  // what they asked for (the walk key): another request that asks
  // the same waits for the refresh too, instead of walking the same leases
  // to the same limit;
  absl::flat_hash_set<std::string> unplaced_walks;
  // walk key -> the request the walk found a hold for (not nominated holds):
  // a request of the same key takes it over next pass.
  absl::flat_hash_map<std::string, std::string> walk_holds;
  // Request -> what HoldAhead added to its reason, for the holds of a MIG
  // re-layout planned ahead: kept, with their reason, until the next
  // refresh while it waits.
  absl::flat_hash_map<std::string, std::string> ahead;
  // Request held for -> when it is expected to start
  // (Allocation::estimated_start): the latest start of its holds, no earlier
  // than its victims' grace ends; the pass's time for one whose MIG re-layout
  // is under way. A waiting request not in it holds nothing, and nothing bounds
  // its start.
  absl::flat_hash_map<std::string, absl::Time> starts;

  bool empty() const {
    return reservations.empty() && unplaced.empty() && unplaced_walks.empty() &&
           walk_holds.empty();
  }
};

class Holds {
 public:
  // A pass's holds: takes over the nominated holds of `previous` (may be
  // null) whose holders are still `waiting`, and, unless `refresh`, its
  // holds ahead and its walk memory of what was looked for in vain; every
  // other hold is made afresh. `book` gives victims' grace ends (Take).
  // `previous` is read here only; `book` is not owned and must outlive the
  // holds; `waiting` is only called here. `previous` and `refresh` are the
  // pass's snapshot's (Snapshot::previous, Snapshot::refresh).
  Holds(const AllocationBook* book, const ReservationState* previous,
        bool refresh, absl::FunctionRef<bool(absl::string_view id)> waiting);
  // The holds of `standing` (the last pass's; null: none) as they are, for a
  // session that only reads them (an Allocate now: nothing below may be
  // called), or, with `scratch`, as a copy that the session's plugins may
  // change and that is thrown away (an Explain's dry run). A kReadOnly one
  // reads `standing` itself, which must outlive it.
  enum class Standing { kReadOnly, kScratch };
  Holds(const AllocationBook* book, const ReservationState* standing,
        Standing mode);
  Holds(const Holds&) = delete;
  Holds& operator=(const Holds&) = delete;

  // What is held now, for the reservations filter: valid until Take, and
  // changed by every call below.
  const Reservations& reservations() const { return *reservations_; }
  // Preemptors whose nominated holds were kept from the last pass.
  const std::set<std::string>& kept_preemptors() const {
    return kept_preemptors_;
  }

  // Drops every hold `id` has (admitted, or held afresh); what it held last
  // pass passes to no other request this pass (WasReleased).
  void Release(const std::string& id);
  bool WasReleased(const std::string& id) const {
    return released_.contains(id);
  }

  // The hold on node `home` of `pool` for a request other than `id`, or
  // nullptr: any hold, or, given the `priority` of the request that would
  // take it, one that does not yield to it (a nominated hold, or one for a
  // re-layout planned ahead, yields to a higher priority; a backfill one
  // never does).
  const Reservation* HoldForOther(const PoolKey& pool, absl::string_view home,
                                  absl::string_view id,
                                  std::optional<int> priority) const;
  // Marks `pool`'s turn to hold this pass taken; false when it was already.
  bool TakeTurn(const PoolKey& pool) { return turns_.insert(pool).second; }
  bool TurnTaken(const PoolKey& pool) const { return turns_.contains(pool); }

  // Holds `pool` on `node` as `reservation` says, replacing any hold there:
  // the primitive the plugins' holds use.
  void Hold(const PoolKey& pool, const std::string& node,
            Reservation reservation);

  // Holds the nodes of `victims` (ids of PREEMPTED allocations in the book)
  // for preemptor `id` of `priority`, nominated, each from the latest grace
  // end of its victims; nodes an earlier request holds this pass stay its.
  // Their pools' turns are taken. `index` gives the victims' units' nodes.
  void HoldVictimNodes(const CapacityIndex& index, const std::string& id,
                       int priority, const std::set<std::string>& victims);

  // Holds `pools` on `node` for `id` (of `priority`) from `start`: the slices
  // a MIG re-layout planned ahead will destroy once their leases end, so
  // that no request of `priority` or lower takes them meanwhile (one whose
  // lease ends by `start` still may, as with a backfill hold). The caller has
  // checked that none is held for another (HoldForOther). Kept, with the
  // returned reason, until the next refresh while `id` waits (KeptAhead).
  // Returns what to add to its reason: "; holds n7 from <start>" followed by
  // `what`.
  std::string HoldAhead(const std::string& id, int priority,
                        const std::string& node,
                        const std::vector<PoolKey>& pools, absl::Time start,
                        absl::string_view what);
  // What HoldAhead returned for `id` at the last refresh, when its holds
  // were kept into this pass; "" otherwise.
  std::string KeptAhead(const std::string& id) const;

  // The backfill walk's memory, for the backfill plugin to read and write
  // (ReservationState's unplaced, unplaced_walks, walk_holds).
  ReservationState& memory() { return state_; }

  // What the pass leaves for the next one, with each held request's start
  // (ReservationState::starts). The holds are spent after.
  ReservationState Take();

 private:
  const AllocationBook* book_;
  ReservationState state_;
  // &state_.reservations, or a read-only standing state's.
  const Reservations* reservations_;
  bool read_only_ = false;
  std::set<PoolKey> turns_;
  std::set<std::string> kept_preemptors_;
  absl::flat_hash_set<std::string> released_;
};

// "; holds n3 and 1 more from <start>": what a hold adds to a holder's
// reason.
std::string HoldsText(const std::vector<std::string>& nodes, absl::Time start);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_FRAMEWORK_HOLDS_H_
