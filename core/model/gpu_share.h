// GPU sharing (docs/concepts/sharing.md): how a node lets several containers
// use one GPU, and a share of one GPU that a request asks for or an allocation
// holds. Plain copyable values and the arithmetic the accounting needs.
#ifndef ACCELSCHED_CORE_MODEL_GPU_SHARE_H_
#define ACCELSCHED_CORE_MODEL_GPU_SHARE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace accelsched {

// Numbered as accelsched.v1.GpuSharing.
enum class GpuSharing {
  kNone = 0,         // whole-device requests only
  kTimeSlicing = 1,  // containers take turns on the whole GPU
  kMps = 2,          // CUDA MPS: compute and memory limits per container
};

// The proto enum's spelling ("GPU_SHARING_NONE", "TIME_SLICING", "MPS").
absl::string_view GpuSharingName(GpuSharing s);

// One GPU's compute, in the thousandths a share is written in.
inline constexpr int kGpuMilli = 1000;

struct GpuShare {
  int64_t compute_milli = 0;  // 1..kGpuMilli
  // GPU memory the share may use; 0 in a request: the same fraction of the
  // device's memory (ShareMemory).
  int64_t memory_bytes = 0;
  // The sharing group: the shares on one GPU at one time all have one group
  // ("" is a group too). A DRA ResourceClaim lives in one namespace and only
  // pods of that namespace can use it, so Kubernetes clients that place
  // shares with claims set the pod's namespace here.
  std::string group = std::string();

  bool operator==(const GpuShare&) const = default;
};

// Units (whole devices, slices) counted in thousandths, so that a share
// counts as its fraction of one GPU, as text: 8000 -> "8", 2500 -> "2.5",
// 300 -> "0.3", -1250 -> "-1.25".
std::string MilliUnitsText(int64_t milli);

// The GPU memory `share` takes of a device with `device_memory` bytes: its
// memory_bytes, or when that is 0 compute_milli/1000 of the device's memory,
// rounded down (so that shares whose compute fills the GPU fit its memory).
int64_t ShareMemory(const GpuShare& share, uint64_t device_memory);

// INVALID_ARGUMENT naming `field` (".compute_milli", ".memory_bytes",
// ".group") unless compute_milli is 1..kGpuMilli, memory_bytes is
// 0..kMaxMemoryBytes and group is empty or a Kubernetes label value (which
// every namespace name is).
absl::Status CheckGpuShare(const GpuShare& share, absl::string_view field);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_MODEL_GPU_SHARE_H_
