// The allocation value types: requests, allocations, and the events announcing
// changes.
#ifndef ACCELSCHED_CORE_ALLOCATION_MODEL_H_
#define ACCELSCHED_CORE_ALLOCATION_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "core/device_class.h"
#include "core/labels.h"

namespace accelsched {

// Numbered as accelsched.v1.AllocationState.
enum class AllocationState {
  kUnspecified = 0,
  kActive = 1,
  kReleased = 2,
  kExpired = 3,
  kPending = 4,
};

// Why an allocation ended; also the `reason` label of
// accelsched_releases_total.
inline constexpr char kReasonReleased[] = "released";
inline constexpr char kReasonExpired[] = "expired";
inline constexpr char kReasonNodeRemoved[] = "node_removed";

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
  int priority = 0;
  absl::Duration lease = absl::ZeroDuration();  // 0 means the server default
};

struct AllocatedDevice {
  std::string node;
  std::string device_id;     // GPU UUID or TPU chip id
  std::string mig_slice_id;  // set for a MIG slice
  std::string profile;       // MIG profile of that slice

  bool operator==(const AllocatedDevice&) const = default;
};

struct Allocation {
  std::string id;
  std::string request_id;
  AllocationState state = AllocationState::kUnspecified;
  std::string node;  // for a multi-host TPU slice: the first host
  std::vector<AllocatedDevice> devices;
  std::string tenant;
  int priority = 0;
  absl::Time created_at = absl::UnixEpoch();
  absl::Time expires_at = absl::UnixEpoch();
  absl::Time ended_at = absl::UnixEpoch();  // when it stopped being ACTIVE
  std::string end_reason;                   // kReason*; empty while ACTIVE

  // What was asked for, normalised (the idempotency fingerprint and the
  // placement's input), and the model chosen.
  DeviceClass device_class = DeviceClass::kNvidiaGpu;
  // The acceptable canonical models, sorted and unique; empty: any model of
  // device_class.
  std::vector<std::string> requested_models;
  std::string model;      // canonical: the model of the allocated devices
  std::string partition;  // "" whole device; MIG profile; TPU topology
  int count = 1;
  // The value of the first node's kubernetes.io/hostname label (its name when
  // absent).
  std::string hostname;

  bool live() const { return state == AllocationState::kActive; }
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
  };
  Type type;
  absl::Time time;
  Allocation allocation;  // for allocation events
  std::string node;
  std::string reason;
  uint64_t sequence = 0;  // set by the commit that records it
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_ALLOCATION_MODEL_H_
