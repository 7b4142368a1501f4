#include "core/plugins/request_mix/request_mix.h"

#include <cstdint>

namespace accelsched {

void CountInMix(const RequestSpec& spec, absl::Time now, RequestMix& mix) {
  if (spec.share.has_value()) return;
  const int64_t cpu =
      spec.pod_resources.has_value() ? spec.pod_resources->cpu_milli : 0;
  const int64_t memory =
      spec.pod_resources.has_value() ? spec.pod_resources->memory_bytes : 0;
  PoolKey key{spec.device_class, "", spec.partition};
  if (spec.requested_models.empty()) {
    mix.Add(now, key, spec.count, cpu, memory, spec.replicas);
    return;
  }
  const double weight =
      static_cast<double>(spec.replicas) / spec.requested_models.size();
  for (const std::string& model : spec.requested_models) {
    key.model = model;
    mix.Add(now, key, spec.count, cpu, memory, weight);
  }
}

std::unique_ptr<Plugin> RequestMixPlugin::New() {
  return std::make_unique<RequestMixPlugin>();
}

Verdict RequestMixPlugin::PreFilter(Session& session, CycleState& cycle) const {
  if (RequestMix* mix = cycle.snapshot().count_into) {
    CountInMix(cycle.spec(), cycle.snapshot().now, *mix);
  }
  return Verdict::Success();
}

}  // namespace accelsched
