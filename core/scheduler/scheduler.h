// The scheduler, accelsched's public face below the RPC layer: the cluster
// catalog, the allocations and the queue, held in memory and written through
// a group committer to a Store before any change is acknowledged
// (scheduler_state.h), scheduled by the framework's cycle with the default
// profile's plugins (core/framework/, core/plugins/). It owns the state and
// hands out its calls in three groups, each header stating each call's
// contract: nodes() (node_calls.h), allocations() (allocation_calls.h),
// queue() (queue_calls.h). Thread-safe (provides internal synchronization).
//
// Every call that writes returns at once and reports through a callback once
// its change is durable (the gRPC handlers must not hold a thread per commit;
// tests wait with tests/support/blocking_scheduler.h). A callback runs
// exactly once: on the calling thread when the call fails or its result is
// already durable (an expiry the call queued on the way may still be
// committing: it is not the call's result), otherwise on the thread that
// completes the commit, outside the scheduler's lock. It may call the
// scheduler's reads and callback forms, never wait for a write (the commit it
// would wait for may be queued behind it on its own thread); keep it short: it
// delays the writes committed after it. SetTenantPolicies, Sweep and Load,
// which the server calls from its own threads, block instead.
#ifndef ACCELSCHED_CORE_SCHEDULER_SCHEDULER_H_
#define ACCELSCHED_CORE_SCHEDULER_SCHEDULER_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/accelerators/accelerator_type_set.h"
#include "core/base/clock.h"
#include "core/commit/event_hub.h"
#include "core/commit/group_committer.h"
#include "core/commit/store.h"
#include "core/framework/framework.h"
#include "core/scheduler/allocation_calls.h"
#include "core/scheduler/lifecycle.h"
#include "core/scheduler/node_calls.h"
#include "core/scheduler/queue_calls.h"
#include "core/scheduler/queue_order.h"
#include "core/scheduler/replies.h"
#include "core/scheduler/scheduler_state.h"

namespace accelsched {

class Scheduler {
 public:
  using Options = SchedulerOptions;
  template <typename T>
  using Callback = SchedulerCallback<T>;
  using StatusCallback = SchedulerStatusCallback;
  using HeartbeatReport = NodeCalls::HeartbeatReport;
  using RelayoutFailure = NodeCalls::RelayoutFailure;
  using MigPlans = NodeCalls::MigPlans;

  // `store` and `clock` are not owned and must outlive the scheduler.
  // `types` resolves model names until ReplaceAcceleratorTypes. The default
  // profile for `options` (--packing, --preemption) is the registry's own:
  // a profile the framework refused would be a bug, and aborts.
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
  // Expires due leases, drops MIG plans past their deadline, runs the
  // periodic admission pass (holds made afresh, MIG re-layouts planned) and
  // forgets ended allocations past retention; returns how many leases
  // expired, once all of it is durable. The server calls it periodically;
  // writes also expire what is due. After a failed reload it reloads first:
  // its error then.
  absl::StatusOr<int> Sweep();
  // Capacity, allocations per tenant, tenants' standings and node counts,
  // read under one acquisition of the lock (shared: writers wait for it).
  SchedulerStats Stats() const;

  NodeCalls& nodes() { return nodes_; }
  const NodeCalls& nodes() const { return nodes_; }
  AllocationCalls& allocations() { return allocations_; }
  const AllocationCalls& allocations() const { return allocations_; }
  QueueCalls& queue() { return queue_; }
  const QueueCalls& queue() const { return queue_; }
  EventHub& events() { return state_->events(); }
  GroupCommitter& committer() { return state_->committer(); }

 private:
  const Options options_;
  // The scheduling cycle's plugins, as the options choose them.
  const std::unique_ptr<const Framework> framework_;
  const std::unique_ptr<SchedulerState> state_;
  QueueOrder order_;
  Lifecycle lifecycle_;
  NodeCalls nodes_;
  AllocationCalls allocations_;
  QueueCalls queue_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_SCHEDULER_SCHEDULER_H_
