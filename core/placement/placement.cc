#include "core/placement/placement.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/labels.h"

namespace accelsched {
namespace {

constexpr char kNoSchedule[] = "NoSchedule";

// The devices of `a` on `node`, or all of them when `node` is empty.
std::vector<AllocatedDevice> DevicesOn(const Allocation& a,
                                       absl::string_view node) {
  std::vector<AllocatedDevice> out;
  for (const AllocatedDevice& d : a.devices) {
    if (node.empty() || d.node == node) out.push_back(d);
  }
  return out;
}

// The placement for `devices` on nodes whose device label has one of
// `device_labels` (one node's, or a multi-host slice's distinct values), with
// the MIG strategy `mig_strategy`, pinned to `hostname` unless it is null.
Placement Place(const Allocation& a,
                const std::vector<std::string>& device_labels,
                absl::string_view mig_strategy, const std::string* hostname,
                std::vector<AllocatedDevice> devices,
                const PlacementOptions& options) {
  Placement p;
  const PlacementLabels labels = PlacementLabelsOf(a.device_class);
  const bool mig =
      a.device_class == DeviceClass::kNvidiaGpu && !a.partition.empty();
  // The device plugin's mixed strategy names each MIG profile as a resource;
  // such a node cannot carry one partition-size label.
  const bool mixed = mig && mig_strategy == "mixed";
  auto require = [&](absl::string_view key,
                     const std::vector<std::string>& values) {
    p.node_affinity.push_back({std::string(key), "In", values});
    if (values.size() == 1) p.node_selector[std::string(key)] = values[0];
  };
  auto tolerate = [&](absl::string_view key, absl::string_view value) {
    p.tolerations.push_back(
        {std::string(key), "Equal", std::string(value), kNoSchedule});
  };
  // A request that named no model is propeller's device-less accelerator: no
  // device label.
  if (!a.requested_models.empty()) {
    require(labels.device, device_labels);
    for (const std::string& value : device_labels) {
      tolerate(labels.device, value);
    }
  }
  if (!a.partition.empty() && !mixed) {
    require(labels.partition, {a.partition});
    tolerate(labels.partition, a.partition);
  } else if (a.unpartitioned) {
    p.node_affinity.push_back(
        {std::string(labels.partition), "DoesNotExist", {}});
  }
  if (hostname != nullptr) require(kHostnameLabel, {*hostname});

  const AllocatedDevice* shared =
      devices.size() == 1 && devices[0].share.has_value() ? &devices[0]
                                                          : nullptr;
  if (shared != nullptr) {
    p.resource_name = options.shared_gpu_resource_name;
  } else if (mixed) {
    p.resource_name = absl::StrCat("nvidia.com/mig-", a.partition);
  } else if (!a.resource_name.empty()) {
    p.resource_name = a.resource_name;
  } else {
    p.resource_name = std::string(DefaultResourceName(a.device_class));
  }
  p.resource_count = static_cast<int64_t>(devices.size());
  if (options.nvidia_visible_devices &&
      a.device_class == DeviceClass::kNvidiaGpu) {
    std::vector<absl::string_view> ids;
    for (const AllocatedDevice& d : devices) {
      ids.push_back(d.mig_slice_id.empty() ? d.device_id : d.mig_slice_id);
    }
    p.env["NVIDIA_VISIBLE_DEVICES"] = absl::StrJoin(ids, ",");
  }
  if (shared != nullptr && shared->sharing == GpuSharing::kMps) {
    p.env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] =
        absl::StrCat(MpsActiveThreadPercentage(*shared->share));
    p.env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] =
        MpsPinnedDeviceMemLimit(*shared->share);
  }
  p.devices = std::move(devices);
  return p;
}

Placement PlaceOn(const Allocation& a, const PlacementTarget& t,
                  const PlacementOptions& options) {
  return Place(a, {t.device_label}, t.mig_strategy, &t.hostname,
               DevicesOn(a, t.node), options);
}

// The target of `node`. Every allocation has one per node of its devices
// (schema 5 gave older ones theirs); without one, the node's name and the
// model stand in.
PlacementTarget TargetOf(const Allocation& a, absl::string_view node) {
  for (const PlacementTarget& t : a.targets) {
    if (t.node == node) return t;
  }
  return PlacementTarget{std::string(node), std::string(node), a.model, ""};
}

}  // namespace

int MpsActiveThreadPercentage(const GpuShare& share) {
  const int64_t percent = (share.compute_milli + 9) / 10;
  return static_cast<int>(std::clamp<int64_t>(percent, 1, 100));
}

std::string MpsPinnedDeviceMemLimit(const GpuShare& share) {
  const int64_t mib = std::max<int64_t>(share.memory_bytes >> 20, 1);
  return absl::StrCat("0=", mib, "M");
}

PlacementLabels PlacementLabelsOf(DeviceClass device_class) {
  if (device_class == DeviceClass::kGoogleTpu) {
    return {"cloud.google.com/gke-tpu-accelerator",
            "cloud.google.com/gke-tpu-topology"};
  }
  return {"k8s.amazonaws.com/accelerator",
          "k8s.amazonaws.com/gpu-partition-size"};
}

std::string RequestedDeviceLabel(const AcceleratorTypeSet& types,
                                 const std::vector<std::string>& spellings,
                                 const AcceleratorType& type) {
  for (const std::string& spelling : spellings) {
    const AcceleratorType* named = types.Find(spelling);
    if (named == nullptr || named->canonical_model != type.canonical_model) {
      continue;
    }
    // Go's strings.ToUpper, on the printable ASCII a known spelling is.
    const std::string upper = absl::AsciiStrToUpper(spelling);
    for (const FlyteNodeLabel& entry : type.flyte_node_labels) {
      if (entry.name == upper) return entry.node_label_value;
    }
    if (IsLabelValue(spelling)) return spelling;
    break;
  }
  return type.node_label_value;
}

PlacementTarget PlacementTargetOf(const Node& node, const AcceleratorType& type,
                                  absl::string_view requested_label) {
  auto label = [&](absl::string_view key) -> const std::string* {
    auto it = node.labels.find(std::string(key));
    return it == node.labels.end() ? nullptr : &it->second;
  };
  PlacementTarget t;
  t.node = node.name;
  const std::string* hostname = label(kHostnameLabel);
  t.hostname = hostname != nullptr ? *hostname : node.name;
  // Propeller writes the request's own spelling, mapped or unchanged, so two
  // spellings of one model give two values and a node carries one: the
  // node's own value is the one that matches it.
  const std::string* device =
      label(PlacementLabelsOf(type.device_class).device);
  t.device_label = device != nullptr ? *device : std::string(requested_label);
  const std::string* strategy = label(kMigStrategyLabel);
  if (strategy != nullptr) t.mig_strategy = *strategy;
  return t;
}

Placement BuildPlacement(const Allocation& a, const PlacementOptions& options) {
  if (a.targets.size() <= 1) return PlaceOn(a, TargetOf(a, a.node), options);
  // A multi-host TPU slice runs one pod per host, each asking for its own
  // host's chips; this one fits any of its hosts.
  std::set<std::string> values;
  for (const PlacementTarget& t : a.targets) values.insert(t.device_label);
  Placement p = Place(a, std::vector<std::string>(values.begin(), values.end()),
                      TargetOf(a, a.node).mig_strategy, /*hostname=*/nullptr,
                      DevicesOn(a, ""), options);
  p.resource_count = static_cast<int64_t>(a.devices.size() / a.targets.size());
  return p;
}

std::vector<Placement> BuildNodePlacements(const Allocation& a,
                                           const PlacementOptions& options) {
  std::vector<Placement> out;
  for (const PlacementTarget& t : a.targets) {
    out.push_back(PlaceOn(a, t, options));
  }
  return out;
}

}  // namespace accelsched
