#include "core/framework/snapshot.h"

#include "core/catalog/pool_queries.h"

namespace accelsched {

std::vector<PoolKey> PoolsFor(const CapacityIndex& index,
                              const RequestSpec& spec) {
  std::vector<PoolKey> out;
  if (spec.requested_models.empty()) {
    for (const auto& [key, pool] :
         PoolsOf(index, spec.device_class, spec.partition)) {
      out.push_back(*key);
    }
    return out;
  }
  for (const std::string& model : spec.requested_models) {
    out.push_back(PoolKey{spec.device_class, model, spec.partition});
  }
  return out;
}

absl::Time LeaseEnd(const Snapshot& snapshot, const RequestSpec& request) {
  return snapshot.now + (request.lease == absl::ZeroDuration()
                             ? snapshot.default_lease
                             : request.lease);
}

DurationEstimate ExpectedDuration(const Snapshot& snapshot,
                                  const Allocation& request) {
  return ExpectedDurationOf(request.tenant, request, snapshot.durations,
                            snapshot.default_lease, snapshot.now);
}

}  // namespace accelsched
