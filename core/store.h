// The durable record the catalog writes through. core/ defines it; storage/
// implements it (SQLite today), so another engine can be added without touching
// core. Implementations need not be thread-safe: the catalog calls them under
// its own writer lock.
#ifndef ACCELSCHED_CORE_STORE_H_
#define ACCELSCHED_CORE_STORE_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/catalog_model.h"

namespace accelsched {

class Store {
 public:
  virtual ~Store() = default;

  // Every node with its labels and devices, for rebuilding memory at start-up.
  virtual absl::StatusOr<std::vector<Node>> LoadNodes() = 0;

  // Replaces the node's row, labels and devices with `node`, atomically.
  virtual absl::Status PutNode(const Node& node) = 0;

  // Writes the node's schedulable flag, last heartbeat and each device's
  // health, atomically.
  virtual absl::Status PutNodeStatus(const Node& node) = 0;

  // Deletes the node and everything it owns; NOT_FOUND if absent.
  virtual absl::Status DeleteNode(absl::string_view name) = 0;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_STORE_H_
