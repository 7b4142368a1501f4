#include "core/catalog/device_stats.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace accelsched {
namespace {

absl::Status InRange(double value, double lo, double hi,
                     absl::string_view field, absl::string_view name) {
  if (std::isfinite(value) && value >= lo && value <= hi) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      field, ".", name, " is ", value, "; must be in [", lo, ", ", hi, "]"));
}

}  // namespace

absl::Status ValidateDeviceStats(const DeviceStats& stats,
                                 absl::string_view field) {
  if (stats.utilization.has_value()) {
    if (absl::Status s =
            InRange(*stats.utilization, 0, 1, field, "utilization");
        !s.ok()) {
      return s;
    }
  }
  if (stats.memory_used_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".memory_used_bytes is ", stats.memory_used_bytes,
                     "; must not be negative"));
  }
  if (absl::Status s = InRange(stats.temperature_celsius, -273.15, 1000, field,
                               "temperature_celsius");
      !s.ok()) {
    return s;
  }
  return InRange(stats.power_watts, 0, 1e6, field, "power_watts");
}

void DeviceStatsTable::Put(absl::string_view node, DeviceStatsMap stats,
                           absl::Time now) {
  absl::MutexLock lock(&mu_);
  by_node_[node] = Report{std::move(stats), now};
}

DeviceStatsMap DeviceStatsTable::Get(absl::string_view node) const {
  absl::MutexLock lock(&mu_);
  auto it = by_node_.find(node);
  return it == by_node_.end() ? DeviceStatsMap() : it->second.stats;
}

void DeviceStatsTable::Erase(absl::string_view node) {
  absl::MutexLock lock(&mu_);
  by_node_.erase(node);
}

std::vector<std::pair<std::string, DeviceStatsMap>> DeviceStatsTable::Fresh(
    absl::Time now) const {
  std::vector<std::pair<std::string, DeviceStatsMap>> out;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [node, report] : by_node_) {
      if (max_age_ > absl::ZeroDuration() && now - report.received > max_age_) {
        continue;
      }
      out.emplace_back(node, report.stats);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

}  // namespace accelsched
