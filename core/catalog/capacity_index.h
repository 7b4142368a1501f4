// The in-memory index of allocatable units (whole devices, MIG slices, whole
// TPU slices), grouped into pools by (device class, model, partition) and,
// within a pool, by home node, ordered by free count so that a best-fit match
// never scans the whole cluster. Not thread-safe: the scheduler guards it.
#ifndef ACCELSCHED_CORE_CATALOG_CAPACITY_INDEX_H_
#define ACCELSCHED_CORE_CATALOG_CAPACITY_INDEX_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/strings/string_view.h"
#include "core/model/capacity.h"
#include "core/model/unit.h"

namespace accelsched {

class CapacityIndex {
 public:
  struct Home {
    std::vector<std::string> units;  // keys
    int free = 0;
  };
  struct Pool {
    std::map<std::string, Home, std::less<>> homes;
    std::set<std::pair<int, std::string>>
        by_free;  // (free, home) where free > 0
    // homes_with_free[f]: how many homes have exactly f free units (f > 0), so
    // that a match across several pools visits only pools with a home of the
    // free count it is looking at, without a search.
    std::vector<int> homes_with_free;
    std::multiset<int>
        home_sizes;  // units per home: the most one node could ever hold
    int64_t total = 0;
    int64_t allocated = 0;
    int64_t unhealthy = 0;  // not allocated and not healthy

    int64_t free() const { return total - allocated - unhealthy; }
    int HomesWithFree(int f) const {
      return f < static_cast<int>(homes_with_free.size()) ? homes_with_free[f]
                                                          : 0;
    }
  };

  // Adds or replaces the unit with `unit.key`.
  void Put(Unit unit);
  void Remove(absl::string_view key);
  // Marks the unit held by `allocation` ("" frees it). No-op for unknown keys.
  void SetAllocation(absl::string_view key, absl::string_view allocation);

  const Unit* Find(absl::string_view key) const;
  const Pool* FindPool(const PoolKey& key) const;
  const std::map<PoolKey, Pool>& pools() const { return pools_; }
  // The pools of `device_class` with `partition`, in model order.
  std::vector<std::pair<const PoolKey*, const Pool*>> PoolsOf(
      DeviceClass device_class, absl::string_view partition) const;
  // Keys of the units that span `node` (for TPU slices, also those homed
  // elsewhere).
  std::vector<std::string> UnitsOnNode(absl::string_view node) const;

  std::vector<CapacityEntry> Capacity() const;

 private:
  void Count(const Unit& u, int sign);

  std::map<PoolKey, Pool> pools_;
  absl::node_hash_map<std::string, Unit> units_;
  absl::flat_hash_map<std::string, std::set<std::string>> units_by_node_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_CATALOG_CAPACITY_INDEX_H_
