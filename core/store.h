// The durable record the scheduler writes through. core/ defines it; storage/
// implements it (SQLite today), so another engine can be added without touching
// core. Implementations need not be thread-safe: only the scheduler's commit
// thread calls them after Load.
#ifndef ACCELSCHED_CORE_STORE_H_
#define ACCELSCHED_CORE_STORE_H_

#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/allocation_model.h"
#include "core/catalog_model.h"

namespace accelsched {

// Replaces the node's row, labels and devices.
struct PutNodeMutation {
  Node node;
};
// Writes the node's schedulable flag, last heartbeat and each device's health.
struct PutNodeStatusMutation {
  Node node;
};
// Deletes the node and the devices it owns. Allocations are not touched.
struct DeleteNodeMutation {
  std::string name;
};
// Inserts or updates an allocation and the units it holds.
struct PutAllocationMutation {
  Allocation allocation;
  // Unit keys; live while the allocation is ACTIVE.
  std::vector<std::string> units;
  // False for an update of a stored allocation: its devices are already
  // written.
  bool created = false;
};
// Forgets an ended allocation (retention).
struct DeleteAllocationMutation {
  std::string id;
};

using Mutation =
    std::variant<PutNodeMutation, PutNodeStatusMutation, DeleteNodeMutation,
                 PutAllocationMutation, DeleteAllocationMutation>;

struct StoredAllocation {
  Allocation allocation;
  std::vector<std::string> units;
};

class Store {
 public:
  virtual ~Store() = default;

  // Every node with its labels and devices, for rebuilding memory at start-up.
  virtual absl::StatusOr<std::vector<Node>> LoadNodes() = 0;
  // Every allocation kept (live ones and ended ones not yet forgotten).
  virtual absl::StatusOr<std::vector<StoredAllocation>> LoadAllocations() = 0;

  // Applies every mutation in one durable transaction: all or none. Returns
  // only after the commit is on disk.
  virtual absl::Status Apply(absl::Span<const Mutation> mutations) = 0;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_STORE_H_
