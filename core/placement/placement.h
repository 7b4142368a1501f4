// What a Kubernetes pod needs to land on an allocation's devices: exactly what
// Flyte's propeller puts on a task pod for the same GPUAccelerator (required
// node affinity, tolerations, the extended resource), plus the pin to the
// chosen node. Derived from the allocation alone (its PlacementTargets carry
// what it needs from the nodes and the accelerator types).
//
// Propeller's rules, at flyteorg/flyte main 6fadb90d,
// flyteplugins/go/tasks/pluginmachinery/flytek8s/ (docs/concepts/placement.md,
// has them side by side with accelsched's):
// - pod_helper.go:385-404 (ApplyGPUNodeSelectors): a request naming a device
//   gets `<device label> In [<value>]` and the toleration `<device label>
//   Equal <value> NoSchedule`; no device, neither.
// - pod_helper.go:431-442: partition_size gets `<partition label> In [<size>]`
//   and `<partition label> Equal <size> NoSchedule`; pod_helper.go:416-427:
//   unpartitioned gets `<partition label> DoesNotExist` and no toleration.
// - pod_helper.go:97-117: requirements go into required node affinity (every
//   term, or one new term), never nodeSelector.
// - config/config.go:67-68 and 121-139: the labels (TPU: its own, the other
//   classes the global ones) and each class's resource name; MIG asks for
//   nvidia.com/gpu (container_helper.go:133-149), requests equal to limits
//   (container_helper.go:73-86).
// accelsched adds: the MIG mixed strategy where the node says so, and the pin
// `kubernetes.io/hostname In [<host>]`.
#ifndef ACCELSCHED_CORE_PLACEMENT_PLACEMENT_H_
#define ACCELSCHED_CORE_PLACEMENT_PLACEMENT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/accelerators/accelerator_type.h"
#include "core/accelerators/accelerator_type_set.h"
#include "core/model/allocation_model.h"
#include "core/model/catalog_model.h"

namespace accelsched {

inline constexpr char kHostnameLabel[] = "kubernetes.io/hostname";
// GPU Feature Discovery's label for the device plugin's MIG strategy
// (NVIDIA/k8s-device-plugin docs/gpu-feature-discovery/README.md, "Generated
// Labels"): "none", "single" or "mixed" (the strategies of device plugin
// 0.7.0 on).
inline constexpr char kMigStrategyLabel[] = "nvidia.com/mig.strategy";

// The node labels propeller's affinity uses for a device class.
struct PlacementLabels {
  absl::string_view device;     // "k8s.amazonaws.com/accelerator"
  absl::string_view partition;  // "k8s.amazonaws.com/gpu-partition-size"
};
PlacementLabels PlacementLabelsOf(DeviceClass device_class);

struct NodeSelectorRequirement {
  std::string key;
  std::string op;  // "In" or "DoesNotExist" here
  std::vector<std::string> values;

  bool operator==(const NodeSelectorRequirement&) const = default;
};

struct Toleration {
  std::string key;
  std::string op;  // "Exists" or "Equal"
  std::string value;
  std::string effect;

  bool operator==(const Toleration&) const = default;
};

struct Placement {
  // All must hold (one node-selector term), in propeller's order: device,
  // partition, then the hostname pin.
  std::vector<NodeSelectorRequirement> node_affinity;
  // The single-valued In requirements above, for clients that set a
  // nodeSelector.
  std::map<std::string, std::string> node_selector;
  std::string resource_name;
  int64_t resource_count = 0;  // requests and limits alike
  std::map<std::string, std::string> env;
  std::vector<Toleration> tolerations;
  // The devices this placement's pod gets (a DRA claim pins them).
  std::vector<AllocatedDevice> devices;

  bool operator==(const Placement&) const = default;
};

struct PlacementOptions {
  // Sets NVIDIA_VISIBLE_DEVICES to the allocated GPU or MIG UUIDs. Off by
  // default: with the device plugin the kubelet chooses a container's GPUs,
  // and the variable could expose GPUs it gave to another pod
  // (docs/concepts/placement.md).
  bool nvidia_visible_devices = false;
  // The extended resource a share's pod asks one of: what NVIDIA's device
  // plugin advertises for a GPU it shares (time-slicing or MPS replicas):
  // nvidia.com/gpu by default, nvidia.com/gpu.shared with its
  // renameByDefault (NVIDIA/k8s-device-plugin v0.20.0,
  // api/config/v1/consts.go:26 DefaultSharedResourceNameSuffix).
  std::string shared_gpu_resource_name = "nvidia.com/gpu";
};

// CUDA MPS's client limits for `share` (NVIDIA's MPS documentation,
// "Environment Variables": CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, and
// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT "<device>=<value>", its example
// "0=1G,1=512MB"; a client's value only lowers the daemon's): the percentage
// is compute_milli/10 rounded up (1 at least); the memory is for device
// ordinal 0, the one GPU the pod sees (NVIDIA's device plugin moved its own
// MPS limits from UUIDs to ordinals because limits set by UUID were not
// applied: k8s-device-plugin v0.20.0 CHANGELOG.md:183-184), in MiB rounded
// down (1 at least) and written "0=<n>M", as NVIDIA's DRA driver writes a
// limit (k8s-dra-driver-gpu 22407113,
// api/nvidia.com/resource/v1beta1/sharing.go:234-236).
int MpsActiveThreadPercentage(const GpuShare& share);
std::string MpsPinnedDeviceMemLimit(const GpuShare& share);

// The device label value propeller writes for a request that spelled its
// models `spellings` (Allocation::device_spellings) and got devices of `type`
// (flyteorg/flyte main 6fadb90d, flytek8s/utils.go:101-110
// GetNormalizedAcceleratorDevice: `accelerator-devices[upper(device)]`, else
// `device` unchanged; propeller v1 writes `device` unchanged, the same for
// every spelling that is not a key of that map). The spelling is the first of
// `spellings` that `types` resolves to `type`; its value is that of the
// type's flyte_node_labels entry named by the spelling upper-cased (compared
// exactly, as propeller's map lookup: the entry "L40s" matches no spelling),
// else the spelling itself when it is a label value. The type's
// node_label_value when no spelling resolves to `type` (a model-less request,
// one stored before spellings were kept, a spelling an accelerator types
// reload dropped) or when the spelling is no label value (an NVML product
// name such as "NVIDIA H100 80GB HBM3", on which propeller writes a pod
// Kubernetes refuses).
std::string RequestedDeviceLabel(const AcceleratorTypeSet& types,
                                 const std::vector<std::string>& spellings,
                                 const AcceleratorType& type);

// What the placement on `node` needs, for devices of `type`: the node's own
// device label value when it has the label (a node carries one value, and
// propeller's differ by spelling: the node's is the one that matches it),
// else `requested_label` (RequestedDeviceLabel).
PlacementTarget PlacementTargetOf(const Node& node, const AcceleratorType& type,
                                  absl::string_view requested_label);

// The placement of the whole allocation (Allocation.placement): pinned to its
// node when it has one. A multi-host TPU slice's is not pinned, asks for the
// chips of one host, and requires any of its hosts' device label values (a
// toleration for each), so that it fits every host.
Placement BuildPlacement(const Allocation& allocation,
                         const PlacementOptions& options);

// A share's placement (the allocation holds a share of one GPU) asks for one
// options.shared_gpu_resource_name on its GPU's node and, on an MPS GPU,
// carries the MPS limits above in `env`; the DRA claim
// (services/kubernetes_placement.h) is what pins the GPU itself.
//
// One placement per node of the allocation, in node-name order
// (Allocation.placements), each pinned to its node and asking for its
// devices.
std::vector<Placement> BuildNodePlacements(const Allocation& allocation,
                                           const PlacementOptions& options);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLACEMENT_PLACEMENT_H_
