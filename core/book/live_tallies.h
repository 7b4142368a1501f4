// Tallies over the live allocations (ACTIVE, and PREEMPTED ones in their
// grace): what each tenant holds of each pool, and of that what is
// PREEMPTED; which allocations made way for each preemptor; the priorities
// of the ACTIVE ones per pool. Kept by the allocation book as allocations
// are held, preempted and freed. Not thread-safe: it relies on its owner's
// lock.
#ifndef ACCELSCHED_CORE_BOOK_LIVE_TALLIES_H_
#define ACCELSCHED_CORE_BOOK_LIVE_TALLIES_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "core/catalog/capacity_index.h"
#include "core/model/allocation_model.h"

namespace accelsched {

class LiveTallies {
 public:
  // Per tenant, per pool, in thousandths of a unit; no zero entries.
  using UsageMap =
      std::map<std::string, std::map<PoolKey, int64_t>, std::less<>>;

  LiveTallies() = default;
  LiveTallies(const LiveTallies&) = delete;
  LiveTallies& operator=(const LiveTallies&) = delete;

  void Clear();
  // Live allocation `a`, holding `units` units, is counted.
  void Hold(const Allocation& a, size_t units);
  // Undoes Hold(a, units) for `a` in its present state.
  void Free(const Allocation& a, size_t units);
  // ACTIVE allocation `a`, counted, has just been marked PREEMPTED (state and
  // preempted_by set; priority as it was).
  void Preempt(const Allocation& a, size_t units);

  // What `tenant`'s live allocations hold of `pool`, in thousandths of a
  // unit (UsageMilliOf: a unit is 1000, a share its compute_milli); of
  // that, the PREEMPTED ones' (in their grace).
  int64_t UsageMilli(absl::string_view tenant, const PoolKey& pool) const;
  int64_t PreemptedUsageMilli(absl::string_view tenant,
                              const PoolKey& pool) const;
  // Every tenant's UsageMilli per pool (tenants holding none left out).
  const UsageMap& usage_milli() const { return usage_milli_; }
  // ACTIVE allocations per tenant (none: absent).
  const std::map<std::string, int64_t>& active_by_tenant() const {
    return active_by_tenant_;
  }
  // Ids of the PREEMPTED allocations still in their grace that made way for
  // `preemptor`.
  const std::set<std::string>& VictimsOf(absl::string_view preemptor) const;
  // The lowest priority among ACTIVE allocations holding units of `pool`;
  // nullopt when there are none.
  std::optional<int> LowestActivePriority(const PoolKey& pool) const;

 private:
  // One ACTIVE allocation of `priority` in `pool` is no longer counted.
  void ForgetPriority(const PoolKey& pool, int priority);
  void ForgetActive(const std::string& tenant);

  UsageMap usage_milli_;
  UsageMap preempted_usage_milli_;
  // preemptor id -> its victims still in their grace.
  absl::flat_hash_map<std::string, std::set<std::string>> victims_;
  // Priorities of the ACTIVE allocations per pool.
  std::map<PoolKey, std::multiset<int>> active_priorities_;
  std::map<std::string, int64_t> active_by_tenant_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_BOOK_LIVE_TALLIES_H_
