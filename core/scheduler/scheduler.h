// The scheduler: the cluster catalog (core/catalog/catalog.h), the allocation
// book (core/book/allocation_book.h) and the queue (core/queue/queue.h),
// held in memory and written through a group committer to a Store before any
// change is acknowledged. It keeps the locks and the commit order; the state
// and its rules live in those classes and in the admission planners
// (core/admission/), which rely on its lock. Thread-safe (provides internal
// synchronization) with three mutexes, taken in this order:
// - mu_ guards the catalog, the book, the queue, the tenants' policies and
//   the reservations. A write holds it exclusively while it changes memory
//   and queues the change for commit, so changes are queued in the order they
//   were made; the commit runs without it, so readers (which share it) and
//   other writers proceed meanwhile.
// - types_mu_ guards which accelerator types are in force; they are replaced
//   only with mu_ held too, so under mu_ they cannot change.
// - order_mu_ guards the queue order computed for readers, which hold mu_
//   shared only and so cannot keep it in state that mu_ guards.
//
// Every call that writes returns at once and reports through a callback once
// its change is durable (the gRPC handlers must not hold a thread per commit;
// tests wait with tests/support/blocking_scheduler.h). A callback
// runs exactly once: on the calling thread when the call fails or its result
// is already durable (an expiry the call queued on the way may still be
// committing: it is not the call's result), otherwise on the thread that
// completes the commit, outside the scheduler's lock. It may call the
// scheduler's reads and callback forms, never wait for a write (the commit
// it would wait for may be queued behind it on its own thread); keep it
// short: it delays the writes committed after it. SetTenantPolicies, Sweep
// and Load, which the server calls from its own threads, block instead.
#ifndef ACCELSCHED_CORE_SCHEDULER_SCHEDULER_H_
#define ACCELSCHED_CORE_SCHEDULER_SCHEDULER_H_

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/accelerators/accelerator_type_set.h"
#include "core/base/clock.h"
#include "core/base/labels.h"
#include "core/base/page_token.h"
#include "core/book/allocation_book.h"
#include "core/catalog/capacity_index.h"
#include "core/catalog/catalog.h"
#include "core/commit/event_hub.h"
#include "core/commit/group_committer.h"
#include "core/commit/serialized_store.h"
#include "core/commit/store.h"
#include "core/framework/framework.h"
#include "core/framework/holds.h"
#include "core/framework/snapshot.h"
#include "core/matching/match_spec.h"
#include "core/model/allocation_model.h"
#include "core/model/catalog_model.h"
#include "core/packing/packing_policy.h"
#include "core/packing/request_mix.h"
#include "core/queue/queue.h"
#include "core/scheduler/replies.h"
#include "core/tenants/tenant_policy.h"

namespace accelsched {

class Scheduler {
 public:
  struct Options {
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
  template <typename T>
  using Callback = absl::AnyInvocable<void(absl::StatusOr<T>) &&>;
  using StatusCallback = absl::AnyInvocable<void(absl::Status) &&>;

  // `store` and `clock` are not owned and must outlive the scheduler.
  // `types` resolves model names until ReplaceAcceleratorTypes.
  Scheduler(Store* store, const Clock* clock,
            std::shared_ptr<const AcceleratorTypeSet> types, Options options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Rebuilds memory, and the event numbering, from the store. Call once, before
  // anything else. DATA_LOSS for a stored device whose model the accelerator
  // types do not know, or whose MIG slices or TPU topology it does not have;
  // the store's errors otherwise.
  absl::Status Load();
  // OK unless memory may differ from the store: a commit failed and so did
  // reloading from the store (unreachable). Then UNAVAILABLE with the reason
  // until a Sweep reloads; callers should not serve from memory meanwhile.
  // Cheap: no lock while OK.
  absl::Status Ready() const;

  // --- Catalog ---
  // Upsert: validates, keeps the cordon state of a known node, stamps the
  // heartbeat, and replaces labels and devices. A dropped device that a live
  // allocation holds is kept, unhealthy, until released; changing such a device
  // in place is FAILED_PRECONDITION.
  void RegisterNode(Node node, Callback<Node> done);
  // The node as registered, with its cordon state, last heartbeat and device
  // health. NOT_FOUND naming it when no node has that name.
  absl::StatusOr<Node> GetNode(absl::string_view name) const;
  // `page_size` 0 means kDefaultPageSize; at most kMaxPageSize.
  absl::StatusOr<NodePage> ListNodes(const LabelSelector& selector,
                                     int page_size,
                                     absl::string_view page_token) const;
  // FAILED_PRECONDITION while the node holds live allocations, unless `force`,
  // which ends them with reason node_removed.
  void RemoveNode(absl::string_view name, bool force, StatusCallback done);
  void SetNodeSchedulable(absl::string_view name, bool schedulable,
                          Callback<Node> done);
  // What a node agent reports of a MIG re-layout it could not apply.
  struct RelayoutFailure {
    std::string device_id;
    uint64_t generation = 0;  // of the plan
    std::string error;
  };
  // A node agent's heartbeat.
  struct HeartbeatReport {
    // The node's complete set of unhealthy devices now.
    std::vector<std::string> unhealthy_device_ids;
    // What the caller reports statistics for (kept apart, in a
    // DeviceStatsTable): each must be a device or MIG slice of the node.
    std::vector<std::string> reported_ids;
    // The MIG re-layouts its agent could not apply.
    std::vector<RelayoutFailure> relayout_failures;
  };
  // The MIG plans standing for a node's GPUs: GPU id -> plan.
  using MigPlans = std::map<std::string, MigPlan>;
  // Records node `name`'s heartbeat. NOT_FOUND for an unknown node;
  // INVALID_ARGUMENT naming the first id that is not the node's, and then
  // nothing changes. Each relayout failure drops the plan of that generation
  // for that GPU (its slices planned away that still exist become
  // allocatable again; event MIG_RELAYOUT_DROPPED), and the GPU is not
  // planned for again for Options::mig_relayout_timeout; the request it was
  // for waits again (and may be planned for elsewhere). A failure of a plan
  // already dropped at its deadline gives back the slices held for it
  // (Catalog::EndLapsed). A failure of any other generation changes
  // nothing. Once the
  // heartbeat is accepted, `accepted` runs under the scheduler's lock (so
  // that it is ordered with the node's registration and removal: keep it
  // short, and call nothing of the scheduler's from it). `done` gets, once
  // the heartbeat is durable, the plans that stood for the node's GPUs when
  // it was accepted: each written before it, so that no agent acts on a plan
  // a crash could forget (or a restart issue again under its generation).
  void Heartbeat(absl::string_view name, const HeartbeatReport& report,
                 absl::FunctionRef<void()> accepted, Callback<MigPlans> done);
  // Sorted by device class, model, partition.
  std::vector<CapacityEntry> GetCapacity() const;

  // --- Accelerator types ---
  // The accelerator types in use now; requests and registrations already
  // validated keep the one they were checked against.
  std::shared_ptr<const AcceleratorTypeSet> accelerator_types() const;
  // Makes `next` the accelerator types for every later request, unless a device
  // in the catalog would lose its type: FAILED_PRECONDITION naming the node and
  // device when `next` does not know a device's model, gives it another
  // canonical model or class, lacks a MIG profile or TPU topology (of the
  // same chips and hosts) that the device uses. Blocks catalog changes while
  // it checks.
  absl::Status ReplaceAcceleratorTypes(
      std::shared_ptr<const AcceleratorTypeSet> next);

  // --- Allocation ---
  // Allocates units for `request` now, or, with request.queue, enters it
  // PENDING for the admission passes to admit (announced on events()). `done`
  // gets the allocation once durable: ACTIVE with its devices and placement
  // input, or PENDING with its queue position and reason. A retry (the
  // request_id of a live or pending allocation, asking for the same thing)
  // gets that allocation, once durable; a pending one's place is kept alive.
  // INVALID_ARGUMENT naming the field for a malformed request
  // (ValidateAllocationRequest, core/matching/allocation_request.h);
  // ALREADY_EXISTS when request_id holds a live or pending allocation for
  // another accelerator or count; FAILED_PRECONDITION when no node could ever
  // hold the request (it is not a matter of waiting); RESOURCE_EXHAUSTED,
  // with the nodes' account or the quota's reason, when it does not fit now
  // and request.queue is false; the commit's error when the commit fails.
  void Allocate(const AllocationRequest& request, Callback<Allocation> done);
  // Ends the allocation `key` names (by id, else by request_id) and frees its
  // units, then admits what that lets in: an ACTIVE one ends RELEASED, a
  // PENDING one is withdrawn (RELEASED), a PREEMPTED one in its grace ends
  // PREEMPTED. Idempotent: an ended allocation is returned as it is.
  // NOT_FOUND when no allocation kept (ended ones are forgotten after
  // Options::retention) has that id or request_id; the commit's error when
  // the commit fails.
  void Release(const AllocationKey& key, Callback<Allocation> done);
  // Extends an ACTIVE allocation's lease to now + `lease` (zero: the default
  // lease), or keeps a PENDING one queued until now + `lease` (zero: the
  // pending lease). INVALID_ARGUMENT when `lease` is negative or longer than
  // Options::max_lease; NOT_FOUND for an unknown id; FAILED_PRECONDITION when
  // the allocation is neither ACTIVE nor PENDING (ended, or preempted and in
  // its grace); the commit's error when the commit fails.
  void RenewLease(absl::string_view allocation_id, absl::Duration lease,
                  Callback<Allocation> done);
  // Shows nothing that is not yet durable: reports once the allocation's
  // last write is (UNAVAILABLE when that failed).
  void GetAllocation(const AllocationKey& key, Callback<Allocation> done) const;
  absl::StatusOr<AllocationPage> ListAllocations(
      const AllocationFilter& filter, int page_size,
      absl::string_view page_token) const;
  absl::StatusOr<ExplainResult> Explain(const AllocationRequest& request) const;
  // Expires due leases, admits what can be admitted and forgets ended
  // allocations past retention; returns how many leases expired. The server
  // calls it periodically; writes also expire what is due.
  absl::StatusOr<int> Sweep();

  // --- Queue ---
  // Pending allocations in admission order, of `tenant` (empty: all);
  // `page_size` as ListAllocations. INVALID_ARGUMENT for a bad page token.
  absl::StatusOr<QueuePage> GetQueue(absl::string_view tenant, int page_size,
                                     absl::string_view page_token) const;
  // Every tenant that holds units, waits, or is named by the policies.
  std::vector<TenantStanding> TenantStandings(absl::string_view tenant) const;
  // Makes `policies` the tenants' weights, quotas and cohorts from now on,
  // and admits what they let in; blocks until that is durable.
  absl::Status SetTenantPolicies(std::shared_ptr<const TenantPolicies> next);

  EventHub& events() { return events_; }
  GroupCommitter& committer() { return *committer_; }
  // Capacity, allocations per tenant, tenants' standings and node counts,
  // read under one acquisition of the lock (shared: writers wait for it).
  SchedulerStats Stats() const;

 private:
  using Record = AllocationBook::Record;
  // What an admission pass does to memory, queued as one write
  // (scheduler_queue.cc); called by the pass, under mu_.
  class PassStatement;
  // Leases a new backfill reservation may look through in a pass that does
  // not refresh (Snapshot::reservation_walk_limit). About 1 us a lease on a
  // cluster of 80,000 leases (bench/queue_bench, whose max column is such a
  // walk): up to 2-3 ms for a walk the limit cuts. One cut with every pool
  // of its spec seen and no node held for another is not repeated for its
  // walk key before the refresh (the backfill plugin); other walks are done
  // again by a request that takes no reservation over.
  static constexpr size_t kReservationWalkLimit = 2048;
  // Mutations and events of one acknowledged call, queued together.
  struct Write {
    std::vector<Mutation> mutations;
    std::vector<Event> events;
  };
  // A write call's result once its memory change is made and queued: what it
  // returns when `ticket` (its last queued write; null when nothing needs to
  // be waited for) is durable.
  template <typename T>
  struct Queued {
    T value;
    std::shared_ptr<GroupCommitter::Ticket> ticket;
  };
  // The end of every write call, with the scheduler's lock released: flush
  // the committer (the caller may have to lead it), and hand the result to
  // `done` once durable.
  template <typename T>
  void Complete(absl::StatusOr<Queued<T>> queued, Callback<T> done) const;
  void Complete(absl::StatusOr<Queued<bool>> queued, StatusCallback done) const;

  // The write calls up to their commit: each takes mu_, changes memory,
  // queues its write and releases mu_ before it returns.
  absl::StatusOr<Queued<Node>> QueueRegisterNode(Node node);
  // `node` with its output-only `available` set from the index.
  Node WithAvailable(Node node) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::StatusOr<Queued<bool>> QueueRemoveNode(absl::string_view name,
                                               bool force);
  absl::StatusOr<Queued<Node>> QueueSetNodeSchedulable(absl::string_view name,
                                                       bool schedulable);
  absl::StatusOr<Queued<MigPlans>> QueueHeartbeat(
      absl::string_view name, const HeartbeatReport& report,
      absl::FunctionRef<void()> accepted);
  absl::StatusOr<Queued<Allocation>> QueueAllocate(
      const AllocationRequest& request);
  absl::StatusOr<Queued<Allocation>> QueueRelease(const AllocationKey& key);
  absl::StatusOr<Queued<Allocation>> QueueRenewLease(
      absl::string_view allocation_id, absl::Duration lease);
  absl::StatusOr<Queued<Allocation>> FindDurable(
      const AllocationKey& key) const;

  absl::Status LoadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnCommitFailure(const absl::Status& status);
  // UNAVAILABLE naming stale_reason_: memory is not what the store holds.
  absl::Status StaleError() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Queues `write` for commit in the order of memory changes; returns its
  // ticket. While a failed reload leaves memory stale, queues nothing and
  // returns a ticket failed with UNAVAILABLE.
  std::shared_ptr<GroupCommitter::Ticket> Commit(Write write)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Ends the MIG plan of GPU `device_id` on `node` if it is of `generation`
  // (0: any), writes the node and event MIG_RELAYOUT_DROPPED with `why`,
  // and keeps the GPU from plans until now + mig_relayout_timeout; the
  // slices it planned away stay out of service until `hold_until`, the
  // node's next registration or removal, or the agent's failure report of
  // that plan (Catalog::DropMigPlan). False, with nothing written, when the
  // GPU has no such plan.
  bool DropMigPlanLocked(const std::string& node, const std::string& device_id,
                         uint64_t generation, absl::string_view why,
                         absl::Time now, Write& write,
                         absl::Time hold_until = absl::InfinitePast())
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Plans whose deadline has passed, dropped as one write; its ticket, or
  // nullptr when none was due.
  std::shared_ptr<GroupCommitter::Ticket> DropDueMigPlansLocked(absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops kept (removed) devices of `node_name` that no live allocation holds
  // any more.
  void DropReleasedRemovedDevices(const std::string& node_name, Write& write)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Allocation helpers (scheduler.cc).
  // Ends a live or pending allocation: frees its units and records why.
  void EndLocked(Record& record, AllocationState state,
                 absl::string_view reason, absl::Time now, Write& write)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Expires every live or pending allocation whose lease (or grace) has
  // passed, queued as its own write, then admits what that let in; returns
  // the last ticket (nullptr when nothing was due); `expired` gets the count.
  std::shared_ptr<GroupCommitter::Ticket> ExpireDueLocked(absl::Time now,
                                                          int* expired)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives `a` (the request's fields) the devices and placement input of
  // `groups`: node, model, devices, targets, resource name; for a share, the
  // share its device holds (memory resolved for that GPU). Returns the units
  // it holds whole: none for a share. Shared by Allocate, admission and
  // Explain.
  std::vector<std::string> Assign(
      Allocation& a, const Groups& groups) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // What every cycle reads at `now`: the catalog, the book, the tenants, the
  // accelerator types, the recent mix and the settings.
  Snapshot SnapshotAt(absl::Time now) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  // Queueing (scheduler_queue.cc).
  // One admission pass, queued as its own write; its ticket, or nullptr when
  // it changed nothing durable. `relayouts_done`: see
  // Snapshot::relayouts_done.
  std::shared_ptr<GroupCommitter::Ticket> AdmitLocked(
      absl::Time now, bool refresh_reservations = false,
      std::vector<std::string> relayouts_done = {})
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Enters a new PENDING allocation for `a` and runs a pass.
  std::shared_ptr<GroupCommitter::Ticket> EnqueueLocked(Allocation a,
                                                        absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `a` with its queue position, reason and estimated start when PENDING
  // (ReservationState::starts, never before now). The position comes
  // from the last order computed unless `may_compute` (and that is stale):
  // writers, which hold mu_ exclusively, do not sort the queue.
  Allocation WithQueueFields(Allocation a, bool may_compute = true) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The pending ids in admission order: O(pending x log pending), so
  // computed once per change when `fresh`, else reused for up to
  // kPositionsMaxAge of real time (what one allocation's queue_position
  // shows).
  std::shared_ptr<const std::vector<std::string>> PendingOrder(bool fresh) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // TenantStandings, with mu_ held.
  std::vector<TenantStanding> TenantStandingsLocked(
      absl::string_view tenant) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  // The scheduling cycle's plugins, as the options choose them.
  const std::unique_ptr<const Framework> framework_;
  // The store, its calls serialised: a sweep may reload while a batch
  // commits.
  SerializedStore store_;
  const Clock* const clock_;
  const Options options_;
  EventHub events_;

  mutable absl::Mutex mu_;
  // Replaced only with mu_ held too, so that under mu_ it cannot change
  // between a registration's check and its entry into the catalog.
  mutable absl::Mutex types_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::shared_ptr<const AcceleratorTypeSet> types_ ABSL_GUARDED_BY(types_mu_);
  // Each relies on mu_; the book marks units held in the catalog's index.
  Catalog catalog_ ABSL_GUARDED_BY(mu_){&book_};
  AllocationBook book_ ABSL_GUARDED_BY(mu_){&catalog_.mutable_index()};
  Queue queue_ ABSL_GUARDED_BY(mu_);
  // Every request asked for (Allocate, a retry excepted): what the
  // fragmentation policy measures free capacity against.
  RequestMix mix_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const TenantPolicies> tenants_ ABSL_GUARDED_BY(mu_) =
      std::make_shared<const TenantPolicies>();
  // Made by the last admission pass; respected until the next.
  ReservationState reservations_ ABSL_GUARDED_BY(mu_);
  // The last MIG plan generation issued. Loaded as the store's last event
  // sequence (or a stored generation above it): every plan an agent can
  // have seen was written with its MIG_RELAYOUT_PLANNED event, so no plan
  // written had a generation above the events written, and none is reused
  // after a restart.
  uint64_t last_mig_generation_ ABSL_GUARDED_BY(mu_) = 0;
  // GPUs whose MIG plan failed or timed out -> when they may be planned for
  // again. In memory only: a restart forgets it.
  absl::flat_hash_map<std::string, absl::Time> relayout_backoff_
      ABSL_GUARDED_BY(mu_);
  // Set when memory could not be reloaded after a failed commit; cleared by
  // the next successful load.
  std::atomic<bool> stale_{false};
  absl::Status stale_reason_ ABSL_GUARDED_BY(mu_);
  // Bumped with every write, which may change the queue's order.
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  // The order computed for a generation, shared by readers (which hold mu_
  // shared only).
  mutable absl::Mutex order_mu_ ABSL_ACQUIRED_AFTER(mu_);
  mutable uint64_t order_generation_ ABSL_GUARDED_BY(order_mu_) = ~0ull;
  mutable absl::Time order_computed_ ABSL_GUARDED_BY(order_mu_);
  mutable std::shared_ptr<const std::vector<std::string>> order_
      ABSL_GUARDED_BY(order_mu_);
  mutable absl::flat_hash_map<std::string, int> positions_
      ABSL_GUARDED_BY(order_mu_);

  // Last, so that it is destroyed first: draining its queue calls back into
  // the members above (the failure handler reloads them).
  std::unique_ptr<GroupCommitter> committer_;
};

template <typename T>
void Scheduler::Complete(absl::StatusOr<Queued<T>> queued,
                         Callback<T> done) const {
  if (!queued.ok() || queued->ticket == nullptr) {
    // Answer first: this thread may then have to lead a commit.
    if (queued.ok()) {
      std::move(done)(std::move(queued->value));
    } else {
      std::move(done)(queued.status());
    }
    committer_->Flush();
    return;
  }
  committer_->OnDone(queued->ticket,
                     [value = std::move(queued->value),
                      done = std::move(done)](const absl::Status& s) mutable {
                       if (s.ok()) {
                         std::move(done)(std::move(value));
                       } else {
                         std::move(done)(s);
                       }
                     });
  committer_->Flush();
}

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_SCHEDULER_SCHEDULER_H_
