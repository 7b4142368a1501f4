// The scheduler's queue calls: the pending requests in admission order, the
// tenants' standings, and the tenants' policies in force. Thread-safe.
#ifndef ACCELSCHED_CORE_SCHEDULER_QUEUE_CALLS_H_
#define ACCELSCHED_CORE_SCHEDULER_QUEUE_CALLS_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/scheduler/lifecycle.h"
#include "core/scheduler/replies.h"
#include "core/scheduler/scheduler_state.h"
#include "core/tenants/tenant_policy.h"

namespace accelsched {

class QueueCalls {
 public:
  // Neither is owned; both must outlive the calls.
  QueueCalls(SchedulerState& state, Lifecycle& lifecycle)
      : state_(state), lifecycle_(lifecycle) {}
  QueueCalls(const QueueCalls&) = delete;
  QueueCalls& operator=(const QueueCalls&) = delete;

  // Pending allocations in admission order, of `tenant` (empty: all);
  // `page_size` as ListAllocations. INVALID_ARGUMENT for a bad page token.
  absl::StatusOr<QueuePage> GetQueue(absl::string_view tenant, int page_size,
                                     absl::string_view page_token) const;
  // Every tenant that holds units, waits, or is named by the policies; only
  // `tenant` when not empty.
  std::vector<TenantStanding> TenantStandings(absl::string_view tenant) const;
  // TenantStandings, with the state's lock held (Scheduler::Stats).
  std::vector<TenantStanding> TenantStandingsLocked(
      absl::string_view tenant) const ABSL_SHARED_LOCKS_REQUIRED(state_.mu());
  // As Lifecycle::AssertReaderHeld, for this reference to the state.
  void AssertReaderHeld() const ABSL_ASSERT_SHARED_LOCK(state_.mu()) {
    state_.mu().AssertReaderHeld();
  }
  // Makes `next` the tenants' weights, quotas and cohorts from now on, and
  // admits what they let in; blocks until that is durable. UNAVAILABLE while
  // memory is stale (a reload failed): the policies do not change.
  absl::Status SetTenantPolicies(std::shared_ptr<const TenantPolicies> next);

 private:
  SchedulerState& state_;
  Lifecycle& lifecycle_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_SCHEDULER_QUEUE_CALLS_H_
