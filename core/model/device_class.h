// The accelerator families, numbered as
// flyteidl2.core.GPUAccelerator.DeviceClass.
#ifndef ACCELSCHED_CORE_MODEL_DEVICE_CLASS_H_
#define ACCELSCHED_CORE_MODEL_DEVICE_CLASS_H_

#include "absl/strings/string_view.h"

namespace accelsched {

enum class DeviceClass {
  kNvidiaGpu = 0,
  kGoogleTpu = 1,
  kAmazonNeuron = 2,
  kAmdGpu = 3,
  kHabanaGaudi = 4,
};

inline constexpr int kMaxDeviceClass = 4;

// The proto enum's spelling, e.g. "NVIDIA_GPU"; for messages and metrics
// labels.
absl::string_view DeviceClassName(DeviceClass c);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_MODEL_DEVICE_CLASS_H_
