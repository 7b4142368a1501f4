// How the node shares its GPUs (accelsched.v1.Device.sharing), from the
// agent's --gpu_sharing flag or, left to "auto", from the label NVIDIA's GPU
// Feature Discovery puts on the node for the device plugin's sharing
// strategy.
#ifndef ACCELSCHED_AGENT_GPU_SHARING_H_
#define ACCELSCHED_AGENT_GPU_SHARING_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "accelsched/v1/accelsched.pb.h"

namespace accelsched::agent {

// NVIDIA/k8s-device-plugin v0.20.0 README.md:630 ("nvidia.com/gpu.sharing-
// strategy ... none ... mps and time-slicing"); the values are
// api/config/v1/sharing.go:29-33's.
inline constexpr char kSharingStrategyLabel[] =
    "nvidia.com/gpu.sharing-strategy";

// `flag` is "none", "time-slicing" or "mps" (the device plugin's strategy
// names), or "auto": the value of kSharingStrategyLabel in `labels`, NONE
// without it. INVALID_ARGUMENT naming --gpu_sharing (or the label) for any
// other value.
absl::StatusOr<v1::GpuSharing> GpuSharingOf(
    absl::string_view flag, const std::map<std::string, std::string>& labels);

}  // namespace accelsched::agent

#endif  // ACCELSCHED_AGENT_GPU_SHARING_H_
