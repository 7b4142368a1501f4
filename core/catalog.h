// The cluster catalog: every node and device, held in memory and written
// through to a Store before any change is acknowledged. Thread-safe (provides
// internal synchronization): one writer at a time, readers share.
#ifndef ACCELSCHED_CORE_CATALOG_H_
#define ACCELSCHED_CORE_CATALOG_H_

#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "core/capacity.h"
#include "core/catalog_model.h"
#include "core/clock.h"
#include "core/labels.h"
#include "core/store.h"

namespace accelsched {

struct NodePage {
  std::vector<Node> nodes;
  std::string next_page_token;  // empty on the last page
};

inline constexpr int kDefaultPageSize = 100;
inline constexpr int kMaxPageSize = 1000;

class Catalog {
 public:
  // `store` and `clock` are not owned and must outlive the catalog.
  Catalog(Store* store, const Clock* clock);
  Catalog(const Catalog&) = delete;
  Catalog& operator=(const Catalog&) = delete;

  // Rebuilds memory from the store. Call once, before serving.
  absl::Status Load();

  // Upsert: validates, keeps the cordon state of a known node, stamps the
  // heartbeat, and replaces the node's labels and devices. Returns the node as
  // stored.
  absl::StatusOr<Node> RegisterNode(Node node);
  absl::StatusOr<Node> GetNode(absl::string_view name) const;
  // `page_size` 0 means kDefaultPageSize; at most kMaxPageSize.
  absl::StatusOr<NodePage> ListNodes(const LabelSelector& selector,
                                     int page_size,
                                     absl::string_view page_token) const;
  absl::Status RemoveNode(absl::string_view name, bool force);
  absl::StatusOr<Node> SetNodeSchedulable(absl::string_view name,
                                          bool schedulable);
  // `unhealthy_device_ids` is the node's complete set of unhealthy devices now.
  absl::Status Heartbeat(absl::string_view name,
                         const std::vector<std::string>& unhealthy_device_ids);
  // Sorted by device class, model, partition.
  std::vector<CapacityEntry> GetCapacity() const;

  size_t node_count() const;

 private:
  // Chips each node holds of one TPU slice.
  struct TpuSliceState {
    std::string canonical_model;
    std::string topology;
    std::map<std::string, int> chips_by_node;
  };

  absl::Status CheckOwnership(const Node& node) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::Status CheckTpuSlices(const Node& node) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void Index(const Node& node) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Unindex(const Node& node) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<Node*> FindMutable(absl::string_view name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Store* const store_;
  const Clock* const clock_;

  mutable absl::Mutex mu_;
  std::map<std::string, Node, std::less<>> nodes_ ABSL_GUARDED_BY(mu_);
  // Device and MIG slice id -> owning node.
  absl::flat_hash_map<std::string, std::string> owner_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, TpuSliceState> tpu_slices_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_CATALOG_H_
