// Validation of an Allocate (or Explain) request and its translation into the
// pool and count to match: Flyte's accelerator language mapped onto the
// catalog's units.
#ifndef ACCELSCHED_CORE_MATCHING_ALLOCATION_REQUEST_H_
#define ACCELSCHED_CORE_MATCHING_ALLOCATION_REQUEST_H_

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/accelerators/accelerator_type_set.h"
#include "core/matching/match_spec.h"
#include "core/model/allocation_model.h"

namespace accelsched {

inline constexpr int kMaxCount = 1024;
inline constexpr int kMaxReplicas = 1024;
inline constexpr size_t kMaxTenantLength = 128;
inline constexpr size_t kMaxSelectorTerms = 64;
inline constexpr size_t kMaxAlternatives = 32;
// The longest expected_duration taken: a task expected to run longer than a
// year tells packing nothing a year would not.
inline constexpr absl::Duration kMaxExpectedDuration = absl::Hours(24 * 366);

// INVALID_ARGUMENT naming `field` unless `tenant` is printable ASCII of at most
// kMaxTenantLength characters (empty is allowed).
absl::Status ValidateTenant(absl::string_view tenant, absl::string_view field);

// The request's models are accelerator.device (when not empty) and every
// alternative_devices entry, resolved through `types`, sorted and
// deduplicated; none means any whole device of device_class.
//
// INVALID_ARGUMENT naming the field for: a missing or malformed request_id, an
// unknown accelerator.device or alternative_devices[i] (named by its index),
// more than kMaxAlternatives alternatives, models of different device classes,
// a device_class that contradicts them, unpartitioned on a TPU, a
// partition_size that is not a MIG profile (or TPU topology) of every model, a
// partition_size or a GOOGLE_TPU class without any model, a negative or huge
// count, more than one TPU slice, a malformed node_selector, tenant or
// container_name, a negative or huge replicas, a topology_key that is not a
// label key, a negative lease or one longer than `max_lease`, a negative
// expected_duration or one longer than kMaxExpectedDuration, pod_resources
// outside NodeResources' limits (node_resources.h: CheckNodeResources), a
// share outside GpuShare's limits (gpu_share.h: CheckGpuShare), of another
// class than NVIDIA_GPU, with a partition_size, a count or replicas above 1,
// or with memory_bytes above the memory every requested model states; a
// required_topology or preferred_topology that is not one of
// `topology_levels` (the server's, widest first), a preferred_topology not
// narrower than the required one, a required_topology with a different
// topology_key, or either on a share. The spec's topology_key is the
// required_topology when one is given.
absl::StatusOr<MatchSpec> ValidateAllocationRequest(
    const AcceleratorTypeSet& types, const AllocationRequest& request,
    absl::Duration max_lease,
    const std::vector<std::string>& topology_levels = {});

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_MATCHING_ALLOCATION_REQUEST_H_
