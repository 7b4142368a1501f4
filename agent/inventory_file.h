// --inventory=FILE: devices listed by hand for hosts that NVML cannot see
// (AMD GPUs, AWS Neuron, Intel Gaudi, or GPUs on a host without the driver's
// library). The file is an accelsched.v1.Node in protobuf text format, of which
// only `devices` is read:
//
//   devices { id: "neuron-0-i-0abc" device_class: AMAZON_NEURON
//             model: "inferentia2" index: 0 memory_bytes: 34359738368 }
//
// Re-read on every pass, so that editing it is picked up like a MIG re-layout.
#ifndef ACCELSCHED_AGENT_INVENTORY_FILE_H_
#define ACCELSCHED_AGENT_INVENTORY_FILE_H_

#include <string>

#include "agent/observation.h"

namespace accelsched::agent {

class InventoryFile final : public DeviceSource {
 public:
  explicit InventoryFile(std::string path) : path_(std::move(path)) {}
  // ReadWholeFile's error when the file cannot be read (NOT_FOUND when it does
  // not exist); INVALID_ARGUMENT naming the file and line for a syntax error,
  // or naming devices[i] when a device has no id, sets output-only fields
  // (canonical_model, stats) or health (the agent reports every listed device
  // healthy).
  absl::Status Observe(Observation& out) override;

 private:
  const std::string path_;
};

}  // namespace accelsched::agent

#endif  // ACCELSCHED_AGENT_INVENTORY_FILE_H_
