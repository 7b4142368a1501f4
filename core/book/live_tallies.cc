#include "core/book/live_tallies.h"

#include "core/book/allocation_holds.h"

namespace accelsched {
namespace {

void Add(LiveTallies::UsageMap& usage, const std::string& tenant,
         const PoolKey& pool, int64_t n) {
  if (n != 0) usage[tenant][pool] += n;
}

void Subtract(LiveTallies::UsageMap& usage, const std::string& tenant,
              const PoolKey& pool, int64_t n) {
  if (n == 0) return;
  auto t = usage.find(tenant);
  auto p = t->second.find(pool);
  p->second -= n;
  if (p->second == 0) t->second.erase(p);
  if (t->second.empty()) usage.erase(t);
}

int64_t Lookup(const LiveTallies::UsageMap& usage, absl::string_view tenant,
               const PoolKey& pool) {
  auto t = usage.find(tenant);
  if (t == usage.end()) return 0;
  auto p = t->second.find(pool);
  return p == t->second.end() ? 0 : p->second;
}

}  // namespace

void LiveTallies::Clear() {
  usage_milli_.clear();
  preempted_usage_milli_.clear();
  victims_.clear();
  active_priorities_.clear();
  active_by_tenant_.clear();
}

void LiveTallies::Hold(const Allocation& a, size_t units) {
  const PoolKey pool = PoolOf(a);
  const int64_t milli = UsageMilliOf(a, units);
  Add(usage_milli_, a.tenant, pool, milli);
  if (a.state == AllocationState::kPreempted) {
    victims_[a.preempted_by].insert(a.id);
    Add(preempted_usage_milli_, a.tenant, pool, milli);
  } else {
    active_priorities_[pool].insert(a.priority);
    ++active_by_tenant_[a.tenant];
  }
}

void LiveTallies::Free(const Allocation& a, size_t units) {
  const PoolKey pool = PoolOf(a);
  const int64_t milli = UsageMilliOf(a, units);
  Subtract(usage_milli_, a.tenant, pool, milli);
  if (a.state == AllocationState::kPreempted) {
    auto victims = victims_.find(a.preempted_by);
    victims->second.erase(a.id);
    if (victims->second.empty()) victims_.erase(victims);
    Subtract(preempted_usage_milli_, a.tenant, pool, milli);
  } else {
    ForgetPriority(pool, a.priority);
    ForgetActive(a.tenant);
  }
}

void LiveTallies::Preempt(const Allocation& a, size_t units) {
  const PoolKey pool = PoolOf(a);
  ForgetPriority(pool, a.priority);
  ForgetActive(a.tenant);
  Add(preempted_usage_milli_, a.tenant, pool, UsageMilliOf(a, units));
  victims_[a.preempted_by].insert(a.id);
}

void LiveTallies::ForgetActive(const std::string& tenant) {
  auto it = active_by_tenant_.find(tenant);
  if (--it->second == 0) active_by_tenant_.erase(it);
}

void LiveTallies::ForgetPriority(const PoolKey& pool, int priority) {
  auto it = active_priorities_.find(pool);
  it->second.erase(it->second.find(priority));
  if (it->second.empty()) active_priorities_.erase(it);
}

int64_t LiveTallies::UsageMilli(absl::string_view tenant,
                                const PoolKey& pool) const {
  return Lookup(usage_milli_, tenant, pool);
}

int64_t LiveTallies::PreemptedUsageMilli(absl::string_view tenant,
                                         const PoolKey& pool) const {
  return Lookup(preempted_usage_milli_, tenant, pool);
}

const std::set<std::string>& LiveTallies::VictimsOf(
    absl::string_view preemptor) const {
  static const std::set<std::string>* const kNone = new std::set<std::string>();
  auto it = victims_.find(preemptor);
  return it == victims_.end() ? *kNone : it->second;
}

std::optional<int> LiveTallies::LowestActivePriority(
    const PoolKey& pool) const {
  auto it = active_priorities_.find(pool);
  if (it == active_priorities_.end()) return std::nullopt;
  return *it->second.begin();
}

}  // namespace accelsched
