// The scheduler's state under one lock, and the order of its commits
// (leveldb's db/db_impl.h beside include/leveldb/db.h): the catalog, the
// allocation book, the queue, the recent mix, the tenants' policies, the
// holds the last pass left and the MIG re-layouts, held in memory and
// written through a group committer to a Store before any change is
// acknowledged. Thread-safe (provides internal synchronization). The call
// groups (node_calls.h, allocation_calls.h, queue_calls.h) and the
// transitions they share (lifecycle.h) take mu() and work on memory().
//
// Two mutexes, taken in this order:
// - mu() guards memory(). A write holds it exclusively while it changes
//   memory and queues the change for commit (Commit), so changes are queued
//   in the order they were made; the commit runs without it, so readers
//   (which share it) and other writers proceed meanwhile.
// - the types' mutex guards which accelerator types are in force; they are
//   replaced only with mu() held too (ReplaceTypes), so under mu() they
//   cannot change.
#ifndef ACCELSCHED_CORE_SCHEDULER_SCHEDULER_STATE_H_
#define ACCELSCHED_CORE_SCHEDULER_SCHEDULER_STATE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/accelerators/accelerator_type_set.h"
#include "core/base/clock.h"
#include "core/book/allocation_book.h"
#include "core/book/allocation_ids.h"
#include "core/book/book_records.h"
#include "core/catalog/catalog.h"
#include "core/commit/event_hub.h"
#include "core/commit/group_committer.h"
#include "core/commit/serialized_store.h"
#include "core/commit/store.h"
#include "core/commit/write.h"
#include "core/framework/holds.h"
#include "core/packing/packing_policy.h"
#include "core/packing/request_mix.h"
#include "core/queue/queue.h"
#include "core/relayout/mig_relayouts.h"
#include "core/tenants/tenant_policy.h"

namespace accelsched {

struct SchedulerOptions {
  absl::Duration default_lease = absl::Hours(1);
  absl::Duration max_lease = absl::Hours(24 * 30);
  // Node labels naming topology domains, widest first (--topology_levels):
  // what a request's required_topology and preferred_topology may name.
  std::vector<std::string> topology_levels;
  // Nodes silent for longer get no new allocations; zero disables the check.
  absl::Duration heartbeat_timeout = absl::Minutes(5);
  // Ended allocations stay readable this long, then are forgotten.
  absl::Duration retention = absl::Hours(24);
  size_t watch_buffer = 1024;
  // Writes per transaction at most; 0: no cap (group commit). 1 is the
  // baseline of one commit per acknowledged call.
  size_t max_commit_batch = 0;
  // Who commits (core/commit/group_committer.h).
  GroupCommitter::Mode commit_mode = GroupCommitter::Mode::kLeader;
  // A PENDING allocation expires this long after it was queued or last
  // kept alive (a retry of its Allocate, or RenewLease).
  absl::Duration pending_lease = absl::Minutes(10);
  // Whether pending requests may preempt, and how long a victim keeps its
  // devices.
  bool preemption = true;
  absl::Duration preemption_grace = absl::Seconds(30);
  // How a request's node is chosen among those that fit (--packing).
  Packing packing = Packing::kFragmentation;
  // How long a node has to report a planned MIG re-layout before the plan
  // is dropped, and how long a GPU whose plan failed or was dropped is not
  // planned for again.
  absl::Duration mig_relayout_timeout = absl::Minutes(10);
  // A request for a MIG profile that no slice offers, which no re-layout
  // serves now, holds a GPU whose held slices free within this, to be
  // re-laid out for it once they do (0: never; the plan_ahead plugin).
  absl::Duration mig_relayout_ahead = absl::Minutes(10);
};

// How every write call reports: exactly once, with its result once durable
// (Scheduler's header says on which thread).
template <typename T>
using SchedulerCallback = absl::AnyInvocable<void(absl::StatusOr<T>) &&>;
using SchedulerStatusCallback = absl::AnyInvocable<void(absl::Status) &&>;

// A write call's result once its memory change is made and queued: what it
// returns when `ticket` (its last queued write; null when nothing needs to
// be waited for) is durable.
template <typename T>
struct Queued {
  T value;
  std::shared_ptr<GroupCommitter::Ticket> ticket;
};

// What mu() guards. Each part relies on it; the book keeps the unit
// holdings, which mark what is held in the catalog's index; the catalog asks
// the holdings who holds a unit, and the MIG re-layouts which slices lapsed
// plans keep.
struct SchedulerMemory {
  explicit SchedulerMemory(absl::Duration mig_relayout_timeout)
      : mig(mig_relayout_timeout) {}
  MigRelayouts mig;
  Catalog catalog{&holdings, &mig};
  UnitHoldings holdings{&catalog.mutable_index()};
  AllocationBook book{&holdings};
  BookLeases leases{&book};
  AllocationIds ids;
  Queue queue;
  // Every request asked for (Allocate, a retry excepted): what the
  // fragmentation policy measures free capacity against.
  RequestMix mix;
  std::shared_ptr<const TenantPolicies> tenants =
      std::make_shared<const TenantPolicies>();
  // Made by the last admission pass; respected until the next.
  ReservationState reservations;
  // Bumped with every write, which may change the queue's order (the queue
  // order's key).
  uint64_t version = 0;
};

class SchedulerState {
 public:
  // `store` and `clock` are not owned and must outlive the state. `types`
  // resolves model names until ReplaceTypes.
  SchedulerState(Store* store, const Clock* clock,
                 std::shared_ptr<const AcceleratorTypeSet> types,
                 const SchedulerOptions& options);
  ~SchedulerState();
  SchedulerState(const SchedulerState&) = delete;
  SchedulerState& operator=(const SchedulerState&) = delete;

  absl::Mutex& mu() const ABSL_LOCK_RETURNED(mu_) { return mu_; }
  SchedulerMemory& memory() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return memory_;
  }
  // The same, read only (a shared lock is enough).
  const SchedulerMemory& view() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return memory_;
  }
  const Clock& clock() const { return *clock_; }
  EventHub& events() { return events_; }
  GroupCommitter& committer() { return *committer_; }

  // The accelerator types in use now.
  std::shared_ptr<const AcceleratorTypeSet> types() const;
  // Makes `next` the types in use; the caller holds mu() and has checked
  // the catalog fits them.
  void ReplaceTypes(std::shared_ptr<const AcceleratorTypeSet> next)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Rebuilds memory, the event numbering and the MIG generations from the
  // store. DATA_LOSS for a stored device the types do not fit; the store's
  // errors otherwise.
  absl::Status LoadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // OK unless memory may differ from the store: a commit failed and so did
  // reloading from the store. Then UNAVAILABLE with the reason until
  // ReloadIfStale reloads. Cheap: no lock while OK.
  absl::Status Ready() const;
  // OK when memory is what the store holds, else UNAVAILABLE saying so.
  absl::Status CheckFresh() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Reloads after a failed reload (the periodic sweep's); its error, or OK.
  absl::Status ReloadIfStale() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Queues `write` for commit in the order of memory changes and bumps the
  // memory's version; returns its ticket. While a failed reload leaves
  // memory stale, queues nothing and returns a ticket failed with
  // UNAVAILABLE.
  std::shared_ptr<GroupCommitter::Ticket> Commit(Write write)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

 private:
  void OnCommitFailure(const absl::Status& status);
  absl::Status StaleError() const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  // The store, its calls serialised: a sweep may reload while a batch
  // commits.
  SerializedStore store_;
  const Clock* const clock_;
  EventHub events_;
  mutable absl::Mutex mu_;
  // Replaced only with mu_ held too, so that under mu_ it cannot change
  // between a registration's check and its entry into the catalog.
  mutable absl::Mutex types_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::shared_ptr<const AcceleratorTypeSet> types_ ABSL_GUARDED_BY(types_mu_);
  SchedulerMemory memory_ ABSL_GUARDED_BY(mu_);
  // Set when memory could not be reloaded after a failed commit; cleared by
  // the next successful load.
  std::atomic<bool> stale_{false};
  absl::Status stale_reason_ ABSL_GUARDED_BY(mu_);
  // Last, so that it is destroyed first: draining its queue calls back into
  // the members above (the failure handler reloads them).
  std::unique_ptr<GroupCommitter> committer_;
};

// The end of every write call, with the state's lock released: flush
// `committer` (the caller may have to lead it), and hand the result to `done`
// once durable (at once when it failed or needs no wait).
template <typename T>
void Complete(GroupCommitter& committer, absl::StatusOr<Queued<T>> queued,
              SchedulerCallback<T> done) {
  if (!queued.ok() || queued->ticket == nullptr) {
    // Answer first: this thread may then have to lead a commit.
    if (queued.ok()) {
      std::move(done)(std::move(queued->value));
    } else {
      std::move(done)(queued.status());
    }
    committer.Flush();
    return;
  }
  committer.OnDone(queued->ticket,
                   [value = std::move(queued->value),
                    done = std::move(done)](const absl::Status& s) mutable {
                     if (s.ok()) {
                       std::move(done)(std::move(value));
                     } else {
                       std::move(done)(s);
                     }
                   });
  committer.Flush();
}
void Complete(GroupCommitter& committer, absl::StatusOr<Queued<bool>> queued,
              SchedulerStatusCallback done);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_SCHEDULER_SCHEDULER_STATE_H_
