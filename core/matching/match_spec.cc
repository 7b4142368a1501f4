#include "core/matching/match_spec.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/model/gpu_share.h"

namespace accelsched {

MatchSpec MatchSpec::Of(const RequestSpec& request) {
  MatchSpec spec;
  static_cast<RequestSpec&>(spec) = request;
  spec.selector = LabelSelector::FromMap(request.node_selector);
  return spec;
}

MatchSpec MatchSpec::ForPool(const PoolKey& pool, int count,
                             Labels node_selector) {
  RequestSpec spec;
  spec.device_class = pool.device_class;
  spec.requested_models = {pool.model};
  spec.partition = pool.partition;
  spec.count = count;
  spec.node_selector = std::move(node_selector);
  return Of(spec);
}

int64_t DemandMilli(const RequestSpec& spec) {
  if (spec.share.has_value()) return spec.share->compute_milli;
  return static_cast<int64_t>(spec.count) * spec.replicas * kGpuMilli;
}

std::string UnitName(const PoolKey& pool) {
  if (pool.device_class == DeviceClass::kGoogleTpu) {
    return absl::StrCat(pool.model, " ", pool.partition, " slice");
  }
  if (!pool.partition.empty()) return absl::StrCat(pool.partition, " slice");
  return absl::StrCat(pool.model, " device");
}

std::string ModelUnitName(const PoolKey& pool) {
  if (pool.device_class != DeviceClass::kGoogleTpu && !pool.partition.empty()) {
    return absl::StrCat(pool.model, " ", UnitName(pool));
  }
  return UnitName(pool);
}

std::string RequestUnitName(DeviceClass device_class,
                            const std::vector<std::string>& models,
                            absl::string_view partition) {
  if (models.size() == 1) {
    return UnitName(PoolKey{device_class, models[0], std::string(partition)});
  }
  if (models.empty()) {
    return absl::StrCat("whole ", DeviceClassName(device_class), " device");
  }
  std::string names =
      absl::StrCat(absl::StrJoin(models.begin(), models.end() - 1, ", "),
                   " or ", models.back());
  if (partition.empty()) return absl::StrCat(names, " device");
  return absl::StrCat(names, " ", partition, " slice");
}

std::string SpecUnitName(const RequestSpec& spec) {
  return RequestUnitName(spec.device_class, spec.requested_models,
                         spec.partition);
}

}  // namespace accelsched
