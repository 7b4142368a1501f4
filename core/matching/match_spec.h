// A request as placements read it (MatchSpec: its spec with the node
// selector parsed), and the names messages give what it asks for.
#ifndef ACCELSCHED_CORE_MATCHING_MATCH_SPEC_H_
#define ACCELSCHED_CORE_MATCHING_MATCH_SPEC_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/base/labels.h"
#include "core/model/request_spec.h"
#include "core/model/unit.h"

namespace accelsched {

// A request as the placements read it: its spec (what quota may narrow the
// models of), with its node_selector parsed.
struct MatchSpec : RequestSpec {
  LabelSelector selector;

  // `spec` with its node_selector parsed: what the placements read of a
  // request.
  static MatchSpec Of(const RequestSpec& spec);
  // A request for exactly one pool's units.
  static MatchSpec ForPool(const PoolKey& pool, int count,
                           Labels node_selector = {});
};

// What `spec` asks for in all, in thousandths of a unit as quotas count
// (AllocationBook::UsageMilli): count x replicas units, or its share's
// compute_milli.
int64_t DemandMilli(const RequestSpec& spec);

// A human name for a pool's unit: "nvidia-tesla-t4 device", "1g.10gb slice",
// "tpu-v5p-slice 2x2x2 slice".
std::string UnitName(const PoolKey& pool);

// The unit's name with its model, where UnitName leaves it out (MIG slices):
// for requests that span several models.
std::string ModelUnitName(const PoolKey& pool);

// A human name for what a request asks for: as UnitName for one model;
// "nvidia-tesla-t4 or nvidia-l4 device", "nvidia-tesla-a100 or
// nvidia-a100-80gb 1g.10gb slice" for several; "whole NVIDIA_GPU device" for
// any.
std::string RequestUnitName(DeviceClass device_class,
                            const std::vector<std::string>& models,
                            absl::string_view partition);
// RequestUnitName of `spec`'s class, models and partition.
std::string SpecUnitName(const RequestSpec& spec);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_MATCHING_MATCH_SPEC_H_
