// TPU chips on a GKE TPU node (or a Cloud TPU VM), found without the TPU_*
// environment: GKE's TPU device plugin sets those only in containers that are
// given google.com/tpu (ai-on-gke/tpu-device-plugin 4626a9f,
// pkg/tpu/plugin.go Allocate), and a node agent asks for none.
//
// Chips: PCI functions of vendor 0x1ae0 (Google) under SYS/bus/pci/devices,
// one chip per PCI base address DDDD:BB:DD (tpu7x has two functions per chip),
// generation by PCI device id (AI-Hypercomputer/cloud-accelerator-diagnostics
// fe85c12 tpu_info/tpu_info/device.py:56-84). A chip is healthy while its
// device node exists: DEV/vfio/<iommu group> for v5e, v5p, v6e and tpu7x,
// DEV/accel<n> (n: the chip's ordinal) for v2-v4 (device.py:213-218; the
// device plugin's util.go GetDeviceDirectory). NVIDIA's driver >= 570 makes
// /dev/accel a directory: only character devices count.
//
// The slice the chips belong to, in order of precedence:
//   topology: --tpu_topology; TPU_TOPOLOGY (the device plugin's variable,
//     for an agent run inside a TPU pod); the node label
//     cloud.google.com/gke-tpu-topology, when the operator gives the agent
//     the node's labels (--labels_file or --labels: the downward API has the
//     pod's labels, not the node's); else the single-host shape of the chip
//     count (1: 1x1, 4: 2x2 or 2x2x1, 8: 2x4; the device plugin's
//     getChipsPerDim). A host of a multi-host slice therefore needs its
//     topology and slice id given, or it registers as a slice of its own.
//   model: the node label cloud.google.com/gke-tpu-accelerator when set (it
//     tells tpu-v5-lite-device from tpu-v5-lite-podslice), else the
//     generation's GKE label value.
//   slice id: --tpu_slice_id; else the first of TPU_WORKER_HOSTNAMES (GKE's
//     Indexed-Job webhook sets it on multi-host slices) when it lists more
//     than one host; else the node's name (a single-host slice).
#ifndef ACCELSCHED_AGENT_TPU_CHIPS_H_
#define ACCELSCHED_AGENT_TPU_CHIPS_H_

#include <map>
#include <string>

#include "absl/strings/string_view.h"
#include "agent/observation.h"

namespace accelsched::agent {

// One row of the PCI id table.
struct TpuPciId {
  const char* device_id;         // "0x005e"
  const char* subsystem_device;  // "" when the device id alone decides
  const char* generation;        // "v4"
  const char* model;             // the GKE accelerator label value
  bool vfio;                     // /dev/vfio/<group> rather than /dev/accel<n>
};
// Every row, for tests and documentation.
absl::Span<const TpuPciId> TpuPciIds();

class TpuChips final : public DeviceSource {
 public:
  struct Options {
    std::string node_name;
    std::string sys_dir = "/sys";
    std::string dev_dir = "/dev";
    std::string topology;                       // --tpu_topology
    std::string slice_id;                       // --tpu_slice_id
    std::map<std::string, std::string> labels;  // the node's, from the agent
  };
  explicit TpuChips(Options options) : options_(std::move(options)) {}

  // Adds one Device per chip (id "<node>-tpu<n>", class GOOGLE_TPU) with its
  // slice id and topology; none on a host without Google PCI functions.
  // INVALID_ARGUMENT when the host mixes TPU generations.
  absl::Status Observe(Observation& out) override;

 private:
  const Options options_;
};

}  // namespace accelsched::agent

#endif  // ACCELSCHED_AGENT_TPU_CHIPS_H_
