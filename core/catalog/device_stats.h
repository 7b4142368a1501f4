// The latest device statistics node agents report in their heartbeats, kept in
// memory only: they are replaced every few seconds, a restart loses at most
// one interval of them (the agents' next heartbeats refill the table), and an
// fsync per heartbeat per node would cost the durable writes that matter
// (allocations) a share of the disk for data nobody needs after a crash.
// Thread-safe, with a lock of its own (taken inside the scheduler's by
// Heartbeat, so that a report and the node's removal are ordered; never the
// other way round).
#ifndef ACCELSCHED_CORE_CATALOG_DEVICE_STATS_H_
#define ACCELSCHED_CORE_CATALOG_DEVICE_STATS_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/catalog/node_validation.h"

namespace accelsched {

struct DeviceStats {
  std::optional<double> utilization;  // busy fraction, 0..1; unset: unknown
  int64_t memory_used_bytes = 0;
  double temperature_celsius = 0;
  double power_watts = 0;
  absl::Time time = absl::InfinitePast();  // when sampled
};

// OK when every reading is finite and in range: utilization (when set) in
// [0, 1], memory not negative, temperature in [-273.15, 1000], power in
// [0, 1e6] watts; otherwise INVALID_ARGUMENT naming `field` and the reading
// ("device_stats[\"GPU-1\"].utilization is 57; must be in [0, 1]").
absl::Status ValidateDeviceStats(const DeviceStats& stats,
                                 absl::string_view field);

// The most readings one heartbeat may carry: every device of a node and each
// of its MIG slices (at most 7 per GPU).
inline constexpr size_t kMaxDeviceStatsPerNode = kMaxDevicesPerNode * 8;

// Stats by device or MIG slice id.
using DeviceStatsMap = absl::flat_hash_map<std::string, DeviceStats>;

class DeviceStatsTable {
 public:
  // Reports received longer than `max_age` ago are not returned by Fresh();
  // zero keeps them until replaced.
  explicit DeviceStatsTable(absl::Duration max_age) : max_age_(max_age) {}
  DeviceStatsTable(const DeviceStatsTable&) = delete;
  DeviceStatsTable& operator=(const DeviceStatsTable&) = delete;

  // Replaces everything known of `node` with `stats`, received at `now`.
  void Put(absl::string_view node, DeviceStatsMap stats, absl::Time now);
  // The node's latest report (whatever its age); empty when none.
  DeviceStatsMap Get(absl::string_view node) const;
  void Erase(absl::string_view node);
  // Every node's report received within max_age of `now`, by node name.
  std::vector<std::pair<std::string, DeviceStatsMap>> Fresh(
      absl::Time now) const;

 private:
  struct Report {
    DeviceStatsMap stats;
    absl::Time received;
  };
  const absl::Duration max_age_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Report> by_node_ ABSL_GUARDED_BY(mu_);
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_CATALOG_DEVICE_STATS_H_
