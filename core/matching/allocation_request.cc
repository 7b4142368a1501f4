#include "core/matching/allocation_request.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/field_error.h"
#include "core/base/labels.h"
#include "core/base/status_macros.h"
#include "core/catalog/node_validation.h"

namespace accelsched {
namespace {

constexpr char kDeviceField[] = "accelerator.device";

// The partition to match, from the request's oneof, for `model`, which the
// request named in `field`.
absl::StatusOr<std::string> Partition(const AllocationRequest& req,
                                      const AcceleratorType& model,
                                      absl::string_view field) {
  const bool sized = req.partition_kind == PartitionKind::kPartitionSize;
  // An alternative's mismatch is that alternative's fault; say which one.
  const std::string of =
      field == kDeviceField
          ? model.canonical_model
          : absl::StrCat(model.canonical_model, " (", field, ")");
  if (model.is_tpu()) {
    if (!sized || req.partition_size.empty()) {
      return InvalidField(
          "accelerator.partition_size",
          absl::StrCat("is required for ", of, ": the slice topology (",
                       model.TopologyNames(), ")"));
    }
    if (!model.FindTopology(req.partition_size)) {
      return InvalidField(
          "accelerator.partition_size",
          absl::StrCat("\"", req.partition_size, "\" is not a topology of ", of,
                       " (valid: ", model.TopologyNames(), ")"));
    }
    return req.partition_size;
  }
  if (!sized)
    return std::string();  // unpartitioned, or nothing: a whole device
  if (!model.has_mig()) {
    return InvalidField(
        "accelerator.partition_size",
        absl::StrCat("\"", req.partition_size, "\" is not a MIG profile of ",
                     of, ", which has no MIG support"));
  }
  if (model.mig.Find(req.partition_size) == nullptr) {
    return InvalidField(
        "accelerator.partition_size",
        absl::StrCat("\"", req.partition_size, "\" is not a MIG profile of ",
                     of, " (valid: ", model.mig.ProfileNames(), ")"));
  }
  return req.partition_size;
}

// The model a name field gives, checked for length and known.
absl::StatusOr<const AcceleratorType*> ResolveModel(
    const AcceleratorTypeSet& types, absl::string_view name,
    absl::string_view field) {
  if (name.size() > kMaxIdLength) {
    return InvalidField(
        field, absl::StrCat("is ", name.size(), " characters long; at most ",
                            kMaxIdLength, " are allowed"));
  }
  const AcceleratorType* model = types.Find(name);
  if (model == nullptr) {
    return InvalidField(
        field, absl::StrCat("\"", name, "\" is not a known accelerator"));
  }
  return model;
}

// The request's acceptable models with the field each came from: `device`
// first, then the alternatives. Empty when the request names none.
absl::StatusOr<std::vector<std::pair<const AcceleratorType*, std::string>>>
Models(const AcceleratorTypeSet& types, const AllocationRequest& req) {
  if (req.alternative_devices.size() > kMaxAlternatives) {
    return InvalidField("alternative_devices",
                        absl::StrCat("has ", req.alternative_devices.size(),
                                     " entries; at most ", kMaxAlternatives));
  }
  std::vector<std::pair<const AcceleratorType*, std::string>> models;
  if (!req.device.empty()) {
    ASSIGN_OR_RETURN(const AcceleratorType* m,
                     ResolveModel(types, req.device, kDeviceField));
    models.emplace_back(m, kDeviceField);
  }
  for (size_t i = 0; i < req.alternative_devices.size(); ++i) {
    std::string field = absl::StrCat("alternative_devices[", i, "]");
    if (req.alternative_devices[i].empty())
      return InvalidField(field, "is empty");
    ASSIGN_OR_RETURN(const AcceleratorType* m,
                     ResolveModel(types, req.alternative_devices[i], field));
    models.emplace_back(m, std::move(field));
  }
  return models;
}

// A share is of one whole NVIDIA GPU, for one pod: `spec` is the rest of the
// request, validated.
absl::Status ValidateShare(
    const AllocationRequest& req,
    const std::vector<std::pair<const AcceleratorType*, std::string>>& models,
    const MatchSpec& spec) {
  const GpuShare& share = *req.share;
  RETURN_IF_ERROR(CheckGpuShare(share, "share"));
  if (spec.device_class != DeviceClass::kNvidiaGpu) {
    return InvalidField("share",
                        absl::StrCat("is a share of an NVIDIA GPU, not of ",
                                     DeviceClassName(spec.device_class)));
  }
  if (req.partition_kind == PartitionKind::kPartitionSize) {
    return InvalidField(
        "accelerator.partition_size",
        absl::StrCat("\"", req.partition_size,
                     "\" is a MIG slice, but a share is of a whole GPU (a MIG "
                     "slice is not shared)"));
  }
  if (spec.count != 1) {
    return InvalidField("count", absl::StrCat(req.count,
                                              ": a share is of one GPU; use "
                                              "0 or 1"));
  }
  if (spec.replicas != 1) {
    return InvalidField("replicas",
                        absl::StrCat(req.replicas,
                                     ": a share is one pod on one GPU; a gang "
                                     "of shares is not supported"));
  }
  for (const auto& [field, value] :
       {std::pair<const char*, const std::string*>{"required_topology",
                                                   &req.required_topology},
        {"preferred_topology", &req.preferred_topology}}) {
    if (!value->empty()) {
      return InvalidField(field, absl::StrCat("\"", *value,
                                              "\": a share is one pod on one "
                                              "GPU, with no groups to place"));
    }
  }
  if (!spec.topology_key.empty()) {
    return InvalidField(
        "topology_key",
        absl::StrCat("\"", absl::CHexEscape(spec.topology_key),
                     "\": a share is one pod on one GPU, with no groups to "
                     "keep in one domain"));
  }
  // Memory the models' table states: a share larger than every named model
  // has could never be placed.
  int64_t largest = 0;
  for (const auto& [model, field] : models) {
    if (model->memory_bytes == 0) return absl::OkStatus();  // not stated
    largest = std::max(largest, model->memory_bytes);
  }
  if (!models.empty() && share.memory_bytes > largest) {
    return InvalidField(
        "share.memory_bytes",
        absl::StrCat(share.memory_bytes, " is more than the ",
                     models.size() == 1 ? "" : "largest ", "GPU memory of ",
                     models.size() == 1 ? models.front().first->canonical_model
                                        : "the requested models",
                     " (", largest, " bytes)"));
  }
  return absl::OkStatus();
}

// The index of `level` in `levels`; -1 for "" or one not there.
int IndexOf(const std::vector<std::string>& levels, const std::string& level) {
  auto it = std::find(levels.begin(), levels.end(), level);
  return level.empty() || it == levels.end()
             ? -1
             : static_cast<int>(it - levels.begin());
}

// The index of `level` (the value of request field `field`) in `levels`;
// -1 for none given. INVALID_ARGUMENT naming the field for one not there.
absl::StatusOr<int> LevelOf(const std::vector<std::string>& levels,
                            const std::string& level, const char* field) {
  const int index = IndexOf(levels, level);
  if (level.empty() || index >= 0) return index;
  return InvalidField(
      field, absl::StrCat("\"", absl::CHexEscape(level), "\" is not ",
                          levels.empty()
                              ? "a topology level: the server has no "
                                "--topology_levels"
                              : absl::StrCat("one of the server's "
                                             "--topology_levels (",
                                             absl::StrJoin(levels, ","), ")")));
}

}  // namespace

absl::Status ValidateTenant(absl::string_view tenant, absl::string_view field) {
  if (tenant.size() > kMaxTenantLength) {
    return InvalidField(
        field, absl::StrCat("is ", tenant.size(), " characters long; at most ",
                            kMaxTenantLength));
  }
  for (char c : tenant) {
    if (c < ' ' || c > '~')
      return InvalidField(field, "must be printable ASCII");
  }
  return absl::OkStatus();
}

absl::StatusOr<MatchSpec> ValidateAllocationRequest(
    const AcceleratorTypeSet& types, const AllocationRequest& req,
    absl::Duration max_lease, const std::vector<std::string>& topology_levels) {
  RETURN_IF_ERROR(ValidateId(req.request_id, "request_id"));
  const int device_class = static_cast<int>(req.device_class);
  if (device_class < 0 || device_class > kMaxDeviceClass) {
    return InvalidField("accelerator.device_class",
                        absl::StrCat(device_class, " is not a DeviceClass"));
  }
  ASSIGN_OR_RETURN(const auto models, Models(types, req));
  MatchSpec spec;
  if (models.empty()) {
    // Any whole device of the class, as propeller's plain `gpu: 1`.
    if (req.device_class == DeviceClass::kGoogleTpu) {
      return InvalidField(
          kDeviceField,
          "is required for GOOGLE_TPU: a slice needs a generation "
          "(e.g. tpu-v5p-slice)");
    }
    if (req.partition_kind == PartitionKind::kPartitionSize) {
      return InvalidField(
          "accelerator.partition_size",
          absl::StrCat("\"", req.partition_size,
                       "\" needs accelerator.device: a MIG profile "
                       "belongs to a model"));
    }
    spec.device_class = req.device_class;
  } else {
    const AcceleratorType& first = *models.front().first;
    // NVIDIA_GPU is the enum's zero value, so it also means "not given".
    if (req.device_class != DeviceClass::kNvidiaGpu &&
        req.device_class != first.device_class) {
      return InvalidField(
          "accelerator.device_class",
          absl::StrCat(DeviceClassName(req.device_class), " does not match ",
                       first.canonical_model, " (",
                       DeviceClassName(first.device_class), ")"));
    }
    if (req.partition_kind == PartitionKind::kUnpartitioned && first.is_tpu()) {
      return InvalidField(
          "accelerator.unpartitioned",
          absl::StrCat("does not apply to ", first.canonical_model,
                       ": give partition_size, the slice topology"));
    }
    spec.device_class = first.device_class;
    for (const auto& [model, field] : models) {
      if (model->device_class != first.device_class) {
        return InvalidField(
            field,
            absl::StrCat(model->canonical_model, " is ",
                         DeviceClassName(model->device_class), ", but ",
                         first.canonical_model, " (", models.front().second,
                         ") is ", DeviceClassName(first.device_class),
                         "; alternatives share one class"));
      }
      ASSIGN_OR_RETURN(spec.partition, Partition(req, *model, field));
      spec.requested_models.emplace_back(model->canonical_model);
    }
    std::sort(spec.requested_models.begin(), spec.requested_models.end());
    spec.requested_models.erase(std::unique(spec.requested_models.begin(), spec.requested_models.end()),
                      spec.requested_models.end());
  }
  if (req.count < 0 || req.count > kMaxCount) {
    return InvalidField(
        "count",
        absl::StrCat(req.count, " is out of range [0, ", kMaxCount, "]"));
  }
  spec.count = req.count == 0 ? 1 : req.count;
  if (spec.device_class == DeviceClass::kGoogleTpu && spec.count != 1) {
    return InvalidField("count",
                        absl::StrCat(req.count,
                                     ": a TPU request takes one whole slice; "
                                     "use 0 or 1"));
  }
  if (req.node_selector.size() > kMaxSelectorTerms) {
    return InvalidField("node_selector",
                        absl::StrCat("has ", req.node_selector.size(),
                                     " entries; at most ", kMaxSelectorTerms));
  }
  RETURN_IF_ERROR(ValidateLabels(req.node_selector, "node_selector"));
  spec.node_selector = req.node_selector;
  spec.selector = LabelSelector::FromMap(req.node_selector);
  RETURN_IF_ERROR(ValidateTenant(req.tenant, "tenant"));
  if (!req.container_name.empty() && !IsDnsLabel(req.container_name)) {
    return InvalidField(
        "container_name",
        absl::StrCat("\"", absl::CHexEscape(req.container_name),
                     "\" is not a Kubernetes container name (a lower-case "
                     "RFC 1123 label of at most 63 characters)"));
  }
  if (req.replicas < 0 || req.replicas > kMaxReplicas) {
    return InvalidField(
        "replicas",
        absl::StrCat(req.replicas, " is out of range [0, ", kMaxReplicas, "]"));
  }
  spec.replicas = req.replicas == 0 ? 1 : req.replicas;
  if (!req.topology_key.empty() && !IsLabelKey(req.topology_key)) {
    return InvalidField("topology_key",
                        absl::StrCat("\"", absl::CHexEscape(req.topology_key),
                                     "\" is not a Kubernetes label key"));
  }
  spec.topology_key = req.topology_key;
  RETURN_IF_ERROR(
      LevelOf(topology_levels, req.required_topology, "required_topology")
          .status());
  ASSIGN_OR_RETURN(
      const int preferred,
      LevelOf(topology_levels, req.preferred_topology, "preferred_topology"));
  if (!req.required_topology.empty()) {
    if (!req.topology_key.empty() &&
        req.topology_key != req.required_topology) {
      return InvalidField(
          "required_topology",
          absl::StrCat("\"", req.required_topology,
                       "\" differs from topology_key \"",
                       absl::CHexEscape(req.topology_key),
                       "\"; give one of them, or both the same"));
    }
    spec.topology_key = req.required_topology;
  }
  // The required level: required_topology, or a topology_key that names a
  // level.
  const int required = IndexOf(topology_levels, spec.topology_key);
  if (preferred >= 0 && required >= 0 && preferred <= required) {
    return InvalidField(
        "preferred_topology",
        absl::StrCat("\"", req.preferred_topology,
                     "\" is not narrower than the required level \"",
                     spec.topology_key, "\" in --topology_levels (",
                     absl::StrJoin(topology_levels, ","),
                     "): every group is in one domain of it already"));
  }
  spec.preferred_topology = req.preferred_topology;
  if (req.lease < absl::ZeroDuration() || req.lease > max_lease) {
    return InvalidField(
        "lease",
        absl::StrCat(absl::FormatDuration(req.lease), " is out of range [0, ",
                     absl::FormatDuration(max_lease), "]"));
  }
  spec.lease = req.lease;
  if (req.expected_duration < absl::ZeroDuration() ||
      req.expected_duration > kMaxExpectedDuration) {
    return InvalidField(
        "expected_duration",
        absl::StrCat(absl::FormatDuration(req.expected_duration),
                     " is out of range [0, ",
                     absl::FormatDuration(kMaxExpectedDuration), "]"));
  }
  spec.expected_duration = req.expected_duration;
  spec.unpartitioned = req.partition_kind == PartitionKind::kUnpartitioned;
  if (req.pod_resources.has_value()) {
    RETURN_IF_ERROR(CheckNodeResources("pod_resources", *req.pod_resources));
    spec.pod_resources = NormalizedPodNeed(*req.pod_resources);
  }
  if (req.share.has_value()) {
    RETURN_IF_ERROR(ValidateShare(req, models, spec));
    spec.share = req.share;
  }
  return spec;
}

}  // namespace accelsched
