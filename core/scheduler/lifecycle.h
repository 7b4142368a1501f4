// What several of the scheduler's calls do alike, under its lock: an
// allocation's changes of state (a lease's expiry, its end, admission by a
// pass, entry into the queue), the devices and placement input it is given,
// the snapshot the scheduling cycle reads, and a pending one's queue fields.
// Each change is made in memory at once and queued as a write
// (SchedulerState::Commit). Thread-compatible: every method requires the
// state's lock, as its annotation says.
#ifndef ACCELSCHED_CORE_SCHEDULER_LIFECYCLE_H_
#define ACCELSCHED_CORE_SCHEDULER_LIFECYCLE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/book/allocation_book.h"
#include "core/commit/group_committer.h"
#include "core/commit/write.h"
#include "core/framework/framework.h"
#include "core/framework/snapshot.h"
#include "core/model/allocation_model.h"
#include "core/scheduler/queue_order.h"
#include "core/scheduler/scheduler_state.h"

namespace accelsched {

class Lifecycle {
 public:
  using Record = AllocationBook::Record;
  using Ticket = std::shared_ptr<GroupCommitter::Ticket>;

  // Leases a new backfill reservation may look through in a pass that does
  // not refresh (Snapshot::reservation_walk_limit). About 1 us a lease on a
  // cluster of 80,000 leases (bench/queue_bench, whose max column is such a
  // walk): up to 2-3 ms for a walk the limit cuts. One cut with every pool
  // of its spec seen and no node held for another is not repeated for its
  // walk key before the refresh (the backfill plugin); other walks are done
  // again by a request that takes no reservation over.
  static constexpr size_t kReservationWalkLimit = 2048;

  // None is owned; each must outlive the lifecycle.
  Lifecycle(SchedulerState& state, const Framework& framework,
            const SchedulerOptions& options, QueueOrder& order)
      : state_(state),
        framework_(framework),
        options_(options),
        order_(order) {}
  Lifecycle(const Lifecycle&) = delete;
  Lifecycle& operator=(const Lifecycle&) = delete;

  // What every cycle reads at `now`: the catalog, the book, the tenants, the
  // accelerator types, the recent mix and the settings.
  Snapshot SnapshotAt(absl::Time now) const
      ABSL_SHARED_LOCKS_REQUIRED(state_.mu());
  // Expires every live or pending allocation whose lease (or grace) has
  // passed, queued as its own write, then admits what that let in; returns
  // the last ticket (nullptr when nothing was due); `expired` (when not
  // null) gets the count.
  Ticket ExpireDue(absl::Time now, int* expired)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu());
  // Ends a live or pending allocation: frees its units, records why, drops
  // the removed devices it was the last to hold.
  void End(Record& record, AllocationState end_state, absl::string_view reason,
           absl::Time now, Write& write)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu());
  // One admission pass (core/framework/admission_pass.h), queued as its own
  // write; its ticket, or nullptr when it changed nothing durable.
  // `refresh`: the periodic pass (holds made afresh, MIG re-layouts
  // planned); `relayouts_done`: Snapshot::relayouts_done.
  Ticket Admit(absl::Time now, bool refresh = false,
               std::vector<std::string> relayouts_done = {})
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu());
  // Enters a new PENDING allocation for `a` and runs a pass.
  Ticket Enqueue(Allocation a, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu());
  // Gives `a` (the request's fields) the devices and placement input of
  // `groups`: node, model, devices, targets, resource name; for a share, the
  // share its device holds (memory resolved for that GPU). Returns the units
  // it holds whole: none for a share. Shared by Allocate, admission and
  // Explain.
  std::vector<std::string> Assign(Allocation& a, const Groups& groups) const
      ABSL_SHARED_LOCKS_REQUIRED(state_.mu());
  // Drops kept (removed) devices of `node` that no live allocation holds
  // any more.
  void DropReleasedRemovedDevices(const std::string& node, Write& write)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu());

  // The pending ids in admission order (QueueOrder: computed once per change
  // when `fresh`, else reused for up to QueueOrder::kMaxAge).
  std::shared_ptr<const std::vector<std::string>> PendingOrder(bool fresh) const
      ABSL_SHARED_LOCKS_REQUIRED(state_.mu());
  // `a` with its queue position, reason and estimated start when PENDING
  // (ReservationState::starts, never before now). The position comes from
  // the last order computed unless `may_compute` (and that is stale):
  // writers, which hold the lock exclusively, do not sort the queue.
  Allocation WithQueueFields(Allocation a, bool may_compute = true) const
      ABSL_SHARED_LOCKS_REQUIRED(state_.mu());

  // For a caller holding the state's lock through its own reference to the
  // same SchedulerState: tells the lock analysis (which knows the mutex by
  // the path it was named through) that this one's is held, and checks it.
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK(state_.mu()) {
    state_.mu().AssertHeld();
  }
  void AssertReaderHeld() const ABSL_ASSERT_SHARED_LOCK(state_.mu()) {
    state_.mu().AssertReaderHeld();
  }

 private:
  // What an admission pass does to memory, queued as one write.
  class PassStatement;

  SchedulerState& state_;
  const Framework& framework_;
  const SchedulerOptions& options_;
  QueueOrder& order_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_SCHEDULER_LIFECYCLE_H_
