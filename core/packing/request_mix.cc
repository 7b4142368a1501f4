#include "core/packing/request_mix.h"

#include <algorithm>
#include <cmath>

namespace accelsched {
namespace {

int64_t RoundUp(int64_t v, int64_t step) {
  if (v <= 0) return 0;
  return (v + step - 1) / step * step;
}

// Weights under this share of the heaviest are forgotten.
constexpr double kNegligible = 1e-4;

}  // namespace

RequestMix::RequestMix(absl::Duration half_life) : half_life_(half_life) {}

double RequestMix::Decay(absl::Time from, absl::Time to) const {
  if (to <= from || half_life_ <= absl::ZeroDuration()) return 1;
  return std::exp2(-absl::FDivDuration(to - from, half_life_));
}

void RequestMix::Add(absl::Time now, const PoolKey& pool, int count,
                     int64_t cpu_milli, int64_t memory_bytes, double weight) {
  Bucket& bucket = buckets_[pool];
  const double decay = Decay(bucket.updated, now);
  double heaviest = 0;
  for (auto& [key, w] : bucket.weights) {
    w *= decay;
    heaviest = std::max(heaviest, w);
  }
  if (now > bucket.updated) bucket.updated = now;
  bucket.weights[{count, RoundUp(cpu_milli, kCpuStep),
                  RoundUp(memory_bytes, kMemoryStep)}] += weight;
  heaviest = std::max(heaviest, weight);
  // Keep the map small: drop what has decayed to nothing, then the lightest
  // beyond kMaxShapes.
  std::erase_if(bucket.weights, [&](const auto& e) {
    return e.second < heaviest * kNegligible;
  });
  while (bucket.weights.size() > kMaxShapes) {
    auto lightest = std::min_element(
        bucket.weights.begin(), bucket.weights.end(),
        [](const auto& a, const auto& b) { return a.second < b.second; });
    bucket.weights.erase(lightest);
  }
}

void RequestMix::ForEachShape(
    const PoolKey& pool, absl::Time now,
    absl::FunctionRef<void(const ShapeKey& shape, double weight)> fn) const {
  for (const PoolKey& key :
       {pool, PoolKey{pool.device_class, "", pool.partition}}) {
    auto it = buckets_.find(key);
    if (it != buckets_.end()) {
      const double decay = Decay(it->second.updated, now);
      for (const auto& [shape, w] : it->second.weights) fn(shape, w * decay);
    }
    if (pool.model.empty()) break;
  }
}

std::vector<RequestShape> RequestMix::ShapesFor(const PoolKey& pool,
                                                absl::Time now) const {
  // Both buckets' shapes, merged by shape: at most 2 x kMaxShapes entries,
  // so a sorted vector beats a map.
  std::vector<std::pair<ShapeKey, double>> merged;
  ForEachShape(pool, now, [&](const ShapeKey& shape, double w) {
    merged.emplace_back(shape, w);
  });
  std::sort(merged.begin(), merged.end());
  std::vector<RequestShape> out;
  double total = 0;
  for (const auto& [shape, w] : merged) {
    total += w;
    const auto& [count, cpu, memory] = shape;
    if (!out.empty() && out.back().count == count &&
        out.back().cpu_milli == cpu && out.back().memory_bytes == memory) {
      out.back().weight += w;
    } else {
      out.push_back(RequestShape{count, cpu, memory, w});
    }
  }
  if (total <= 0) return {};
  for (RequestShape& s : out) s.weight /= total;
  std::stable_sort(out.begin(), out.end(),
                   [](const RequestShape& a, const RequestShape& b) {
                     return a.weight > b.weight;
                   });
  return out;
}

double RequestMix::UnitsAsked(const PoolKey& pool, absl::Time now) const {
  double units = 0;
  ForEachShape(pool, now, [&](const ShapeKey& shape, double w) {
    units += std::get<0>(shape) * w;
  });
  return units;
}

}  // namespace accelsched
