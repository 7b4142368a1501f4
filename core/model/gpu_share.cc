#include "core/model/gpu_share.h"

#include "absl/numeric/int128.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/field_error.h"
#include "core/base/labels.h"
#include "core/model/node_resources.h"

namespace accelsched {

absl::string_view GpuSharingName(GpuSharing s) {
  switch (s) {
    case GpuSharing::kNone:
      return "GPU_SHARING_NONE";
    case GpuSharing::kTimeSlicing:
      return "TIME_SLICING";
    case GpuSharing::kMps:
      return "MPS";
  }
  return "GPU_SHARING_UNKNOWN";
}

std::string MilliUnitsText(int64_t milli) {
  const uint64_t magnitude = milli < 0 ? 0 - static_cast<uint64_t>(milli)
                                       : static_cast<uint64_t>(milli);
  std::string text = absl::StrCat(milli < 0 ? "-" : "", magnitude / kGpuMilli);
  if (const uint64_t rest = magnitude % kGpuMilli; rest != 0) {
    std::string digits = absl::StrFormat("%03d", rest);
    digits.erase(digits.find_last_not_of('0') + 1);
    absl::StrAppend(&text, ".", digits);
  }
  return text;
}

int64_t ShareMemory(const GpuShare& share, uint64_t device_memory) {
  if (share.memory_bytes > 0) return share.memory_bytes;
  // 128 bits: a device's memory times 1000 may not fit in 64.
  const absl::uint128 scaled =
      absl::uint128(device_memory) * static_cast<uint64_t>(share.compute_milli);
  return static_cast<int64_t>(scaled / kGpuMilli);
}

absl::Status CheckGpuShare(const GpuShare& share, absl::string_view field) {
  if (share.compute_milli < 1 || share.compute_milli > kGpuMilli) {
    return InvalidField(absl::StrCat(field, ".compute_milli"),
                        absl::StrCat(share.compute_milli, " is not 1 to ",
                                     kGpuMilli, " (thousandths of one GPU)"));
  }
  if (share.memory_bytes < 0 || share.memory_bytes > kMaxMemoryBytes) {
    return InvalidField(
        absl::StrCat(field, ".memory_bytes"),
        absl::StrCat(share.memory_bytes, " is not 0 to ", kMaxMemoryBytes));
  }
  if (!IsLabelValue(share.group)) {
    return InvalidField(
        absl::StrCat(field, ".group"),
        absl::StrCat("\"", absl::CHexEscape(share.group.substr(0, 100)),
                     share.group.size() > 100 ? "..." : "",
                     "\" is not a label value (at most 63 characters of "
                     "[A-Za-z0-9._-], alphanumeric at both ends)"));
  }
  return absl::OkStatus();
}

}  // namespace accelsched
