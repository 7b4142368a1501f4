#include "core/packing/duration_learner.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace accelsched {

std::string DurationLearner::KeyOf(absl::string_view tenant,
                                   const RequestSpec& spec) {
  // A tenant name is printable ASCII (ValidateTenant): '\n' ends it.
  return absl::StrCat(tenant, "\n", spec.KeyFor(RequestSpec::kShape));
}

void DurationLearner::Observe(absl::string_view key, absl::Duration runtime,
                              absl::Time ended_at) {
  // A run of no time (a release in the tick of its admission) says nothing
  // of how long the next one will take, and would make a zero spread.
  if (runtime <= absl::ZeroDuration()) return;
  auto it = by_key_.find(key);
  if (it == by_key_.end()) {
    if (by_key_.size() >= kMaxKeys) {
      auto oldest = by_key_.begin();
      for (auto k = by_key_.begin(); k != by_key_.end(); ++k) {
        if (k->second.newest < oldest->second.newest) oldest = k;
      }
      by_key_.erase(oldest);
    }
    it = by_key_.emplace(std::string(key), Samples{}).first;
  }
  Samples& s = it->second;
  const Sample sample{runtime, ended_at};
  if (static_cast<int>(s.ring.size()) < kSamplesPerKey) {
    s.ring.push_back(sample);
  } else {
    s.ring[s.next] = sample;
  }
  s.next = (s.next + 1) % kSamplesPerKey;
  s.newest = std::max(s.newest, ended_at);
}

std::optional<DurationEstimate> DurationLearner::Estimate(
    absl::string_view key, absl::Time now) const {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return std::nullopt;
  const std::vector<Sample>& ring = it->second.ring;
  const int n = static_cast<int>(ring.size());
  if (n < kMinSamples) return std::nullopt;
  std::vector<std::pair<absl::Duration, double>> weighed;
  weighed.reserve(n);
  double total = 0;
  for (const Sample& s : ring) {
    const double age =
        std::max(absl::FDivDuration(now - s.ended_at, kHalfLife), 0.0);
    const double w = std::exp2(-age);
    weighed.emplace_back(s.runtime, w);
    total += w;
  }
  std::sort(weighed.begin(), weighed.end());
  // The first runtime at which a share `q` of the weight is reached; a
  // weight that has decayed to nothing (samples years old) leaves the plain
  // quantile.
  auto quantile = [&](double q) {
    if (!(total > 0)) return weighed[std::min(n - 1, int(q * n))].first;
    double reached = 0;
    for (const auto& [runtime, w] : weighed) {
      reached += w;
      if (reached >= q * total) return runtime;
    }
    return weighed.back().first;
  };
  if (quantile(0.75) > kMaxSpread * quantile(0.25)) return std::nullopt;
  return DurationEstimate{quantile(0.5), DurationSource::kLearned, n};
}

DurationEstimate ExpectedDurationOf(absl::string_view tenant,
                                    const RequestSpec& spec,
                                    const DurationLearner* learned,
                                    absl::Duration default_lease,
                                    absl::Time now) {
  if (spec.expected_duration > absl::ZeroDuration()) {
    return DurationEstimate{spec.expected_duration, DurationSource::kGiven, 0};
  }
  if (learned != nullptr && learned->keys() > 0) {
    std::optional<DurationEstimate> e =
        learned->Estimate(DurationLearner::KeyOf(tenant, spec), now);
    if (e.has_value()) return *e;
  }
  return DurationEstimate{
      spec.lease == absl::ZeroDuration() ? default_lease : spec.lease,
      DurationSource::kLease, 0};
}

}  // namespace accelsched
