#include "core/model/device_class.h"

namespace accelsched {

absl::string_view DeviceClassName(DeviceClass c) {
  switch (c) {
    case DeviceClass::kNvidiaGpu:
      return "NVIDIA_GPU";
    case DeviceClass::kGoogleTpu:
      return "GOOGLE_TPU";
    case DeviceClass::kAmazonNeuron:
      return "AMAZON_NEURON";
    case DeviceClass::kAmdGpu:
      return "AMD_GPU";
    case DeviceClass::kHabanaGaudi:
      return "HABANA_GAUDI";
  }
  return "UNKNOWN";
}

}  // namespace accelsched
