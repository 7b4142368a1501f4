// The scheduler's write calls in blocking form, for tests, benchmarks and
// fuzzers: each starts the scheduler's callback form and waits for its
// callback. The server never blocks a thread per commit, so Scheduler itself
// has only the callback forms.
//
// A callback runs on the calling thread (the call failed, its result was
// already durable, or this thread led the commit) or on the thread that
// completes the commit; the wait is correct for both, since the result is
// written before the notification and read after it. Never call these from
// inside a scheduler callback: the commit waited for may be queued behind it
// on its own thread.
#ifndef ACCELSCHED_TESTS_SUPPORT_BLOCKING_SCHEDULER_H_
#define ACCELSCHED_TESTS_SUPPORT_BLOCKING_SCHEDULER_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "core/scheduler/scheduler.h"

namespace accelsched {

class BlockingScheduler {
 public:
  // Wraps `scheduler`, which is not owned and must outlive this.
  explicit BlockingScheduler(Scheduler* scheduler) : scheduler_(scheduler) {}
  // Owns a scheduler built from Scheduler's constructor arguments.
  BlockingScheduler(Store* store, const Clock* clock,
                    std::shared_ptr<const AcceleratorTypeSet> types,
                    Scheduler::Options options)
      : owned_(std::make_unique<Scheduler>(store, clock, std::move(types),
                                           options)),
        scheduler_(owned_.get()) {}
  BlockingScheduler(const BlockingScheduler&) = delete;
  BlockingScheduler& operator=(const BlockingScheduler&) = delete;

  // The scheduler, for its callback forms.
  Scheduler& scheduler() const { return *scheduler_; }

  // --- Writes: the callback form, waited for ---
  absl::StatusOr<Node> RegisterNode(Node node) {
    return Wait<Node>([&](Scheduler::Callback<Node> done) {
      scheduler_->nodes().RegisterNode(std::move(node), std::move(done));
    });
  }
  absl::Status RemoveNode(absl::string_view name, bool force) {
    return WaitStatus([&](Scheduler::StatusCallback done) {
      scheduler_->nodes().RemoveNode(name, force, std::move(done));
    });
  }
  absl::StatusOr<Node> SetNodeSchedulable(absl::string_view name,
                                          bool schedulable) {
    return Wait<Node>([&](Scheduler::Callback<Node> done) {
      scheduler_->nodes().SetNodeSchedulable(name, schedulable, std::move(done));
    });
  }
  absl::Status Heartbeat(
      absl::string_view name,
      const std::vector<std::string>& unhealthy_device_ids,
      const std::vector<std::string>& reported_ids = {},
      absl::FunctionRef<void()> accepted = [] {}) {
    Scheduler::HeartbeatReport report;
    report.unhealthy_device_ids = unhealthy_device_ids;
    report.reported_ids = reported_ids;
    return HeartbeatPlans(name, report, accepted).status();
  }
  // The whole report, and the plans the reply carries.
  absl::StatusOr<Scheduler::MigPlans> HeartbeatPlans(
      absl::string_view name, const Scheduler::HeartbeatReport& report,
      absl::FunctionRef<void()> accepted = [] {}) {
    return Wait<Scheduler::MigPlans>(
        [&](Scheduler::Callback<Scheduler::MigPlans> done) {
          scheduler_->nodes().Heartbeat(name, report, accepted, std::move(done));
        });
  }
  absl::StatusOr<Allocation> Allocate(const AllocationRequest& request) {
    return Wait<Allocation>([&](Scheduler::Callback<Allocation> done) {
      scheduler_->allocations().Allocate(request, std::move(done));
    });
  }
  absl::StatusOr<Allocation> Release(const AllocationKey& key) {
    return Wait<Allocation>([&](Scheduler::Callback<Allocation> done) {
      scheduler_->allocations().Release(key, std::move(done));
    });
  }
  absl::StatusOr<Allocation> RenewLease(absl::string_view allocation_id,
                                        absl::Duration lease) {
    return Wait<Allocation>([&](Scheduler::Callback<Allocation> done) {
      scheduler_->allocations().RenewLease(allocation_id, lease, std::move(done));
    });
  }
  absl::StatusOr<Allocation> GetAllocation(const AllocationKey& key) const {
    return Wait<Allocation>([&](Scheduler::Callback<Allocation> done) {
      scheduler_->allocations().GetAllocation(key, std::move(done));
    });
  }

  // --- Forwarded as they are ---
  absl::Status Load() { return scheduler_->Load(); }
  absl::Status Ready() const { return scheduler_->Ready(); }
  absl::StatusOr<Node> GetNode(absl::string_view name) const {
    return scheduler_->nodes().GetNode(name);
  }
  absl::StatusOr<NodePage> ListNodes(const LabelSelector& selector,
                                     int page_size,
                                     absl::string_view page_token) const {
    return scheduler_->nodes().ListNodes(selector, page_size, page_token);
  }
  std::vector<CapacityEntry> GetCapacity() const {
    return scheduler_->nodes().GetCapacity();
  }
  std::shared_ptr<const AcceleratorTypeSet> accelerator_types() const {
    return scheduler_->nodes().accelerator_types();
  }
  absl::Status ReplaceAcceleratorTypes(
      std::shared_ptr<const AcceleratorTypeSet> next) {
    return scheduler_->nodes().ReplaceAcceleratorTypes(std::move(next));
  }
  absl::StatusOr<AllocationPage> ListAllocations(
      const AllocationFilter& filter, int page_size,
      absl::string_view page_token) const {
    return scheduler_->allocations().ListAllocations(filter, page_size, page_token);
  }
  absl::StatusOr<ExplainResult> Explain(
      const AllocationRequest& request) const {
    return scheduler_->allocations().Explain(request);
  }
  absl::StatusOr<int> Sweep() { return scheduler_->Sweep(); }
  absl::StatusOr<QueuePage> GetQueue(absl::string_view tenant, int page_size,
                                     absl::string_view page_token) const {
    return scheduler_->queue().GetQueue(tenant, page_size, page_token);
  }
  std::vector<TenantStanding> TenantStandings(absl::string_view tenant) const {
    return scheduler_->queue().TenantStandings(tenant);
  }
  absl::Status SetTenantPolicies(std::shared_ptr<const TenantPolicies> next) {
    return scheduler_->queue().SetTenantPolicies(std::move(next));
  }
  SchedulerStats Stats() const { return scheduler_->Stats(); }
  EventHub& events() { return scheduler_->events(); }
  GroupCommitter& committer() { return scheduler_->committer(); }

 private:
  // Calls `start` with a callback and waits until that callback has run.
  template <typename T, typename Start>
  static absl::StatusOr<T> Wait(Start start) {
    absl::StatusOr<T> result;
    absl::Notification done;
    start([&](absl::StatusOr<T> r) {
      result = std::move(r);
      done.Notify();  // the last use of `result` and `done` by the callback
    });
    done.WaitForNotification();
    return result;
  }
  template <typename Start>
  static absl::Status WaitStatus(Start start) {
    absl::Status result;
    absl::Notification done;
    start([&](absl::Status s) {
      result = std::move(s);
      done.Notify();
    });
    done.WaitForNotification();
    return result;
  }

  std::unique_ptr<Scheduler> owned_;  // null when wrapping
  Scheduler* const scheduler_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_BLOCKING_SCHEDULER_H_
