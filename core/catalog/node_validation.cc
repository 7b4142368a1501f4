#include "core/catalog/node_validation.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/base/field_error.h"
#include "core/base/status_macros.h"
#include "core/model/node_resources.h"

namespace accelsched {
namespace {

absl::Status ValidateMig(const AcceleratorType& model, const Device& device,
                         absl::string_view field) {
  if (device.mig_slices.empty()) return absl::OkStatus();
  if (!device.mig_enabled) {
    return InvalidField(absl::StrCat(field, ".mig_slices"),
                        "are set but mig_enabled is false");
  }
  std::vector<MigPlacement> layout;
  for (size_t i = 0; i < device.mig_slices.size(); ++i) {
    const MigSlice& s = device.mig_slices[i];
    RETURN_IF_ERROR(
        ValidateId(s.id, absl::StrCat(field, ".mig_slices[", i, "].id")));
    layout.push_back({s.profile, s.start});
  }
  absl::Status layout_status =
      ValidateMigLayout(model.mig, model.canonical_model, layout);
  if (!layout_status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".mig_slices", layout_status.message()));
  }
  return absl::OkStatus();
}

// Shares are of a whole NVIDIA GPU: a MIG slice is not shared (NVIDIA's DRA
// driver shares MIG devices only by time-slicing them as whole slices, which
// accelsched does not account), nor is any other class.
absl::Status ValidateSharing(const AcceleratorType& model, const Device& device,
                             absl::string_view field) {
  if (device.sharing == GpuSharing::kNone) return absl::OkStatus();
  if (model.device_class != DeviceClass::kNvidiaGpu) {
    return InvalidField(
        absl::StrCat(field, ".sharing"),
        absl::StrCat(GpuSharingName(device.sharing),
                     " is for NVIDIA GPUs, not ", model.canonical_model));
  }
  if (device.mig_enabled) {
    return InvalidField(
        absl::StrCat(field, ".sharing"),
        absl::StrCat(GpuSharingName(device.sharing),
                     " is for whole GPUs: a MIG-enabled GPU is not shared"));
  }
  // Shares divide the memory: it must be known, and sums of it must not
  // overflow.
  if (device.memory_bytes == 0 ||
      device.memory_bytes > static_cast<uint64_t>(kMaxMemoryBytes)) {
    return InvalidField(
        absl::StrCat(field, ".memory_bytes"),
        absl::StrCat(device.memory_bytes, " is not 1 to ", kMaxMemoryBytes,
                     ": a GPU that takes shares must report its memory"));
  }
  return absl::OkStatus();
}

absl::Status ValidateTpu(const AcceleratorType& model, const Device& device,
                         absl::string_view field) {
  if (!model.is_tpu()) {
    if (!device.tpu_slice_id.empty() || !device.tpu_topology.empty()) {
      return InvalidField(
          absl::StrCat(field, ".tpu_slice_id"),
          absl::StrCat("and tpu_topology are for TPU chips, not ",
                       model.canonical_model));
    }
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(
      ValidateId(device.tpu_slice_id, absl::StrCat(field, ".tpu_slice_id")));
  if (!model.FindTopology(device.tpu_topology)) {
    return InvalidField(
        absl::StrCat(field, ".tpu_topology"),
        absl::StrCat("\"", device.tpu_topology, "\" is not a topology of ",
                     model.canonical_model, " (valid: ", model.TopologyNames(),
                     ")"));
  }
  return absl::OkStatus();
}

absl::Status ValidateDevice(const AcceleratorTypeSet& types, Device& device,
                            absl::string_view field) {
  RETURN_IF_ERROR(ValidateId(device.id, absl::StrCat(field, ".id")));
  if (device.model.size() > kMaxIdLength) {
    return InvalidField(
        absl::StrCat(field, ".model"),
        absl::StrCat("is ", device.model.size(), " characters long; at most ",
                     kMaxIdLength, " are allowed"));
  }
  const AcceleratorType* model = types.Find(device.model);
  if (model == nullptr) {
    return InvalidField(absl::StrCat(field, ".model"),
                        absl::StrCat("\"", device.model,
                                     "\" is not a known accelerator model"));
  }
  // NVIDIA_GPU is the enum's zero value, so it also means "not given": the
  // model decides.
  if (device.device_class != DeviceClass::kNvidiaGpu &&
      device.device_class != model->device_class) {
    return InvalidField(
        absl::StrCat(field, ".device_class"),
        absl::StrCat(DeviceClassName(device.device_class),
                     " does not match model ", model->canonical_model, " (",
                     DeviceClassName(model->device_class), ")"));
  }
  device.device_class = model->device_class;
  device.canonical_model = model->canonical_model;
  if (device.index < 0) {
    return InvalidField(absl::StrCat(field, ".index"), "must not be negative");
  }
  return ValidateDeviceGeometry(*model, device, field);
}

// Chips of one TPU slice on one node must agree on model and topology, and be
// no more than one host of that slice holds.
absl::Status ValidateTpuSlicesOnNode(const AcceleratorTypeSet& types,
                                     const Node& node) {
  struct SliceSeen {
    const Device* first;
    int chips;
  };
  absl::flat_hash_map<std::string, SliceSeen> slices;
  for (size_t i = 0; i < node.devices.size(); ++i) {
    const Device& d = node.devices[i];
    if (d.tpu_slice_id.empty()) continue;
    auto [it, inserted] = slices.try_emplace(d.tpu_slice_id, SliceSeen{&d, 0});
    const Device& first = *it->second.first;
    const std::string field = absl::StrCat("node.devices[", i, "]");
    if (first.canonical_model != d.canonical_model ||
        first.tpu_topology != d.tpu_topology) {
      return InvalidField(
          field, absl::StrCat("is in TPU slice \"", d.tpu_slice_id, "\" as ",
                              d.canonical_model, " ", d.tpu_topology,
                              " but another chip of it is ",
                              first.canonical_model, " ", first.tpu_topology));
    }
    // ValidateDevice found the model and its topology.
    const TpuTopology topology =
        *types.Find(d.model)->FindTopology(d.tpu_topology);
    const int per_host = topology.chips / topology.hosts;
    if (++it->second.chips > per_host) {
      return InvalidField(
          field, absl::StrCat("is one chip too many: TPU slice \"",
                              d.tpu_slice_id, "\" (", d.tpu_topology, ") has ",
                              per_host, " chips per host"));
    }
  }
  return absl::OkStatus();
}

// Each link names another device of `node` (by the id it has there), once,
// with a count only for NVLinks; a device has at most kMaxLinksPerDevice
// links, the node kMaxLinksPerNode.
absl::Status ValidateLinks(const Node& node) {
  absl::flat_hash_set<absl::string_view> devices;
  size_t total = 0;
  for (const Device& d : node.devices) {
    devices.insert(d.id);
    total += d.links.size();
  }
  if (total > kMaxLinksPerNode) {
    return InvalidField("node.devices",
                        absl::StrCat("have ", total, " links in all; at most ",
                                     kMaxLinksPerNode, " per node"));
  }
  for (size_t i = 0; i < node.devices.size(); ++i) {
    const Device& d = node.devices[i];
    if (d.links.size() > kMaxLinksPerDevice) {
      return InvalidField(
          absl::StrCat("node.devices[", i, "].links"),
          absl::StrCat("has ", d.links.size(), " entries; at most ",
                       kMaxLinksPerDevice));
    }
    absl::flat_hash_set<absl::string_view> peers;
    for (size_t j = 0; j < d.links.size(); ++j) {
      const DeviceLink& l = d.links[j];
      const std::string field =
          absl::StrCat("node.devices[", i, "].links[", j, "]");
      if (l.peer_device_id == d.id) {
        return InvalidField(
            absl::StrCat(field, ".peer_device_id"),
            absl::StrCat("\"", l.peer_device_id, "\" is the device itself"));
      }
      if (!devices.contains(l.peer_device_id)) {
        return InvalidField(absl::StrCat(field, ".peer_device_id"),
                            absl::StrCat("\"", l.peer_device_id,
                                         "\" is not a device of this node"));
      }
      if (l.kind == LinkKind::kNvlink &&
          (l.count < 1 || l.count > kMaxNvlinksPerLink)) {
        return InvalidField(absl::StrCat(field, ".count"),
                            absl::StrCat(l.count, " is not 1 to ",
                                         kMaxNvlinksPerLink, " for NVLINK"));
      }
      if (l.kind != LinkKind::kNvlink && l.count != 0) {
        return InvalidField(
            absl::StrCat(field, ".count"),
            absl::StrCat(l.count, " must be 0 for ", LinkKindName(l.kind),
                         ": only NVLINK links are counted"));
      }
      // The kinds exclude each other: a pair is NVLinked, or else its PCIe
      // path crosses no host bridge, or else it does.
      if (!peers.insert(l.peer_device_id).second) {
        return InvalidField(
            absl::StrCat(field, ".peer_device_id"),
            absl::StrCat("\"", l.peer_device_id,
                         "\" is named by an earlier link: one link per peer"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateDeviceGeometry(const AcceleratorType& model,
                                    const Device& device,
                                    absl::string_view field) {
  if (device.mig_enabled && !model.has_mig()) {
    return InvalidField(absl::StrCat(field, ".mig_enabled"),
                        absl::StrCat("is set but ", model.canonical_model,
                                     " has no MIG support"));
  }
  RETURN_IF_ERROR(ValidateMig(model, device, field));
  RETURN_IF_ERROR(ValidateSharing(model, device, field));
  return ValidateTpu(model, device, field);
}

absl::Status ValidateNodeName(absl::string_view name, absl::string_view field) {
  if (name.empty()) return InvalidField(field, "is required");
  if (!IsDnsSubdomain(name)) {
    return InvalidField(
        field, absl::StrCat("\"", name,
                            "\" is not a valid node name (lower-case DNS "
                            "subdomain of at most 253 characters)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateId(absl::string_view id, absl::string_view field) {
  if (id.empty()) return InvalidField(field, "is required");
  if (id.size() > kMaxIdLength) {
    return InvalidField(
        field, absl::StrCat("is ", id.size(), " characters long; at most ",
                            kMaxIdLength, " are allowed"));
  }
  for (char c : id) {
    if (c <= ' ' || c > '~') {
      return InvalidField(
          field,
          absl::StrCat("\"", id, "\" must be printable ASCII without spaces"));
    }
  }
  return absl::OkStatus();
}

absl::Status NormalizeAndValidateNode(const AcceleratorTypeSet& types,
                                      Node& node) {
  RETURN_IF_ERROR(ValidateNodeName(node.name, "node.name"));
  if (node.labels.size() > kMaxLabelsPerNode) {
    return InvalidField("node.labels",
                        absl::StrCat("has ", node.labels.size(),
                                     " entries; at most ", kMaxLabelsPerNode));
  }
  RETURN_IF_ERROR(ValidateLabels(node.labels, "node.labels"));
  if (node.allocatable.has_value()) {
    RETURN_IF_ERROR(CheckNodeResources("node.allocatable", *node.allocatable));
  }
  if (node.devices.size() > kMaxDevicesPerNode) {
    return InvalidField("node.devices",
                        absl::StrCat("has ", node.devices.size(),
                                     " entries; at most ", kMaxDevicesPerNode));
  }
  absl::flat_hash_set<std::string> ids;
  absl::flat_hash_set<int> indices;
  for (size_t i = 0; i < node.devices.size(); ++i) {
    Device& d = node.devices[i];
    const std::string field = absl::StrCat("node.devices[", i, "]");
    RETURN_IF_ERROR(ValidateDevice(types, d, field));
    if (!ids.insert(d.id).second) {
      return InvalidField(
          absl::StrCat(field, ".id"),
          absl::StrCat("\"", d.id, "\" appears more than once"));
    }
    if (!indices.insert(d.index).second) {
      return InvalidField(
          absl::StrCat(field, ".index"),
          absl::StrCat(d.index, " is used by another device of this node"));
    }
    for (size_t j = 0; j < d.mig_slices.size(); ++j) {
      if (!ids.insert(d.mig_slices[j].id).second) {
        return InvalidField(absl::StrCat(field, ".mig_slices[", j, "].id"),
                            absl::StrCat("\"", d.mig_slices[j].id,
                                         "\" appears more than once"));
      }
    }
  }
  RETURN_IF_ERROR(ValidateTpuSlicesOnNode(types, node));
  return ValidateLinks(node);
}

}  // namespace accelsched
