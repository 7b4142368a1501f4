#include "agent/gpu_sharing.h"

#include <optional>

#include "absl/strings/str_cat.h"

namespace accelsched::agent {
namespace {

std::optional<v1::GpuSharing> Strategy(absl::string_view name) {
  if (name == "none") return v1::GPU_SHARING_NONE;
  if (name == "time-slicing") return v1::TIME_SLICING;
  if (name == "mps") return v1::MPS;
  return std::nullopt;
}

}  // namespace

absl::StatusOr<v1::GpuSharing> GpuSharingOf(
    absl::string_view flag, const std::map<std::string, std::string>& labels) {
  if (flag != "auto") {
    if (std::optional<v1::GpuSharing> s = Strategy(flag)) return *s;
    return absl::InvalidArgumentError(
        absl::StrCat("--gpu_sharing \"", flag,
                     "\" is not one of auto, none, time-slicing, mps"));
  }
  auto it = labels.find(kSharingStrategyLabel);
  if (it == labels.end()) return v1::GPU_SHARING_NONE;
  if (std::optional<v1::GpuSharing> s = Strategy(it->second)) return *s;
  return absl::InvalidArgumentError(absl::StrCat(
      "the node's label ", kSharingStrategyLabel, "=\"", it->second,
      "\" is not one of none, time-slicing, mps (set --gpu_sharing)"));
}

}  // namespace accelsched::agent
