#include "services/metrics.h"

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "core/catalog/device_stats.h"
#include "core/model/allocation_model.h"
#include "core/scheduler/scheduler.h"

namespace accelsched {
namespace {

// Latency buckets in seconds, from 100 microseconds to 10 seconds.
prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
          0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
}

const char* AllocateResult(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return "ok";
    case absl::StatusCode::kResourceExhausted:
      return "exhausted";
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAlreadyExists:
      return "invalid";
    default:
      return "error";
  }
}

// What an allocation's request named, for the `requested` label.
const char* RequestedLabel(const Allocation& a) {
  switch (a.requested_models.size()) {
    case 0:
      return "any";
    case 1:
      return "model";
    default:
      return "alternatives";
  }
}

prometheus::ClientMetric Sample(
    double value, std::vector<prometheus::ClientMetric::Label> labels) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  return m;
}

prometheus::MetricFamily GaugeFamily(std::string name, std::string help) {
  prometheus::MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = prometheus::MetricType::Gauge;
  return f;
}

// Reads the catalog at scrape time.
class CatalogCollector final : public prometheus::Collectable {
 public:
  CatalogCollector(Scheduler* scheduler, std::string version)
      : scheduler_(scheduler), version_(std::move(version)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> out;
    // One snapshot, so that the families below agree with each other.
    const SchedulerStats stats = scheduler_->Stats();
    auto devices = GaugeFamily(
        "accelsched_devices",
        "Allocatable units (whole devices, MIG slices, TPU slices) by state.");
    for (const CapacityEntry& e : stats.capacity) {
      const std::string cls(DeviceClassName(e.device_class));
      for (const auto& [state, value] :
           {std::pair<const char*, int64_t>{"free", e.free},
            {"allocated", e.allocated},
            {"unhealthy", e.unhealthy}}) {
        devices.metric.push_back(
            Sample(static_cast<double>(value), {{"device_class", cls},
                                                {"model", e.model},
                                                {"partition", e.partition},
                                                {"state", state}}));
      }
    }
    out.push_back(std::move(devices));

    // Every whole-GPU NVIDIA pool, zeros included, so that a model's series
    // do not come and go with its sharing GPUs.
    auto shares = GaugeFamily(
        "accelsched_gpu_share_milli",
        "GPU compute (thousandths of one GPU) on GPUs that take shares: held "
        "by shares (state=allocated) or free for them (state=free).");
    for (const CapacityEntry& e : stats.capacity) {
      if (e.device_class != DeviceClass::kNvidiaGpu || !e.partition.empty()) {
        continue;
      }
      for (const auto& [state, value] :
           {std::pair<const char*, int64_t>{"free", e.free_compute_milli},
            {"allocated", e.allocated_compute_milli}}) {
        shares.metric.push_back(Sample(static_cast<double>(value),
                                       {{"model", e.model}, {"state", state}}));
      }
    }
    out.push_back(std::move(shares));

    auto fragmentation = GaugeFamily(
        "accelsched_fragmentation_ratio",
        "Share (0 to 1) of a model's free whole devices that the recent mix "
        "of requests could not use where they lie.");
    for (const auto& [model, ratio] : stats.fragmentation) {
      fragmentation.metric.push_back(Sample(ratio, {{"model", model}}));
    }
    out.push_back(std::move(fragmentation));

    auto active = GaugeFamily("accelsched_allocations_active",
                              "Live (ACTIVE) allocations by tenant.");
    for (const auto& [tenant, n] : stats.active_by_tenant) {
      active.metric.push_back(
          Sample(static_cast<double>(n), {{"tenant", tenant}}));
    }
    out.push_back(std::move(active));

    auto pending = GaugeFamily("accelsched_allocations_pending",
                               "PENDING allocations (queued requests) by "
                               "tenant.");
    for (const auto& [tenant, n] : stats.pending_by_tenant) {
      pending.metric.push_back(
          Sample(static_cast<double>(n), {{"tenant", tenant}}));
    }
    out.push_back(std::move(pending));

    auto share = GaugeFamily(
        "accelsched_tenant_dominant_share",
        "Each tenant's dominant resource share: the largest fraction of any "
        "pool's units it holds, divided by its fair-share weight.");
    auto quota = GaugeFamily(
        "accelsched_tenant_quota_units",
        "Units a tenant holds (kind=used), may hold (kind=nominal) and "
        "borrows (kind=borrowed) per pool, a GPU share as its fraction of a "
        "GPU; nominal only where a quota is set.");
    for (const TenantStanding& t : stats.tenants) {
      share.metric.push_back(Sample(t.dominant_share, {{"tenant", t.tenant}}));
      for (const TenantStanding::Pool& p : t.pools) {
        auto labels = [&](const char* kind) {
          return std::vector<prometheus::ClientMetric::Label>{
              {"tenant", t.tenant},
              {"device_class",
               std::string(DeviceClassName(p.pool.device_class))},
              {"model", p.pool.model},
              {"partition", p.pool.partition},
              {"kind", kind}};
        };
        auto units = [](int64_t milli) {
          return static_cast<double>(milli) / kGpuMilli;
        };
        quota.metric.push_back(Sample(units(p.used_milli), labels("used")));
        if (p.nominal_milli >= 0) {
          quota.metric.push_back(
              Sample(units(p.nominal_milli), labels("nominal")));
          quota.metric.push_back(
              Sample(units(p.borrowed_milli), labels("borrowed")));
        }
      }
    }
    out.push_back(std::move(share));
    out.push_back(std::move(quota));

    auto nodes =
        GaugeFamily("accelsched_nodes",
                    "Registered nodes by whether they take new allocations.");
    const int64_t schedulable = stats.schedulable_nodes;
    const int64_t cordoned = stats.cordoned_nodes;
    nodes.metric.push_back(
        Sample(static_cast<double>(schedulable), {{"schedulable", "true"}}));
    nodes.metric.push_back(
        Sample(static_cast<double>(cordoned), {{"schedulable", "false"}}));
    out.push_back(std::move(nodes));

    // Per accounted node: what pods placed by accelsched may use, hold, and
    // have left (negative where allocatable was lowered under what is held).
    auto cpu = GaugeFamily(
        "accelsched_node_cpu_milli",
        "Accounted nodes' CPU in thousandths: allocatable, allocated (held "
        "by live allocations' pod_resources) and free.");
    auto memory = GaugeFamily(
        "accelsched_node_memory_bytes",
        "Accounted nodes' memory: allocatable, allocated and free.");
    for (const auto& [node, account] : stats.node_accounts) {
      const NodeResources free = account.available();
      auto add = [&, &node = node](prometheus::MetricFamily& family,
                                   int64_t allocatable, int64_t held,
                                   int64_t left) {
        family.metric.push_back(
            Sample(static_cast<double>(allocatable),
                   {{"node", node}, {"state", "allocatable"}}));
        family.metric.push_back(
            Sample(static_cast<double>(held),
                   {{"node", node}, {"state", "allocated"}}));
        family.metric.push_back(Sample(static_cast<double>(left),
                                       {{"node", node}, {"state", "free"}}));
      };
      add(cpu, account.allocatable->cpu_milli, account.held.cpu_milli,
          free.cpu_milli);
      add(memory, account.allocatable->memory_bytes, account.held.memory_bytes,
          free.memory_bytes);
    }
    out.push_back(std::move(cpu));
    out.push_back(std::move(memory));

    auto watchers =
        GaugeFamily("accelsched_watchers", "Connected WatchEvents streams.");
    watchers.metric.push_back(
        Sample(static_cast<double>(scheduler_->events().watchers()), {}));
    out.push_back(std::move(watchers));

    prometheus::MetricFamily dropped;
    dropped.name = "accelsched_watchers_dropped_total";
    dropped.help = "WatchEvents streams ended for falling behind.";
    dropped.type = prometheus::MetricType::Counter;
    prometheus::ClientMetric d;
    d.counter.value = static_cast<double>(scheduler_->events().dropped());
    dropped.metric.push_back(std::move(d));
    out.push_back(std::move(dropped));

    auto build = GaugeFamily("accelsched_build_info",
                             "Always 1; the labels carry the build's version.");
    build.metric.push_back(Sample(1, {{"version", version_}}));
    out.push_back(std::move(build));
    return out;
  }

 private:
  Scheduler* const scheduler_;
  const std::string version_;
};

// Reads the latest device statistics at scrape time, joined with the catalog
// for each device's model. Per node and model by default: a cluster of
// thousands of GPUs would otherwise add four series per device (and per MIG
// slice) to every scrape.
class DeviceStatsCollector final : public prometheus::Collectable {
 public:
  DeviceStatsCollector(const Scheduler* scheduler,
                       const DeviceStatsTable* stats, bool per_device)
      : scheduler_(scheduler), stats_(stats), per_device_(per_device) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    auto util = GaugeFamily(
        "accelsched_node_device_utilization_ratio",
        "Mean busy fraction (0-1) over the node's devices of a model that "
        "report one (not MIG-enabled GPUs: NVML cannot tell).");
    auto memory = GaugeFamily(
        "accelsched_node_device_memory_used_bytes",
        "Memory in use summed over the node's reporting devices of a model.");
    auto power =
        GaugeFamily("accelsched_node_device_power_watts",
                    "Power draw summed over the node's reporting devices of a "
                    "model.");
    auto temperature =
        GaugeFamily("accelsched_node_device_max_temperature_celsius",
                    "Hottest of the node's reporting devices of a model.");
    auto reporting = GaugeFamily(
        "accelsched_node_devices_reporting",
        "Devices of a model on the node in the utilization mean (its "
        "weights).");
    auto dev_util = GaugeFamily("accelsched_device_utilization_ratio",
                                "Busy fraction (0-1) of one device or slice.");
    auto dev_memory = GaugeFamily("accelsched_device_memory_used_bytes",
                                  "Memory in use on one device or slice.");
    auto dev_temperature = GaugeFamily("accelsched_device_temperature_celsius",
                                       "Temperature of one device.");
    auto dev_power = GaugeFamily("accelsched_device_power_watts",
                                 "Power draw of one device.");

    struct Sum {
      double utilization = 0;
      int with_utilization = 0;
      double memory = 0;
      double power = 0;
      double max_temperature = -273.15;
    };
    for (const auto& report : stats_->Fresh(absl::Now())) {
      // Not a structured binding: a lambda below uses the name, and clang 14
      // (the fuzz and TSan builds) cannot capture one.
      const std::string& name = report.first;
      const DeviceStatsMap& stats = report.second;
      // One GetNode (the scheduler's reader lock, a copy of the node) per
      // reporting node per scrape: cheap next to the scrape interval, and it
      // keeps the scheduler's interface as it is.
      absl::StatusOr<Node> node = scheduler_->nodes().GetNode(name);
      if (!node.ok()) continue;  // removed since its last heartbeat
      std::map<std::string, Sum> by_model;
      auto per_device = [&](const DeviceStats& s, const std::string& model,
                            const std::string& id,
                            const std::string& partition) {
        if (!per_device_) return;
        const std::vector<prometheus::ClientMetric::Label> labels = {
            {"device", id},
            {"model", model},
            {"node", name},
            {"partition", partition}};
        if (s.utilization.has_value()) {
          dev_util.metric.push_back(Sample(*s.utilization, labels));
        }
        dev_memory.metric.push_back(
            Sample(static_cast<double>(s.memory_used_bytes), labels));
        if (partition.empty()) {
          dev_temperature.metric.push_back(
              Sample(s.temperature_celsius, labels));
          dev_power.metric.push_back(Sample(s.power_watts, labels));
        }
      };
      for (const Device& d : node->devices) {
        // Whole devices only in the sums: a MIG GPU's own reading already
        // counts the memory its slices use.
        if (auto it = stats.find(d.id); it != stats.end()) {
          const DeviceStats& s = it->second;
          Sum& sum = by_model[d.canonical_model];
          if (s.utilization.has_value()) {
            sum.utilization += *s.utilization;
            ++sum.with_utilization;
          }
          sum.memory += static_cast<double>(s.memory_used_bytes);
          sum.power += s.power_watts;
          sum.max_temperature =
              std::max(sum.max_temperature, s.temperature_celsius);
          per_device(s, d.canonical_model, d.id, "");
        }
        for (const MigSlice& slice : d.mig_slices) {
          if (auto it = stats.find(slice.id); it != stats.end()) {
            per_device(it->second, d.canonical_model, slice.id, slice.profile);
          }
        }
      }
      for (const auto& [model, sum] : by_model) {
        const std::vector<prometheus::ClientMetric::Label> labels = {
            {"model", model}, {"node", name}};
        if (sum.with_utilization > 0) {
          util.metric.push_back(
              Sample(sum.utilization / sum.with_utilization, labels));
          reporting.metric.push_back(Sample(sum.with_utilization, labels));
        }
        memory.metric.push_back(Sample(sum.memory, labels));
        power.metric.push_back(Sample(sum.power, labels));
        temperature.metric.push_back(Sample(sum.max_temperature, labels));
      }
    }
    std::vector<prometheus::MetricFamily> out;
    for (auto* f : {&util, &memory, &power, &temperature, &reporting}) {
      out.push_back(std::move(*f));
    }
    if (per_device_) {
      for (auto* f : {&dev_util, &dev_memory, &dev_temperature, &dev_power}) {
        out.push_back(std::move(*f));
      }
    }
    return out;
  }

 private:
  const Scheduler* const scheduler_;
  const DeviceStatsTable* const stats_;
  const bool per_device_;
};

}  // namespace

struct Metrics::Families {
  explicit Families(prometheus::Registry& r)
      : allocate_requests(
            prometheus::BuildCounter()
                .Name("accelsched_allocate_requests_total")
                .Help("Allocate calls by result: ok, exhausted, invalid, "
                      "error.")
                .Register(r)),
        allocate_duration(
            prometheus::BuildHistogram()
                .Name("accelsched_allocate_duration_seconds")
                .Help("Allocate latency, durable commit included.")
                .Register(r)
                .Add({}, LatencyBuckets())),
        releases(prometheus::BuildCounter()
                     .Name("accelsched_releases_total")
                     .Help("Allocations ended, by reason: released, expired, "
                           "node_removed, preempted (grace over or released "
                           "in it), withdrawn (a pending request released), "
                           "pending_expired (a pending request not kept "
                           "alive).")
                     .Register(r)),
        queue_wait(
            prometheus::BuildHistogram()
                .Name("accelsched_queue_wait_seconds")
                .Help("Time from a queued request's arrival to its "
                      "admission.")
                .Register(r)
                .Add({},
                     prometheus::Histogram::BucketBoundaries{
                         0.01, 0.1, 1, 5, 15, 60, 300, 900, 3600, 14400})),
        preemptions(prometheus::BuildCounter()
                        .Name("accelsched_preemptions_total")
                        .Help("Allocations preempted, by their tenant.")
                        .Register(r)),
        allocations(
            prometheus::BuildCounter()
                .Name("accelsched_allocations_total")
                .Help("New allocations by the chosen model, and by what the "
                      "request named: model (one), alternatives (several) or "
                      "any (none).")
                .Register(r)),
        lease_expirations(prometheus::BuildCounter()
                              .Name("accelsched_lease_expirations_total")
                              .Help("Allocations whose lease ran out.")
                              .Register(r)
                              .Add({})),
        grpc_requests(
            prometheus::BuildCounter()
                .Name("accelsched_grpc_requests_total")
                .Help("Finished gRPC calls by method and status code.")
                .Register(r)),
        grpc_duration(prometheus::BuildHistogram()
                          .Name("accelsched_grpc_request_duration_seconds")
                          .Help("gRPC call latency by method.")
                          .Register(r)),
        commit_duration(
            prometheus::BuildHistogram()
                .Name("accelsched_sqlite_commit_duration_seconds")
                .Help("Duration of one durable transaction (SQLite, "
                      "or PostgreSQL despite the name).")
                .Register(r)
                .Add({}, LatencyBuckets())),
        commit_batch(
            prometheus::BuildHistogram()
                .Name("accelsched_group_commit_batch_size")
                .Help("Acknowledged writes carried by one transaction.")
                .Register(r)
                .Add({},
                     prometheus::Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32,
                                                             64, 128, 256})),
        leader(prometheus::BuildGauge()
                   .Name("accelsched_leader")
                   .Help("1 while this server serves as the leader (always on "
                         "SQLite); 0 on a follower.")
                   .Register(r)
                   .Add({})),
        leader_epoch(prometheus::BuildGauge()
                         .Name("accelsched_leader_epoch")
                         .Help("The leader epoch this server was elected with "
                               "(PostgreSQL); 0 before, and on SQLite.")
                         .Register(r)
                         .Add({})) {
    for (const char* result : {"ok", "exhausted", "invalid", "error"}) {
      allocate_requests.Add({{"result", result}});
    }
    for (const char* reason :
         {kReasonReleased, kReasonExpired, kReasonNodeRemoved, kReasonPreempted,
          kReasonWithdrawn, kReasonPendingExpired}) {
      releases.Add({{"reason", reason}});
    }
  }

  prometheus::Family<prometheus::Counter>& allocate_requests;
  prometheus::Histogram& allocate_duration;
  prometheus::Family<prometheus::Counter>& releases;
  prometheus::Histogram& queue_wait;
  prometheus::Family<prometheus::Counter>& preemptions;
  prometheus::Family<prometheus::Counter>& allocations;
  prometheus::Counter& lease_expirations;
  prometheus::Family<prometheus::Counter>& grpc_requests;
  prometheus::Family<prometheus::Histogram>& grpc_duration;
  // The series of each (method, code) seen, found again without building
  // label maps and bucket lists on every call (prometheus-cpp keeps a
  // metric where it created it).
  struct RpcSeries {
    prometheus::Counter* requests;
    prometheus::Histogram* duration;
  };
  absl::Mutex rpc_mu;
  absl::flat_hash_map<std::pair<std::string, int>, RpcSeries> rpc
      ABSL_GUARDED_BY(rpc_mu);
  prometheus::Histogram& commit_duration;
  prometheus::Histogram& commit_batch;
  prometheus::Gauge& leader;
  prometheus::Gauge& leader_epoch;
};

Metrics::Metrics(prometheus::Registry& registry, Scheduler* scheduler,
                 const DeviceStatsTable* device_stats, bool per_device_stats,
                 absl::string_view version)
    : f_(std::make_unique<Families>(registry)),
      collector_(
          std::make_shared<CatalogCollector>(scheduler, std::string(version))),
      device_stats_collector_(std::make_shared<DeviceStatsCollector>(
          scheduler, device_stats, per_device_stats)) {
  Families* f = f_.get();
  scheduler->committer().set_observer(
      [f](size_t writes, absl::Duration latency) {
        f->commit_batch.Observe(static_cast<double>(writes));
        f->commit_duration.Observe(absl::ToDoubleSeconds(latency));
      });
  scheduler->events().AddListener([f](const Event& e) {
    if (e.type == Event::Type::kAdmitted) {
      f->queue_wait.Observe(absl::ToDoubleSeconds(e.allocation.admitted_at -
                                                  e.allocation.created_at));
    }
    if (e.type == Event::Type::kPreempted) {
      f->preemptions.Add({{"tenant", e.allocation.tenant}}).Increment();
    }
    if (e.type == Event::Type::kAllocated || e.type == Event::Type::kAdmitted) {
      const Allocation& a = e.allocation;
      f->allocations
          .Add({{"device_class", std::string(DeviceClassName(a.device_class))},
                {"model", a.model},
                {"partition", a.partition},
                {"requested", RequestedLabel(a)}})
          .Increment();
    }
    if (e.type == Event::Type::kReleased || e.type == Event::Type::kExpired) {
      f->releases.Add({{"reason", e.reason}}).Increment();
    }
    if (e.type == Event::Type::kExpired && e.reason == kReasonExpired) {
      f->lease_expirations.Increment();
    }
  });
}

Metrics::~Metrics() = default;

std::shared_ptr<prometheus::Collectable> Metrics::catalog_collector() const {
  return collector_;
}

std::shared_ptr<prometheus::Collectable> Metrics::device_stats_collector()
    const {
  return device_stats_collector_;
}

void Metrics::RecordRpc(absl::string_view method, absl::StatusCode code,
                        absl::Duration latency) {
  Families::RpcSeries series;
  {
    absl::MutexLock lock(&f_->rpc_mu);
    auto [it, inserted] =
        f_->rpc.try_emplace({std::string(method), static_cast<int>(code)});
    if (inserted) {
      const std::string m(method);
      it->second = {
          &f_->grpc_requests.Add(
              {{"method", m}, {"code", absl::StatusCodeToString(code)}}),
          &f_->grpc_duration.Add({{"method", m}}, LatencyBuckets())};
    }
    series = it->second;
  }
  series.requests->Increment();
  series.duration->Observe(absl::ToDoubleSeconds(latency));
}

void Metrics::SetLeader(bool serving, int64_t epoch) {
  f_->leader.Set(serving ? 1 : 0);
  f_->leader_epoch.Set(static_cast<double>(epoch));
}

void Metrics::RecordAllocate(absl::StatusCode code, absl::Duration latency) {
  f_->allocate_requests.Add({{"result", AllocateResult(code)}}).Increment();
  f_->allocate_duration.Observe(absl::ToDoubleSeconds(latency));
}

}  // namespace accelsched
