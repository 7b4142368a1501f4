// The allocation value types: requests, allocations, and the events announcing
// changes.
#ifndef ACCELSCHED_CORE_MODEL_ALLOCATION_MODEL_H_
#define ACCELSCHED_CORE_MODEL_ALLOCATION_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "core/base/labels.h"
#include "core/model/device_class.h"
#include "core/model/gpu_share.h"
#include "core/model/node_resources.h"
#include "core/model/request_spec.h"

namespace accelsched {

// Numbered as accelsched.v1.AllocationState.
enum class AllocationState {
  kUnspecified = 0,
  kActive = 1,
  kReleased = 2,
  kExpired = 3,
  kPending = 4,
  kPreempted = 5,
};

// Why an allocation ended; also the `reason` label of
// accelsched_releases_total.
inline constexpr char kReasonReleased[] = "released";
inline constexpr char kReasonExpired[] = "expired";
inline constexpr char kReasonNodeRemoved[] = "node_removed";
inline constexpr char kReasonPreempted[] = "preempted";
// A pending request withdrawn by Release.
inline constexpr char kReasonWithdrawn[] = "withdrawn";
// A pending request whose pending lease ran out.
inline constexpr char kReasonPendingExpired[] = "pending_expired";

// What the partition fields of a request asked for.
enum class PartitionKind {
  kUnset = 0,          // a whole non-MIG GPU, or for TPU an error
  kUnpartitioned = 1,  // a whole non-MIG GPU
  kPartitionSize = 2,  // a MIG profile, or a TPU topology
};

// Allocate's input as the client sent it (names not yet normalised).
struct AllocationRequest {
  std::string request_id;
  std::string device;  // empty: any model of device_class
  // Further models that will do as well as `device`.
  std::vector<std::string> alternative_devices;
  PartitionKind partition_kind = PartitionKind::kUnset;
  std::string partition_size;
  DeviceClass device_class = DeviceClass::kNvidiaGpu;
  int count = 0;  // 0 means 1
  Labels node_selector;
  std::string tenant;
  // The container of the pod that gets the devices; not part of what makes
  // two requests with one request_id the same.
  std::string container_name;
  int priority = 0;
  absl::Duration lease = absl::ZeroDuration();  // 0 means the server default
  // Wait as PENDING when it cannot be admitted now.
  bool queue = false;
  // A gang: `replicas` groups of `count` units, each group on its own node,
  // all admitted together; 0 means 1.
  int replicas = 0;
  // With replicas: every group on nodes sharing one value of this label.
  std::string topology_key;
  // With replicas, levels of the server's --topology_levels (node labels):
  // every group inside one domain of `required_topology` (as topology_key),
  // and in as few domains of `preferred_topology` as can hold them.
  std::string required_topology;
  std::string preferred_topology;
  // What each group's pod needs on its node besides accelerators; nullopt:
  // not accounted.
  std::optional<NodeResources> pod_resources;
  // A share of one GPU instead of whole devices; nullopt: whole devices.
  std::optional<GpuShare> share;
  // How long the task is expected to run once admitted; 0: not given.
  absl::Duration expected_duration = absl::ZeroDuration();
};

struct AllocatedDevice {
  std::string node;
  std::string device_id;     // GPU UUID or TPU chip id
  std::string mig_slice_id;  // set for a MIG slice
  std::string profile;       // MIG profile of that slice
  // What the allocation holds of the device when it holds a share; nullopt:
  // the whole device or slice.
  std::optional<GpuShare> share = std::nullopt;
  // With a share: how the device was shared when the share was taken (its
  // placement's DRA configuration and MPS limits follow it; a device cannot
  // change it while it holds shares). kNone for a whole device or slice.
  GpuSharing sharing = GpuSharing::kNone;

  bool operator==(const AllocatedDevice&) const = default;
};

// What the placement on one node of an allocation needs from that node,
// taken when the allocation is made: a node relabelled later does not move
// a pod already told where to go.
struct PlacementTarget {
  std::string node;
  std::string hostname;  // its kubernetes.io/hostname label, else its name
  // The value of the device label (k8s.amazonaws.com/accelerator, for TPUs
  // cloud.google.com/gke-tpu-accelerator): the node's own when it has the
  // label, else the one propeller writes for the request's spelling of the
  // model (core/placement/placement.h RequestedDeviceLabel).
  std::string device_label;
  std::string mig_strategy;  // its nvidia.com/mig.strategy label, "" if none

  bool operator==(const PlacementTarget&) const = default;
};

// What was asked for (the RequestSpec: normalised, the retry's fingerprint,
// the queue's shape and the placement's input), who asked, and what it got.
struct Allocation : RequestSpec {
  std::string id;
  std::string request_id;
  AllocationState state = AllocationState::kUnspecified;
  std::string node;  // for a multi-host TPU slice: the first host
  std::vector<AllocatedDevice> devices;
  std::string tenant;
  int priority = 0;
  absl::Time created_at = absl::UnixEpoch();
  // When it became ACTIVE: created_at unless it waited as PENDING.
  absl::Time admitted_at = absl::UnixEpoch();
  absl::Time expires_at = absl::UnixEpoch();
  absl::Time ended_at = absl::UnixEpoch();  // when it stopped being ACTIVE
  std::string end_reason;  // kReason*; empty while ACTIVE, PENDING, or
                           // PREEMPTED within its grace
  // PREEMPTED: the pending allocation it made way for.
  std::string preempted_by;

  // The request's accelerator.device (when set), then its
  // alternative_devices, as the client spelled them: propeller writes the
  // spelling's own label value (core/placement/placement.h
  // RequestedDeviceLabel), so a PENDING allocation admitted later, or after
  // a restart, needs them. Those of the request that made the allocation: a
  // retry spelled otherwise changes nothing. Empty for a request naming no
  // model, and for allocations stored before they were kept (SQLite schema
  // 7, PostgreSQL schema 3).
  std::vector<std::string> device_spellings;
  std::string model;  // canonical: the model of the allocated devices

  // The placement's input beyond the request (core/placement/placement.h): one
  // target per node, in node-name order; the type's extended resource ("": the
  // device class's); the container the pod-spec patch names ("": the first).
  std::vector<PlacementTarget> targets;
  std::string resource_name;
  std::string container_name;

  // Output only, never stored: where a PENDING allocation stands in the
  // queue (1-based) and what keeps it waiting.
  int queue_position = 0;
  std::string pending_reason;
  // Output only, never stored: when a PENDING allocation is expected to start
  // (ReservationState::starts, never before the reply); nullopt when nothing
  // bounds it.
  std::optional<absl::Time> estimated_start;

  // Holds its devices: ACTIVE, or PREEMPTED within its grace.
  bool live() const {
    return state == AllocationState::kActive ||
           (state == AllocationState::kPreempted && end_reason.empty());
  }
  bool pending() const { return state == AllocationState::kPending; }
  // Whether any of its devices is on `node_name`.
  bool touches(const std::string& node_name) const {
    for (const AllocatedDevice& d : devices) {
      if (d.node == node_name) return true;
    }
    return false;
  }
  // The share its device holds, or nullptr for whole units (and for a
  // share request not placed yet).
  const GpuShare* held_share() const {
    return share.has_value() && devices.size() == 1 &&
                   devices.front().share.has_value()
               ? &*devices.front().share
               : nullptr;
  }
  bool operator==(const Allocation&) const = default;
};

struct Event {
  enum class Type {
    kAllocated = 1,
    kReleased = 2,
    kExpired = 3,
    kNodeRegistered = 4,
    kNodeRemoved = 5,
    kNodeSchedulableChanged = 6,
    kDeviceHealthChanged = 7,
    kPreempted = 8,
    kAdmitted = 9,  // a PENDING allocation became ACTIVE
    // A MIG re-layout was planned for a pending allocation (`node`; the GPU
    // and its layout in `reason`).
    kMigRelayoutPlanned = 10,
    // A MIG re-layout plan ended unapplied; why in `reason`.
    kMigRelayoutDropped = 11,
  };
  Type type;
  absl::Time time;
  Allocation allocation;  // for allocation events
  std::string node;
  std::string reason;
  uint64_t sequence = 0;  // set by the commit that records it
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_MODEL_ALLOCATION_MODEL_H_
