#include "core/scheduler/scheduler.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/base/status_macros.h"
#include "core/catalog/pool_queries.h"
#include "core/plugins/fragmentation/fragmentation.h"
#include "core/plugins/registry.h"

namespace accelsched {
namespace {

// The framework of the options' profile: the plugins are the registry's
// own, so a failure is a bug.
std::unique_ptr<const Framework> MakeFramework(
    const Scheduler::Options& options) {
  absl::StatusOr<std::unique_ptr<Framework>> fw = Framework::Create(
      PluginRegistry(),
      DefaultProfile(ProfileOptions{options.packing, options.preemption}));
  if (!fw.ok()) {
    std::fprintf(stderr, "accelsched: the default profile: %s\n",
                 std::string(fw.status().ToString()).c_str());
    std::abort();
  }
  return *std::move(fw);
}

}  // namespace

Scheduler::Scheduler(Store* store, const Clock* clock,
                     std::shared_ptr<const AcceleratorTypeSet> types,
                     Options options)
    : options_(std::move(options)),
      framework_(MakeFramework(options_)),
      state_(std::make_unique<SchedulerState>(store, clock, std::move(types),
                                              options_)),
      lifecycle_(*state_, *framework_, options_, order_),
      nodes_(*state_, lifecycle_, options_),
      allocations_(*state_, lifecycle_, *framework_, options_),
      queue_(*state_, lifecycle_) {}

Scheduler::~Scheduler() = default;

absl::Status Scheduler::Load() {
  absl::MutexLock lock(&state_->mu());
  lifecycle_.AssertHeld();
  return state_->LoadLocked();
}

absl::Status Scheduler::Ready() const { return state_->Ready(); }

absl::StatusOr<int> Scheduler::Sweep() {
  std::vector<std::shared_ptr<GroupCommitter::Ticket>> tickets;
  int expired = 0;
  {
    absl::MutexLock lock(&state_->mu());
    lifecycle_.AssertHeld();
    RETURN_IF_ERROR(state_->ReloadIfStale());
    SchedulerMemory& m = state_->memory();
    const absl::Time now = state_->clock().Now();
    if (auto t = lifecycle_.ExpireDue(now, &expired)) {
      tickets.push_back(std::move(t));
    }
    if (Write dropped; m.mig.DropDue(m.catalog, now, dropped)) {
      tickets.push_back(state_->Commit(std::move(dropped)));
    }
    // Time alone may let pending requests in (a node's heartbeat, a
    // reservation's start).
    if (auto t = lifecycle_.Admit(now, /*refresh=*/true)) {
      tickets.push_back(std::move(t));
    }
    Write write;
    for (std::string& id : m.book.ForgetEnded(now - options_.retention)) {
      // Built in place: gcc 12 warns of a moved-from variant otherwise.
      write.mutations.emplace_back(std::in_place_type<DeleteAllocationMutation>,
                                   DeleteAllocationMutation{std::move(id)});
    }
    if (!write.mutations.empty()) {
      tickets.push_back(state_->Commit(std::move(write)));
    }
  }
  for (const auto& t : tickets) RETURN_IF_ERROR(state_->committer().Wait(t));
  return expired;
}

SchedulerStats Scheduler::Stats() const {
  SchedulerStats stats;
  absl::ReaderMutexLock lock(&state_->mu());
  const SchedulerMemory& m = state_->view();
  stats.capacity = CapacityOf(m.catalog.index());
  stats.active_by_tenant = m.book.tallies().active_by_tenant();
  stats.pending_by_tenant = m.queue.CountByTenant();
  queue_.AssertReaderHeld();
  stats.tenants = queue_.TenantStandingsLocked("");
  std::tie(stats.schedulable_nodes, stats.cordoned_nodes) =
      NodeCounts(m.catalog.nodes());
  for (const auto& [node, account] : m.catalog.index().accounts()) {
    if (account.allocatable.has_value()) stats.node_accounts[node] = account;
  }
  const absl::Time now = state_->clock().Now();
  for (const auto& [key, pool] : m.catalog.index().pools()) {
    if (!key.partition.empty()) continue;
    stats.fragmentation[key.model] =
        FragmentationRatio(pool, m.mix.ShapesFor(key, now));
  }
  return stats;
}

}  // namespace accelsched
