#include "core/allocation_request.h"

#include "absl/strings/str_cat.h"
#include "core/mig_geometry.h"
#include "core/name_table.h"
#include "core/node_validation.h"
#include "core/status_macros.h"
#include "core/tpu_topology.h"

namespace accelsched {
namespace {

absl::Status Invalid(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, " ", what));
}

// The partition to match, from the request's oneof.
absl::StatusOr<std::string> Partition(const AllocationRequest& req,
                                      const ModelInfo& model) {
  const bool sized = req.partition_kind == PartitionKind::kPartitionSize;
  if (!model.tpu_generation.empty()) {
    const TpuGeneration& gen = *FindTpuGeneration(model.tpu_generation);
    if (!sized || req.partition_size.empty()) {
      return Invalid(
          "accelerator.partition_size",
          absl::StrCat("is required for ", model.canonical,
                       ": the slice topology (", TopologyNames(gen), ")"));
    }
    if (!HasTopology(gen, req.partition_size)) {
      return Invalid(
          "accelerator.partition_size",
          absl::StrCat("\"", req.partition_size, "\" is not a topology of ",
                       model.canonical, " (valid: ", TopologyNames(gen), ")"));
    }
    return req.partition_size;
  }
  if (!sized)
    return std::string();  // unpartitioned, or nothing: a whole device
  const MigFamily* family = FindMigFamily(model.mig_family);
  if (family == nullptr) {
    return Invalid(
        "accelerator.partition_size",
        absl::StrCat("\"", req.partition_size, "\" is not a MIG profile of ",
                     model.canonical, ", which has no MIG support"));
  }
  if (FindMigProfile(*family, req.partition_size) == nullptr) {
    return Invalid("accelerator.partition_size",
                   absl::StrCat("\"", req.partition_size,
                                "\" is not a MIG profile of ", model.canonical,
                                " (valid: ", MigProfileNames(*family), ")"));
  }
  return req.partition_size;
}

}  // namespace

absl::StatusOr<MatchSpec> ValidateAllocationRequest(
    const AllocationRequest& req, absl::Duration max_lease) {
  RETURN_IF_ERROR(ValidateId(req.request_id, "request_id"));
  if (req.device.empty()) return Invalid("accelerator.device", "is required");
  if (req.device.size() > kMaxIdLength) {
    return Invalid(
        "accelerator.device",
        absl::StrCat("is ", req.device.size(), " characters long; at most ",
                     kMaxIdLength, " are allowed"));
  }
  const ModelInfo* model = FindModel(req.device);
  if (model == nullptr) {
    return Invalid(
        "accelerator.device",
        absl::StrCat("\"", req.device, "\" is not a known accelerator"));
  }
  // NVIDIA_GPU is the enum's zero value, so it also means "not given".
  if (req.device_class != DeviceClass::kNvidiaGpu &&
      req.device_class != model->device_class) {
    return Invalid("accelerator.device_class",
                   absl::StrCat(DeviceClassName(req.device_class),
                                " does not match ", model->canonical, " (",
                                DeviceClassName(model->device_class), ")"));
  }
  if (req.partition_kind == PartitionKind::kUnpartitioned &&
      !model->tpu_generation.empty()) {
    return Invalid("accelerator.unpartitioned",
                   absl::StrCat("does not apply to ", model->canonical,
                                ": give partition_size, the slice topology"));
  }
  MatchSpec spec;
  spec.pool.device_class = model->device_class;
  spec.pool.model = std::string(model->canonical);
  ASSIGN_OR_RETURN(spec.pool.partition, Partition(req, *model));
  if (req.count < 0 || req.count > kMaxCount) {
    return Invalid("count", absl::StrCat(req.count, " is out of range [0, ",
                                         kMaxCount, "]"));
  }
  spec.count = req.count == 0 ? 1 : req.count;
  if (!model->tpu_generation.empty() && spec.count != 1) {
    return Invalid("count",
                   absl::StrCat(req.count,
                                ": a TPU request takes one whole slice; "
                                "use 0 or 1"));
  }
  if (req.node_selector.size() > kMaxSelectorTerms) {
    return Invalid("node_selector",
                   absl::StrCat("has ", req.node_selector.size(),
                                " entries; at most ", kMaxSelectorTerms));
  }
  RETURN_IF_ERROR(ValidateLabels(req.node_selector, "node_selector"));
  spec.selector = LabelSelector::FromMap(req.node_selector);
  if (req.tenant.size() > kMaxTenantLength) {
    return Invalid(
        "tenant", absl::StrCat("is ", req.tenant.size(),
                               " characters long; at most ", kMaxTenantLength));
  }
  for (char c : req.tenant) {
    if (c < ' ' || c > '~') return Invalid("tenant", "must be printable ASCII");
  }
  if (req.lease < absl::ZeroDuration() || req.lease > max_lease) {
    return Invalid("lease", absl::StrCat(absl::FormatDuration(req.lease),
                                         " is out of range [0, ",
                                         absl::FormatDuration(max_lease), "]"));
  }
  return spec;
}

}  // namespace accelsched
