// Validation of an Allocate (or Explain) request and its translation into the
// pool and count to match: Flyte's accelerator language mapped onto the
// catalog's units.
#ifndef ACCELSCHED_CORE_ALLOCATION_REQUEST_H_
#define ACCELSCHED_CORE_ALLOCATION_REQUEST_H_

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/allocation_model.h"
#include "core/matcher.h"

namespace accelsched {

inline constexpr int kMaxCount = 1024;
inline constexpr size_t kMaxTenantLength = 128;
inline constexpr size_t kMaxSelectorTerms = 64;

// INVALID_ARGUMENT naming the field for: a missing or malformed request_id, an
// unknown accelerator.device, a device_class that contradicts it, unpartitioned
// on a TPU, a partition_size that is not a MIG profile of the model (or a
// topology of the TPU), a negative or huge count, more than one TPU slice, a
// malformed node_selector or tenant, a negative lease or one longer than
// `max_lease`.
absl::StatusOr<MatchSpec> ValidateAllocationRequest(
    const AllocationRequest& request, absl::Duration max_lease);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_ALLOCATION_REQUEST_H_
