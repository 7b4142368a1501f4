// The in-memory index of allocatable units (whole devices, MIG slices, whole
// TPU slices), grouped into pools by (device class, model, partition) and,
// within a pool, by home node, ordered by free count and then by the node's
// available CPU, with the largest available memory kept per subtree
// (HomeTree), so that a best-fit match never scans the whole cluster, nor
// the nodes short of CPU or memory. It also keeps each node's CPU, memory and
// pod accounting (NodeAccount). Not thread-safe: the scheduler guards it.
#ifndef ACCELSCHED_CORE_CATALOG_CAPACITY_INDEX_H_
#define ACCELSCHED_CORE_CATALOG_CAPACITY_INDEX_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/strings/string_view.h"
#include "core/catalog/home_tree.h"
#include "core/model/capacity.h"
#include "core/model/node_resources.h"
#include "core/model/unit.h"

namespace accelsched {

// A node's CPU, memory and pods: what it offers (nullopt: not accounted) and
// what live allocations hold there (kept whether or not it is accounted, so
// that accounting switched on later starts from the truth).
struct NodeAccount {
  std::optional<NodeResources> allocatable;
  NodeResources held;

  // allocatable - held; negative where allocatable was lowered under what is
  // held; pods 0 where they are not limited (allocatable pods 0). Only
  // meaningful with allocatable.
  NodeResources available() const {
    NodeResources a = allocatable.value_or(NodeResources{});
    const bool pods_limited = a.pods > 0;
    a -= held;
    if (!pods_limited) a.pods = 0;
    return a;
  }
};

class CapacityIndex {
 public:
  struct Home {
    std::vector<std::string> units;  // keys
    int free = 0;
    // Its by_free keys while free > 0: the node's available CPU and memory
    // (kUnaccounted* when the node is not accounted).
    int64_t cpu = kUnaccountedCpu;
    int64_t memory = kUnaccountedMemory;
    // The allocations holding units here whole, and how many each: when
    // the home's units come free, without a walk of its units.
    absl::flat_hash_map<std::string, int> holders;
  };
  // A home with free units, in best-fit order: fewest free units, then least
  // available CPU (kUnaccountedCpu when not accounted), then name; with its
  // available memory (kUnaccountedMemory when not accounted).
  using FreeEntry = HomeTree::Entry;
  struct Pool {
    std::map<std::string, Home, std::less<>> homes;
    HomeTree by_free;  // homes with free > 0
    // homes_with_free[f]: how many homes have exactly f free units (f > 0), so
    // that a match across several pools visits only pools with a home of the
    // free count it is looking at, without a search.
    std::vector<int> homes_with_free;
    std::multiset<int>
        home_sizes;  // units per home: the most one node could ever hold
    // The memory of each unit that takes shares, whatever its state: the
    // largest share memory one GPU could ever hold.
    std::multiset<uint64_t> sharing_memory;
    // The homes that are accounted, by what they offer (count 0, allocatable
    // CPU and memory), and how many are not: what one node of the pool could
    // ever give a pod.
    HomeTree by_allocatable;
    int64_t unaccounted_homes = 0;
    int64_t total = 0;
    int64_t allocated = 0;
    int64_t unhealthy = 0;  // not allocated and not healthy
    // The units that may take a share (Unit::shareable) with compute left,
    // as entries {free milli, 0, unit key, free GPU memory}: best fit per GPU
    // is a lower bound on the milli a share needs, past the GPUs short of its
    // memory (HomeTree's largest memory per subtree). Those with shares on
    // them by the shares' group (Unit::share_group; no empty tree kept), so
    // that a share looks only at GPUs its group may join; those without any
    // in `unshared`, which every group may take.
    std::map<std::string, HomeTree, std::less<>> by_share;
    HomeTree unshared;
    // Over those units: the compute (thousandths of a GPU) and memory no
    // share holds.
    int64_t free_share_milli = 0;
    int64_t free_share_memory = 0;
    // The compute shares hold, on any unit of the pool.
    int64_t shared_milli = 0;

    int64_t free() const { return total - allocated - unhealthy; }
    int HomesWithFree(int f) const {
      return f < static_cast<int>(homes_with_free.size()) ? homes_with_free[f]
                                                          : 0;
    }
  };

  // Adds or replaces the unit with `unit.key`.
  void Put(Unit unit);
  void Remove(absl::string_view key);
  // Marks the unit held whole by live allocation `holder` ("" frees it).
  // No-op for unknown keys.
  void SetHolder(absl::string_view key, absl::string_view holder);
  // Adds (sign +1) or removes (-1) a share on the unit: `share.memory_bytes`
  // as resolved for the device (ShareMemory). No-op for unknown keys; the
  // caller keeps the sums within the GPU (matching does).
  void AddShare(absl::string_view key, const GpuShare& share, int sign);

  // Sets what `node` offers (nullopt: not accounted); what is held there is
  // kept. Re-keys the node's homes in by_free and by_allocatable: O(units on
  // the node x log).
  void SetAllocatable(absl::string_view node,
                      std::optional<NodeResources> allocatable);
  // Adds (sign +1) or removes (-1) what one live allocation holds on `node`.
  void AddHeld(absl::string_view node, const NodeResources& held, int sign);
  // The node's account; nullptr when it has no allocatable and holds nothing.
  const NodeAccount* Account(absl::string_view node) const;
  // Every account, nodes without allocatable included.
  const absl::flat_hash_map<std::string, NodeAccount>& accounts() const {
    return accounts_;
  }
  // The first resource `need` does not fit in `node`'s available plus
  // `freed` (what would come free there: victims, ended leases)
  // ("cpu_milli", "memory_bytes", "pods"), or nullptr when it fits or `node`
  // is not accounted.
  const char* Shortfall(absl::string_view node, const NodeResources& need,
                        const NodeResources& freed = NodeResources{}) const;

  const Unit* Find(absl::string_view key) const;
  const Pool* FindPool(const PoolKey& key) const;
  // Every pool; pool_queries.h reads them.
  const std::map<PoolKey, Pool>& pools() const { return pools_; }
  // Keys of the units that span `node` (for TPU slices, also those homed
  // elsewhere).
  std::vector<std::string> UnitsOnNode(absl::string_view node) const;

 private:
  void Count(const Unit& u, int sign);
  // Adds (sign +1) or removes (-1) home `node` in `pool`'s by_allocatable
  // or unaccounted_homes.
  void CountHome(Pool& pool, absl::string_view node, int sign);
  // The node's by_free keys: its available CPU and memory.
  std::pair<int64_t, int64_t> Keys(absl::string_view node) const;
  // Re-keys `node`'s entries in by_free after its available CPU or memory
  // changed.
  void Rekey(absl::string_view node);

  std::map<PoolKey, Pool> pools_;
  absl::flat_hash_map<std::string, NodeAccount> accounts_;
  absl::node_hash_map<std::string, Unit> units_;
  absl::flat_hash_map<std::string, std::set<std::string>> units_by_node_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_CATALOG_CAPACITY_INDEX_H_
