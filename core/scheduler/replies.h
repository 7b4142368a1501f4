// What the scheduler's reads return beyond the catalog's and the book's own
// types: an explanation, a page of the queue, a tenant's standing, and the
// snapshot the metrics read. Plain values, copied out under the scheduler's
// lock.
#ifndef ACCELSCHED_CORE_SCHEDULER_REPLIES_H_
#define ACCELSCHED_CORE_SCHEDULER_REPLIES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "core/catalog/capacity_index.h"
#include "core/framework/cycle_record.h"
#include "core/framework/diagnosis.h"
#include "core/model/allocation_model.h"
#include "core/model/capacity.h"
#include "core/model/unit.h"
#include "core/packing/expected_duration.h"
#include "core/packing/placement_score.h"

namespace accelsched {

struct ExplainResult {
  bool feasible = false;
  Allocation
      would_allocate;  // devices and placement input only; no id or state
  Explanation explanation;
  // When the request's request_id is PENDING.
  int queue_position = 0;
  std::string pending_reason;
  std::optional<absl::Time> estimated_start;
  // The fragmentation policy's candidates, best first (at most
  // FragmentationPlugin::kMaxScored).
  std::vector<RankedPlacement> scores;
  // The runtime their lease term weighed, and where it came from.
  DurationEstimate expected;
  // Every step of the scheduling cycle, in the order it ran.
  std::vector<CycleStep> steps;
};

struct QueuePage {
  std::vector<Allocation> pending;  // admission order
  std::string next_page_token;
};

// A tenant's standing: what it holds per pool against its quota, its share.
// Amounts in thousandths of a unit, as quotas count (a GPU share its
// compute_milli).
struct TenantStanding {
  struct Pool {
    PoolKey pool;
    int64_t used_milli = 0;
    int64_t nominal_milli = -1;  // -1: no quota
    int64_t borrowed_milli = 0;
  };
  std::string tenant;
  double dominant_share = 0;
  double weight = 1;
  std::string cohort;
  std::vector<Pool> pools;
  int64_t pending = 0;
};

// The scheduler at one instant, as the metrics report it: every field read
// under the same acquisition of the scheduler's lock, so they agree.
struct SchedulerStats {
  // As Scheduler::GetCapacity: sorted by device class, model, partition.
  std::vector<CapacityEntry> capacity;
  // Live allocations per tenant.
  std::map<std::string, int64_t> active_by_tenant;
  // PENDING allocations per tenant.
  std::map<std::string, int64_t> pending_by_tenant;
  // As Scheduler::TenantStandings(""): every tenant.
  std::vector<TenantStanding> tenants;
  // Nodes by schedulable flag.
  int64_t schedulable_nodes = 0;
  int64_t cordoned_nodes = 0;
  // The accounted nodes' CPU, memory and pods (those with allocatable), by
  // name.
  std::map<std::string, NodeAccount> node_accounts;
  // Per model of whole devices (partition ""), the share of its free units
  // that the recent mix of requests could not use where they lie
  // (FragmentationRatio); 0 with no free unit or no request seen.
  std::map<std::string, double> fragmentation;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_SCHEDULER_REPLIES_H_
