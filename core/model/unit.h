// Units: what the scheduler hands out. A unit is a whole device, a MIG slice
// or a whole TPU slice, of one pool: the units that one request may take
// interchangeably (device class, canonical model, partition).
#ifndef ACCELSCHED_CORE_MODEL_UNIT_H_
#define ACCELSCHED_CORE_MODEL_UNIT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/model/allocation_model.h"
#include "core/model/device_class.h"
#include "core/model/gpu_share.h"

namespace accelsched {

struct PoolKey {
  DeviceClass device_class = DeviceClass::kNvidiaGpu;
  std::string model;      // canonical
  std::string partition;  // "" whole device; MIG profile; TPU topology

  auto operator<=>(const PoolKey&) const = default;
  bool operator==(const PoolKey&) const = default;
};

struct Unit {
  std::string key;  // device id, MIG slice id, or TpuUnitKey(slice id)
  PoolKey pool;
  std::string home;  // the node it is filed under (a TPU slice's first host)
  std::vector<std::string> hosts;  // every node it spans, sorted; home first
  std::vector<AllocatedDevice> devices;  // what allocating it hands out
  std::string
      group;      // packing group in a node: the GPU of a MIG slice, else ""
  int order = 0;  // deterministic order within a node (device index, MIG start)
  bool healthy = true;
  std::string holder;  // the live allocation holding it whole; "" when none
  // A whole GPU's: whether it takes shares, and its memory (what shares of it
  // divide).
  GpuSharing sharing = GpuSharing::kNone;
  uint64_t memory_bytes = 0;
  // What the live shares on it hold together (compute in thousandths of the
  // GPU, memory in bytes); a unit with shares is not free for a whole
  // request.
  int64_t shared_milli = 0;
  int64_t shared_memory = 0;
  // The group of the shares on it (GpuShare::group) while it has any: only
  // shares of that group may join them.
  std::string share_group;

  // Held by a live allocation, whole or in shares.
  bool held() const { return !holder.empty() || shared_milli > 0; }
  bool free() const { return healthy && !held(); }
  // Whether a new share may go on it: it takes shares, is healthy and no
  // whole request holds it.
  bool shareable() const {
    return sharing != GpuSharing::kNone && healthy && holder.empty();
  }
  int64_t free_milli() const { return kGpuMilli - shared_milli; }
  int64_t free_share_memory() const {
    return static_cast<int64_t>(memory_bytes) - shared_memory;
  }
};

// TPU slice ids and device ids share no namespace; a space cannot occur in
// either.
std::string TpuUnitKey(absl::string_view slice_id);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_MODEL_UNIT_H_
