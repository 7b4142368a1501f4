// The scheduler's allocation calls: Allocate (now, or into the queue),
// Release, RenewLease, the reads, and Explain, the scheduling cycle's dry
// run. Thread-safe; the write calls report as the scheduler's header says
// (core/scheduler/scheduler.h): once durable, exactly once.
#ifndef ACCELSCHED_CORE_SCHEDULER_ALLOCATION_CALLS_H_
#define ACCELSCHED_CORE_SCHEDULER_ALLOCATION_CALLS_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/base/page_token.h"
#include "core/book/allocation_book.h"
#include "core/framework/framework.h"
#include "core/model/allocation_model.h"
#include "core/scheduler/lifecycle.h"
#include "core/scheduler/replies.h"
#include "core/scheduler/scheduler_state.h"

namespace accelsched {

class AllocationCalls {
 public:
  // None is owned; each must outlive the calls.
  AllocationCalls(SchedulerState& state, Lifecycle& lifecycle,
                  const Framework& framework, const SchedulerOptions& options)
      : state_(state),
        lifecycle_(lifecycle),
        framework_(framework),
        options_(options) {}
  AllocationCalls(const AllocationCalls&) = delete;
  AllocationCalls& operator=(const AllocationCalls&) = delete;

  // Allocates units for `request` now (the scheduling cycle, CycleMode::
  // kAllocate), or, with request.queue, enters it PENDING for the admission
  // passes to admit (announced on the events). `done` gets the allocation
  // once durable: ACTIVE with its devices and placement input, or PENDING
  // with its queue position and reason. A retry (the request_id of a live or
  // pending allocation, asking for the same thing: RequestSpec::kRetry) gets
  // that allocation, once durable; a pending one's place is kept alive.
  // INVALID_ARGUMENT naming the field for a malformed request
  // (ValidateAllocationRequest, core/matching/allocation_request.h);
  // ALREADY_EXISTS when request_id holds a live or pending allocation for
  // another accelerator or count; FAILED_PRECONDITION when no node could ever
  // hold the request (it is not a matter of waiting); RESOURCE_EXHAUSTED,
  // with the nodes' account or the quota's reason, when it does not fit now
  // and request.queue is false; the commit's error when the commit fails.
  void Allocate(const AllocationRequest& request,
                SchedulerCallback<Allocation> done);
  // Ends the allocation `key` names (by id, else by request_id) and frees its
  // units, then admits what that lets in: an ACTIVE one ends RELEASED, a
  // PENDING one is withdrawn (RELEASED), a PREEMPTED one in its grace ends
  // PREEMPTED. Idempotent: an ended allocation is returned as it is.
  // NOT_FOUND when no allocation kept (ended ones are forgotten after
  // SchedulerOptions::retention) has that id or request_id; the commit's
  // error when the commit fails.
  void Release(const AllocationKey& key, SchedulerCallback<Allocation> done);
  // Extends an ACTIVE allocation's lease to now + `lease` (zero: the default
  // lease), or keeps a PENDING one queued until now + `lease` (zero: the
  // pending lease). INVALID_ARGUMENT when `lease` is negative or longer than
  // SchedulerOptions::max_lease; NOT_FOUND for an unknown id;
  // FAILED_PRECONDITION when the allocation is neither ACTIVE nor PENDING
  // (ended, or preempted and in its grace); the commit's error when the
  // commit fails.
  void RenewLease(absl::string_view allocation_id, absl::Duration lease,
                  SchedulerCallback<Allocation> done);
  // Shows nothing that is not yet durable: reports once the allocation's
  // last write is (UNAVAILABLE when that failed). NOT_FOUND for an unknown
  // key.
  void GetAllocation(const AllocationKey& key,
                     SchedulerCallback<Allocation> done) const;
  // `page_size` as ListNodes; INVALID_ARGUMENT for a bad page token.
  absl::StatusOr<AllocationPage> ListAllocations(
      const AllocationFilter& filter, int page_size,
      absl::string_view page_token) const;
  // What Allocate (and, for a request that queues, the next admission pass)
  // would do with `request` now, changing nothing: the scheduling cycle in
  // CycleMode::kExplain, with its steps, the per-node account, the
  // candidates weighed, and, for a pending request_id, its place in the
  // queue. INVALID_ARGUMENT as Allocate.
  absl::StatusOr<ExplainResult> Explain(const AllocationRequest& request) const;

 private:
  // The write calls up to their commit: each takes the lock, changes memory,
  // queues its write and releases the lock before it returns.
  absl::StatusOr<Queued<Allocation>> QueueAllocate(
      const AllocationRequest& request);
  absl::StatusOr<Queued<Allocation>> QueueRelease(const AllocationKey& key);
  absl::StatusOr<Queued<Allocation>> QueueRenewLease(
      absl::string_view allocation_id, absl::Duration lease);
  absl::StatusOr<Queued<Allocation>> FindDurable(
      const AllocationKey& key) const;

  SchedulerState& state_;
  Lifecycle& lifecycle_;
  const Framework& framework_;
  const SchedulerOptions& options_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_SCHEDULER_ALLOCATION_CALLS_H_
