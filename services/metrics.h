// Every Prometheus metric of the service, in one place. The rest of the code
// calls the Record...() functions; catalog gauges are read from the scheduler
// at scrape time, so they are right after a restart. Thread-safe.
#ifndef ACCELSCHED_SERVICES_METRICS_H_
#define ACCELSCHED_SERVICES_METRICS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace prometheus {
class Collectable;
class Counter;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace accelsched {

class DeviceStatsTable;
class Scheduler;

class Metrics {
 public:
  // Registers the metric families in `registry` and hooks the scheduler's
  // commit and event streams: the scheduler must outlive this, and must be
  // stopped before this is destroyed.
  // `device_stats` must outlive this too; `per_device_stats` adds a series per
  // device and MIG slice to the per node and model ones.
  Metrics(prometheus::Registry& registry, Scheduler* scheduler,
          const DeviceStatsTable* device_stats, bool per_device_stats,
          absl::string_view version);
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // The scrape-time gauges (devices, nodes, active allocations, watchers, build
  // info).
  std::shared_ptr<prometheus::Collectable> catalog_collector() const;
  // The scrape-time device statistics gauges.
  std::shared_ptr<prometheus::Collectable> device_stats_collector() const;

  // One finished gRPC call.
  void RecordRpc(absl::string_view method, absl::StatusCode code,
                 absl::Duration latency);
  // One finished Allocate, by result: ok, exhausted, invalid (malformed,
  // impossible or conflicting requests) or error.
  void RecordAllocate(absl::StatusCode code, absl::Duration latency);
  // Whether this server serves as the leader, and its epoch (PostgreSQL;
  // 0 before its election and on SQLite).
  void SetLeader(bool serving, int64_t epoch);

 private:
  struct Families;
  std::unique_ptr<Families> f_;
  std::shared_ptr<prometheus::Collectable> collector_;
  std::shared_ptr<prometheus::Collectable> device_stats_collector_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_SERVICES_METRICS_H_
