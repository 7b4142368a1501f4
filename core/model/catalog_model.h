// The catalog's value types: nodes, their devices, MIG slices. Plain copyable
// values.
#ifndef ACCELSCHED_CORE_MODEL_CATALOG_MODEL_H_
#define ACCELSCHED_CORE_MODEL_CATALOG_MODEL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

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

// A dynamic MIG re-layout the server planned for one GPU (API.md, "Dynamic
// MIG re-layout"): the whole layout it wants the GPU to have. Its agent
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

// Nodes by name.
using NodeMap = std::map<std::string, Node, std::less<>>;

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
