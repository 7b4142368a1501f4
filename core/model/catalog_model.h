// The catalog's value types: nodes, their devices, MIG slices. Plain copyable
// values.
#ifndef ACCELSCHED_CORE_MODEL_CATALOG_MODEL_H_
#define ACCELSCHED_CORE_MODEL_CATALOG_MODEL_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/base/labels.h"
#include "core/model/device_class.h"
#include "core/model/device_link.h"
#include "core/model/gpu_share.h"
#include "core/model/node_resources.h"

namespace accelsched {

struct MigSlice {
  std::string id;       // MIG device UUID
  std::string profile;  // "1g.10gb"
  int start = 0;        // placement start slot

  bool operator==(const MigSlice&) const = default;
};

// A dynamic MIG re-layout the server planned for one GPU
// (docs/concepts/mig.md): the whole layout it wants the GPU to have. Its agent
// destroys the GPU instances not in it and creates the ones missing.
struct MigPlan {
  // Every slice of the layout, ascending by start: the ones kept with their
  // ids, the ones to create with an empty id.
  std::vector<MigSlice> slices;
  // Issued by the scheduler, one more than any plan before it anywhere in
  // the cluster (never reused, even for a GPU that leaves and returns), so
  // that an agent can tell a new plan from one it has handled.
  uint64_t generation = 0;
  // The PENDING allocation it was made for.
  std::string allocation_id;
  // Dropped when the node has not reported the layout by then.
  absl::Time deadline = absl::InfiniteFuture();

  bool operator==(const MigPlan&) const = default;
};

struct Device {
  std::string id;  // unique in the cluster: GPU UUID, TPU chip id
  DeviceClass device_class = DeviceClass::kNvidiaGpu;
  std::string model;            // as reported
  std::string canonical_model;  // set by validation
  uint64_t memory_bytes = 0;
  int index = 0;
  bool healthy = true;
  bool mig_enabled = false;
  std::vector<MigSlice> mig_slices;
  std::string tpu_slice_id;
  std::string tpu_topology;
  // Whether it takes shares (GpuShare) and how the node shares it; not kNone
  // only for a whole NVIDIA GPU not in MIG mode (ValidateDeviceGeometry).
  GpuSharing sharing = GpuSharing::kNone;
  // The re-layout planned for this GPU (MIG mode only); nullopt when none.
  // Its slices planned away are not allocatable while it stands. Kept by
  // the catalog across re-registrations, never set by clients.
  std::optional<MigPlan> mig_plan;
  // How it reaches the node's other GPUs (at most one link per peer and
  // kind, each peer another device of the node: NormalizeAndValidateNode);
  // empty when unknown.
  std::vector<DeviceLink> links;
  // The generation of the last plan made for this GPU (0: none yet), kept
  // after its plan ends: the scheduler issues generations above every one
  // stored.
  uint64_t mig_generation = 0;
  // Dropped by a re-registration while in a live allocation: kept, unhealthy,
  // until released, then removed. Never set by clients.
  bool removed = false;

  bool operator==(const Device&) const = default;
};

struct Node {
  std::string name;
  Labels labels;
  std::vector<Device> devices;
  bool schedulable = true;
  absl::Time last_heartbeat = absl::UnixEpoch();
  // What pods accelsched places may use on the node besides accelerators;
  // nullopt: not accounted there.
  std::optional<NodeResources> allocatable;
  // Output only, never stored: allocatable minus what live allocations hold
  // on the node (negative where allocatable was lowered under them); set with
  // allocatable on the nodes the scheduler returns.
  std::optional<NodeResources> available;

  bool operator==(const Node&) const = default;
};

// Nodes by name, in name order, with a hashed index beside the ordered map:
// a placement looks up the node of every unit it weighs, and a lookup in
// the ordered map alone compares ~15 names of a large cluster (node names
// share long prefixes), ~600 instructions of the ~2,200 of a share's whole
// placement (bench/README.md). A std::map's API, as much of it as is used;
// its iterators and references stay valid as std::map's do.
class NodeMap {
 public:
  using Map = std::map<std::string, Node, std::less<>>;
  using value_type = Map::value_type;
  using iterator = Map::iterator;
  using const_iterator = Map::const_iterator;

  NodeMap() = default;
  NodeMap(std::initializer_list<value_type> nodes) : map_(nodes) { Reindex(); }
  NodeMap(const NodeMap& other) : map_(other.map_) { Reindex(); }
  NodeMap& operator=(const NodeMap& other) {
    if (this != &other) {
      map_ = other.map_;
      Reindex();
    }
    return *this;
  }
  // A moved std::map keeps its nodes, so the index stays true.
  NodeMap(NodeMap&&) noexcept = default;
  NodeMap& operator=(NodeMap&&) noexcept = default;

  iterator begin() { return map_.begin(); }
  iterator end() { return map_.end(); }
  const_iterator begin() const { return map_.begin(); }
  const_iterator end() const { return map_.end(); }
  size_t size() const { return map_.size(); }
  bool empty() const { return map_.empty(); }

  iterator find(absl::string_view name) {
    auto it = index_.find(name);
    return it == index_.end() ? map_.end() : it->second;
  }
  const_iterator find(absl::string_view name) const {
    auto it = index_.find(name);
    return it == index_.end() ? map_.end() : const_iterator(it->second);
  }
  bool contains(absl::string_view name) const { return index_.contains(name); }
  size_t count(absl::string_view name) const { return index_.count(name); }
  const Node& at(absl::string_view name) const {
    return index_.at(name)->second;
  }
  // The ordered map's own: the first name after `name`, or not before it.
  const_iterator upper_bound(absl::string_view name) const {
    return map_.upper_bound(name);
  }
  const_iterator lower_bound(absl::string_view name) const {
    return map_.lower_bound(name);
  }

  template <typename... Args>
  std::pair<iterator, bool> emplace(Args&&... args) {
    auto added = map_.emplace(std::forward<Args>(args)...);
    if (added.second) Index(added.first);
    return added;
  }
  template <typename... Args>
  std::pair<iterator, bool> try_emplace(const std::string& name,
                                        Args&&... args) {
    auto added = map_.try_emplace(name, std::forward<Args>(args)...);
    if (added.second) Index(added.first);
    return added;
  }
  Node& operator[](const std::string& name) {
    return try_emplace(name).first->second;
  }
  iterator erase(iterator it) {
    index_.erase(absl::string_view(it->first));
    return map_.erase(it);
  }
  size_t erase(absl::string_view name) {
    auto it = find(name);
    if (it == end()) return 0;
    erase(it);
    return 1;
  }
  void clear() {
    index_.clear();
    map_.clear();
  }

  bool operator==(const NodeMap& other) const { return map_ == other.map_; }

 private:
  void Index(iterator it) { index_.emplace(absl::string_view(it->first), it); }
  void Reindex() {
    index_.clear();
    for (auto it = map_.begin(); it != map_.end(); ++it) Index(it);
  }

  Map map_;
  // Keys are views of map_'s keys, which do not move.
  absl::flat_hash_map<absl::string_view, iterator> index_;
};

// The device of `node` whose id is `id` (a removed one too), or nullptr.
inline const Device* FindDevice(const Node& node, absl::string_view id) {
  for (const Device& d : node.devices) {
    if (d.id == id) return &d;
  }
  return nullptr;
}
inline Device* FindDevice(Node& node, absl::string_view id) {
  for (Device& d : node.devices) {
    if (d.id == id) return &d;
  }
  return nullptr;
}

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_MODEL_CATALOG_MODEL_H_
