// Metrics through the real things: the real server's /metrics, Debian's
// promtool, and a real Prometheus server evaluating every query of the Grafana
// dashboard.
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/support/e2e_fixture.h"
#include "tests/support/http_client.h"

namespace accelsched {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using Stub = v1::AcceleratorScheduler::Stub;

struct Scrape {
  std::string text;
  std::map<std::string, std::string> types;  // family -> TYPE
  std::map<std::string, double> samples;     // series (name{labels}) -> value

  double at(const std::string& series) const {
    auto it = samples.find(series);
    EXPECT_NE(it, samples.end()) << "no series " << series << " in:\n" << text;
    return it == samples.end() ? -1 : it->second;
  }
};

Scrape ScrapeMetrics(const ServerProcess& server) {
  absl::StatusOr<std::string> body = HttpGet(server.metrics_port(), "/metrics");
  EXPECT_TRUE(body.ok()) << body.status();
  Scrape s;
  s.text = body.value_or("");
  for (absl::string_view line : absl::StrSplit(s.text, '\n')) {
    if (line.empty()) continue;
    if (absl::ConsumePrefix(&line, "# TYPE ")) {
      std::vector<std::string> parts = absl::StrSplit(line, ' ');
      s.types[parts[0]] = parts[1];
      continue;
    }
    if (line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    double value = 0;
    if (!absl::SimpleAtod(line.substr(space + 1), &value)) value = -1;
    s.samples[std::string(line.substr(0, space))] = value;
  }
  return s;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Writes `text` to promtool's standard input; returns its exit code and output.
int Promtool(const std::string& text, const std::string& dir,
             std::string* output) {
  const std::string in = dir + "/metrics.txt";
  std::ofstream(in) << text;
  const std::string cmd = "promtool check metrics < " + in + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;)
    output->append(buf, n);
  return WEXITSTATUS(pclose(p));
}

// A cluster with every kind of unit, one cordoned node, and allocations of each
// outcome.
// Call as ASSERT_NO_FATAL_FAILURE(...): it asserts.
void DriveTraffic(E2eTest& t) {
  v1::Node a100 = GpuNode();
  ASSERT_TRUE(t.Register(a100).ok());
  ASSERT_TRUE(t.Register(TpuHost("tpu-host-a", "chip-a")).ok());
  ASSERT_TRUE(t.Register(TpuHost("tpu-host-b", "chip-b")).ok());
  v1::Node t4;
  t4.set_name("t4-node");
  for (int i = 0; i < 4; ++i) AddGpu(&t4, absl::StrCat("GPU-t4-", i), "T4", i);
  // Accounted (accelsched_node_cpu_milli); its requests ask no pod resources.
  t4.mutable_allocatable()->set_cpu_milli(32000);
  t4.mutable_allocatable()->set_memory_bytes(int64_t{128} << 30);
  ASSERT_TRUE(t.Register(t4).ok());
  // Node agents' readings: four T4s, the whole A100, the MIG A100 and one of
  // its slices.
  v1::HeartbeatRequest t4_stats;
  t4_stats.set_name("t4-node");
  for (int i = 0; i < 4; ++i) {
    v1::DeviceStats& s =
        (*t4_stats.mutable_device_stats())[absl::StrCat("GPU-t4-", i)];
    s.set_utilization(0.2 * (i + 1));
    s.set_memory_used_bytes(int64_t{1} << 30);
    s.set_temperature_celsius(40 + i);
    s.set_power_watts(50);
  }
  v1::HeartbeatRequest a100_stats;
  a100_stats.set_name("gpu-node-1");
  (*a100_stats.mutable_device_stats())["GPU-0001"].set_utilization(1);
  (*a100_stats.mutable_device_stats())["GPU-0002"].set_memory_used_bytes(
      int64_t{3} << 30);
  (*a100_stats.mutable_device_stats())[a100.devices(1).mig_slices(0).id()]
      .set_memory_used_bytes(int64_t{1} << 30);
  v1::HeartbeatResponse heartbeat;
  ASSERT_TRUE(t.Call(&Stub::Heartbeat, t4_stats, &heartbeat).ok());
  ASSERT_TRUE(t.Call(&Stub::Heartbeat, a100_stats, &heartbeat).ok());
  v1::Node spare;
  spare.set_name("spare");
  AddGpu(&spare, "GPU-spare", "L4", 0);
  ASSERT_TRUE(t.Register(spare).ok());
  v1::SetNodeSchedulableRequest cordon;
  cordon.set_name("spare");
  v1::Node cordoned;
  ASSERT_TRUE(t.Call(&Stub::SetNodeSchedulable, cordon, &cordoned).ok());

  // A queued request that waits for the whole test: the only L4 is on the
  // cordoned node.
  v1::AllocateRequest waiting = AllocateReq("waiting", "L4");
  waiting.set_queue(true);
  waiting.set_tenant("team-queue");
  v1::Allocation pending;
  ASSERT_TRUE(t.Allocate(waiting, &pending).ok());
  ASSERT_EQ(pending.state(), v1::PENDING);

  v1::AllocateRequest ok1 = AllocateReq("ok-1", "T4", 2);
  ok1.set_tenant("team-a");
  v1::AllocateRequest ok2 = AllocateReq("ok-2", "A100", 2, "1g.5gb");
  ok2.set_tenant("team-b");
  v1::AllocateRequest short_lease = AllocateReq("short", "T4", 1);
  short_lease.mutable_lease()->set_nanos(200'000'000);
  v1::Allocation a;
  ASSERT_TRUE(t.Allocate(ok1, &a).ok());
  ASSERT_TRUE(t.Allocate(ok2).ok());
  ASSERT_TRUE(t.Allocate(short_lease).ok());
  EXPECT_EQ(t.Allocate(AllocateReq("tpu", "V5P", 1, "2x2x2")).error_code(),
            grpc::StatusCode::OK);
  EXPECT_EQ(t.Allocate(AllocateReq("none", "L4")).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(t.Allocate(AllocateReq("bad", "nvidia-z9000")).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  v1::ReleaseRequest release;
  release.set_allocation_id(a.id());
  v1::Allocation released;
  ASSERT_TRUE(t.Call(&Stub::Release, release, &released).ok());
  v1::RemoveNodeRequest remove;
  remove.set_name("tpu-host-b");
  remove.set_force(true);
  v1::RemoveNodeResponse removed;
  ASSERT_TRUE(t.Call(&Stub::RemoveNode, remove, &removed).ok());
  // The short lease expires and is swept. Once GetAllocation shows it EXPIRED
  // the expiry is committed, and its metrics were counted before that.
  v1::GetAllocationRequest get;
  get.set_request_id("short");
  v1::Allocation got;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  do {
    ASSERT_LT(absl::Now(), deadline) << "the 200ms lease did not expire";
    absl::SleepFor(absl::Milliseconds(20));
    ASSERT_TRUE(t.Call(&Stub::GetAllocation, get, &got).ok());
  } while (got.state() != v1::EXPIRED);
}

TEST_F(E2eTest, MetricsHaveTheContractFamiliesAndFollowAllocations) {
  ASSERT_TRUE(StartServer({"--sweep_interval=50ms", "--metrics_per_device"}));
  Scrape empty = ScrapeMetrics(*server_);
  EXPECT_EQ(empty.at("accelsched_allocate_requests_total{result=\"ok\"}"), 0);
  ASSERT_NO_FATAL_FAILURE(DriveTraffic(*this));
  Scrape s = ScrapeMetrics(*server_);
  const std::pair<const char*, const char*> kTypes[] = {
      {"accelsched_devices", "gauge"},
      {"accelsched_allocations_active", "gauge"},
      {"accelsched_allocate_requests_total", "counter"},
      {"accelsched_allocate_duration_seconds", "histogram"},
      {"accelsched_releases_total", "counter"},
      {"accelsched_nodes", "gauge"},
      {"accelsched_grpc_requests_total", "counter"},
      {"accelsched_grpc_request_duration_seconds", "histogram"},
      {"accelsched_lease_expirations_total", "counter"},
      {"accelsched_sqlite_commit_duration_seconds", "histogram"},
      {"accelsched_group_commit_batch_size", "histogram"},
      {"accelsched_watchers", "gauge"},
      {"accelsched_build_info", "gauge"},
      {"accelsched_allocations_pending", "gauge"},
      {"accelsched_queue_wait_seconds", "histogram"},
      {"accelsched_tenant_dominant_share", "gauge"},
      {"accelsched_node_device_utilization_ratio", "gauge"},
      {"accelsched_node_device_memory_used_bytes", "gauge"},
      {"accelsched_node_device_power_watts", "gauge"},
      {"accelsched_node_device_max_temperature_celsius", "gauge"},
      {"accelsched_node_devices_reporting", "gauge"},
      {"accelsched_device_utilization_ratio", "gauge"},
      {"accelsched_device_memory_used_bytes", "gauge"},
      {"accelsched_device_temperature_celsius", "gauge"},
      {"accelsched_device_power_watts", "gauge"},
      {"accelsched_gpu_share_milli", "gauge"},
      {"accelsched_fragmentation_ratio", "gauge"},
  };
  for (const auto& [family, type] : kTypes) {
    EXPECT_EQ(s.types[family], type) << family;
  }
  // ok: the four in DriveTraffic and the queued one.
  EXPECT_EQ(s.at("accelsched_allocate_requests_total{result=\"ok\"}"), 5);
  EXPECT_EQ(s.at("accelsched_allocate_requests_total{result=\"exhausted\"}"),
            1);
  EXPECT_EQ(s.at("accelsched_allocate_requests_total{result=\"invalid\"}"), 1);
  EXPECT_EQ(s.at("accelsched_allocate_requests_total{result=\"error\"}"), 0);
  EXPECT_EQ(s.at("accelsched_allocate_duration_seconds_count"), 7);
  EXPECT_EQ(s.at("accelsched_allocations_pending{tenant=\"team-queue\"}"), 1);
  EXPECT_EQ(s.at("accelsched_queue_wait_seconds_count"), 0);
  EXPECT_EQ(s.at("accelsched_releases_total{reason=\"released\"}"), 1);
  EXPECT_EQ(s.at("accelsched_releases_total{reason=\"expired\"}"), 1);
  EXPECT_EQ(s.at("accelsched_releases_total{reason=\"node_removed\"}"), 1);
  EXPECT_EQ(s.at("accelsched_lease_expirations_total"), 1);
  EXPECT_EQ(s.at("accelsched_nodes{schedulable=\"true\"}"), 3);
  EXPECT_EQ(s.at("accelsched_nodes{schedulable=\"false\"}"), 1);
  EXPECT_EQ(s.at("accelsched_allocations_active{tenant=\"team-b\"}"), 1);
  // Device readings: per node and model (whole devices), and per device.
  EXPECT_DOUBLE_EQ(s.at("accelsched_node_device_utilization_ratio{model="
                        "\"nvidia-tesla-t4\",node=\"t4-node\"}"),
                   0.5);
  EXPECT_EQ(s.at("accelsched_node_devices_reporting{model=\"nvidia-tesla-t4\","
                 "node=\"t4-node\"}"),
            4);
  EXPECT_EQ(s.at("accelsched_node_device_memory_used_bytes{model=\"nvidia-"
                 "tesla-a100\",node=\"gpu-node-1\"}"),
            3.0 * (1 << 30));
  EXPECT_EQ(s.at("accelsched_node_device_max_temperature_celsius{model="
                 "\"nvidia-tesla-t4\",node=\"t4-node\"}"),
            43);
  EXPECT_EQ(s.at("accelsched_device_memory_used_bytes{device=\"MIG-0002-0\","
                 "model=\"nvidia-tesla-a100\",node=\"gpu-node-1\",partition="
                 "\"1g.5gb\"}"),
            1 << 30);
  const std::string t4 =
      "device_class=\"NVIDIA_GPU\",model=\"nvidia-tesla-t4\",partition=\"\"";
  EXPECT_EQ(s.at("accelsched_devices{" + t4 + ",state=\"free\"}"), 4);
  const std::string mig =
      "device_class=\"NVIDIA_GPU\",model=\"nvidia-tesla-a100\",partition=\"1g."
      "5gb\"";
  EXPECT_EQ(s.at("accelsched_devices{" + mig + ",state=\"allocated\"}"), 2);
  EXPECT_EQ(s.at("accelsched_devices{" + mig + ",state=\"free\"}"), 5);
  // The v5p slice lost a host: its units are neither free nor allocated.
  EXPECT_EQ(s.at("accelsched_devices{device_class=\"GOOGLE_TPU\",model=\"tpu-"
                 "v5p-slice\","
                 "partition=\"2x2x2\",state=\"unhealthy\"}"),
            1);
  EXPECT_EQ(
      s.at("accelsched_grpc_requests_total{code=\"RESOURCE_EXHAUSTED\",method="
           "\"Allocate\"}"),
      1);
  EXPECT_GE(s.at("accelsched_group_commit_batch_size_count"), 1);

  std::string promtool;
  EXPECT_EQ(Promtool(s.text, dir_.File(""), &promtool), 0) << promtool;
  EXPECT_EQ(promtool, "");

  // Catalog gauges are right straight after a restart, before any traffic.
  std::map<std::string, double> catalog;
  for (const auto& [series, value] : s.samples) {
    if (series.starts_with("accelsched_devices{") ||
        series.starts_with("accelsched_nodes{") ||
        series.starts_with("accelsched_allocations_active{")) {
      catalog[series] = value;
    }
  }
  server_->Stop(SIGTERM);
  ASSERT_TRUE(StartServer());
  Scrape after = ScrapeMetrics(*server_);
  for (const auto& [series, value] : catalog) {
    EXPECT_EQ(after.at(series), value) << series;
  }
}

// The share gauges follow shares, and stand at zero for a model without.
// Shares in /metrics and GetQueue: the GPUs' compute held and free, and a
// tenant's quota counting a share as its fraction of a GPU.
TEST_F(E2eTest, ShareMetricsFollowShares) {
  const std::string tenants = dir_.File("tenants.textproto");
  std::ofstream(tenants) << R"pb(
    tenants {
      name: "team-share"
      quotas { model: "T4" nominal_milli: 500 }
    }
  )pb";
  ASSERT_TRUE(StartServer({"--tenants=" + tenants}));
  v1::Node node;
  node.set_name("share-node");
  AddGpu(&node, "GPU-S0", "T4", 0)->set_sharing(v1::MPS);
  AddGpu(&node, "GPU-S1", "T4", 1)->set_sharing(v1::TIME_SLICING);
  AddGpu(&node, "GPU-A", "A100", 2);
  ASSERT_TRUE(Register(node).ok());
  v1::AllocateRequest share = AllocateReq("share-1", "T4");
  share.mutable_share()->set_compute_milli(300);
  share.set_tenant("team-share");
  v1::Allocation a;
  ASSERT_TRUE(Allocate(share, &a).ok());
  // 0.3 of the tenant's 0.5 T4s used: 0.3 more is over its quota.
  v1::AllocateRequest over = share;
  over.set_request_id("share-2");
  grpc::Status refused = Allocate(over);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(),
              testing::HasSubstr("quota: tenant team-share at 0.3/0.5 "
                                 "nvidia-tesla-t4 devices, asks 0.3 more"));
  v1::GetQueueRequest queue_req;
  queue_req.set_tenant("team-share");
  v1::GetQueueResponse queue;
  ASSERT_TRUE(Call(&Stub::GetQueue, queue_req, &queue).ok());
  ASSERT_EQ(queue.tenants_size(), 1);
  ASSERT_EQ(queue.tenants(0).usage_size(), 1);
  EXPECT_EQ(queue.tenants(0).usage(0).used_milli(), 300);
  EXPECT_EQ(queue.tenants(0).usage(0).nominal_quota_milli(), 500);
  EXPECT_EQ(queue.tenants(0).usage(0).used(), 0);  // whole units, rounded down
  EXPECT_DOUBLE_EQ(queue.tenants(0).dominant_share(), 0.15);  // 0.3 of 2 T4s
  const std::string quota =
      "accelsched_tenant_quota_units{tenant=\"team-share\",device_class="
      "\"NVIDIA_GPU\",model=\"nvidia-tesla-t4\",partition=\"\",kind=";
  const std::string t4 = "accelsched_gpu_share_milli{model=\"nvidia-tesla-t4\"";
  const std::string a100 =
      "accelsched_gpu_share_milli{model=\"nvidia-tesla-a100\"";
  Scrape s = ScrapeMetrics(*server_);
  EXPECT_EQ(s.at(t4 + ",state=\"allocated\"}"), 300);
  EXPECT_EQ(s.at(t4 + ",state=\"free\"}"), 1700);
  EXPECT_EQ(s.at(a100 + ",state=\"allocated\"}"), 0);
  EXPECT_EQ(s.at(a100 + ",state=\"free\"}"), 0);
  EXPECT_DOUBLE_EQ(s.at(quota + "\"used\"}"), 0.3);
  EXPECT_DOUBLE_EQ(s.at(quota + "\"nominal\"}"), 0.5);
  v1::ReleaseRequest release;
  release.set_allocation_id(a.id());
  ASSERT_TRUE(Call(&Stub::Release, release, &a).ok());
  s = ScrapeMetrics(*server_);
  EXPECT_EQ(s.at(t4 + ",state=\"allocated\"}"), 0);
  EXPECT_EQ(s.at(t4 + ",state=\"free\"}"), 2000);
  EXPECT_DOUBLE_EQ(s.at(quota + "\"used\"}"), 0);
}

// Issue 30 end to end: the real server on a real SQLite file places pods so
// that their CPU and memory fit the node, shows it in GetNode and /metrics,
// and keeps it across kill -9.
// The default --packing=fragmentation through the real server: the ratio
// on /metrics and the candidates in Explain.
TEST_F(E2eTest, FragmentationRatioAndExplainScoresFollowTheMix) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> bad =
      ServerProcess::Start(dir_.File("bad.db"), {"--packing=tightest"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("--packing: unknown policy \"tightest\""));
  ASSERT_TRUE(StartServer());
  v1::Node node;
  node.set_name("h-node");
  for (int i = 0; i < 4; ++i)
    AddGpu(&node, absl::StrCat("GPU-h-", i), "H100", i);
  ASSERT_TRUE(Register(node).ok());
  const std::string ratio =
      "accelsched_fragmentation_ratio{model=\"nvidia-h100\"}";
  EXPECT_EQ(ScrapeMetrics(*server_).at(ratio), 0);  // no request seen yet
  v1::Allocation three;
  ASSERT_TRUE(Allocate(AllocateReq("three", "H100", 3), &three).ok());
  // The one H100 left cannot take the only shape asked for: 3 GPUs.
  EXPECT_EQ(ScrapeMetrics(*server_).at(ratio), 1);

  v1::ExplainResponse explain;
  ASSERT_TRUE(
      Call(&Stub::Explain, AllocateReq("one", "H100", 1), &explain).ok());
  ASSERT_TRUE(explain.feasible());
  ASSERT_EQ(explain.scores_size(), 1);
  EXPECT_EQ(explain.scores(0).node(), "h-node");
  // It takes the stranded GPU: fragmentation falls by 1 x (3's weight).
  EXPECT_LT(explain.scores(0).score(), 0);
  EXPECT_THAT(explain.scores(0).detail(),
              HasSubstr("nvidia-h100: strands 0.00 of 0 free units (was"));
  // The duration the lease term weighed: the server's default lease here,
  // the request's expected_duration when it gives one (which the
  // allocation then shows).
  EXPECT_THAT(explain.scores(0).detail(),
              EndsWith("; expected duration 1h (the lease)"));
  v1::AllocateRequest timed = AllocateReq("one", "H100", 1);
  timed.mutable_expected_duration()->set_seconds(5400);
  ASSERT_TRUE(Call(&Stub::Explain, timed, &explain).ok());
  ASSERT_EQ(explain.scores_size(), 1);
  EXPECT_THAT(explain.scores(0).detail(),
              EndsWith("; expected duration 1h30m (given)"));
  v1::Allocation one;
  ASSERT_TRUE(Allocate(timed, &one).ok());
  EXPECT_EQ(one.expected_duration().seconds(), 5400);
  EXPECT_FALSE(three.has_expected_duration());
  timed.mutable_expected_duration()->set_seconds(-1);
  timed.set_request_id("negative");
  const grpc::Status refused = Allocate(timed, &one);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.error_message(), HasSubstr("expected_duration"));

  v1::ReleaseRequest release;
  release.set_allocation_id(three.id());
  ASSERT_TRUE(Call(&Stub::Release, release, &three).ok());
  EXPECT_EQ(ScrapeMetrics(*server_).at(ratio), 0);
}

TEST_F(E2eTest, PodResourcesFitTheNodeAcrossKillNine) {
  ASSERT_TRUE(StartServer());
  auto node = [](const std::string& name, int gpus, int64_t cpu_milli) {
    v1::Node n;
    n.set_name(name);
    for (int i = 0; i < gpus; ++i) {
      AddGpu(&n, absl::StrCat(name, "-GPU-", i), "T4", i);
    }
    n.mutable_allocatable()->set_cpu_milli(cpu_milli);
    n.mutable_allocatable()->set_memory_bytes(int64_t{64} << 30);
    return n;
  };
  ASSERT_TRUE(Register(node("small", 4, 8000)).ok());
  ASSERT_TRUE(Register(node("large", 8, 32000)).ok());
  auto want = [](const std::string& id, int64_t cpu_milli) {
    v1::AllocateRequest r = AllocateReq(id, "T4", 1);
    r.mutable_pod_resources()->set_cpu_milli(cpu_milli);
    r.mutable_pod_resources()->set_memory_bytes(int64_t{4} << 30);
    return r;
  };
  // Every pod pinned anywhere must fit: 6 pods of 3000m on 8000m + 32000m.
  int64_t on_small = 0;
  for (int i = 0; i < 6; ++i) {
    v1::Allocation a;
    ASSERT_TRUE(Allocate(want(absl::StrCat("pod-", i), 3000), &a).ok()) << i;
    EXPECT_EQ(a.pod_resources().pods(), 1);
    if (a.node() == "small") on_small += 3000;
  }
  EXPECT_LE(on_small, 8000);
  auto available = [&](const std::string& name) {
    v1::GetNodeRequest req;
    req.set_name(name);
    v1::Node n;
    grpc::Status s = Call(&v1::AcceleratorScheduler::Stub::GetNode, req, &n);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return n;
  };
  const int64_t small_free = available("small").available().cpu_milli();
  EXPECT_EQ(small_free, 8000 - on_small);
  EXPECT_GE(small_free, 0);
  Scrape before = ScrapeMetrics(*server_);
  EXPECT_EQ(before.types["accelsched_node_cpu_milli"], "gauge");
  EXPECT_EQ(
      before.at("accelsched_node_cpu_milli{node=\"small\",state=\"free\"}"),
      small_free);
  EXPECT_EQ(
      before.at(
          "accelsched_node_cpu_milli{node=\"large\",state=\"allocated\"}"),
      18000 - on_small);

  ASSERT_EQ(server_->Stop(SIGKILL), 128 + SIGKILL);
  ASSERT_TRUE(StartServer());
  EXPECT_EQ(available("small").available().cpu_milli(), small_free);
  Scrape after = ScrapeMetrics(*server_);
  EXPECT_EQ(
      after.at(
          "accelsched_node_memory_bytes{node=\"large\",state=\"allocatable\"}"),
      static_cast<double>(int64_t{64} << 30));
  // Both nodes have free T4s and 22000m are left in all, but no node has
  // 21000m free.
  v1::Allocation big;
  grpc::Status refused = Allocate(want("big", 21000), &big);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  // A lowered allocatable keeps what is held and says so.
  v1::Node lowered;
  ASSERT_TRUE(Register(node("large", 8, 1000), &lowered).ok());
  EXPECT_LT(lowered.available().cpu_milli(), 0);
  EXPECT_THAT(lowered.overcommitted(),
              testing::HasSubstr("cpu_milli of 1000 allocatable"));
  v1::AllocateRequest bad = want("bad", -1);
  grpc::Status invalid = Allocate(bad);
  EXPECT_EQ(invalid.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(invalid.error_message(),
              testing::HasSubstr("pod_resources.cpu_milli"));
}

TEST_F(E2eTest, PrometheusEvaluatesEveryDashboardQuery) {
  const std::string tenants = dir_.File("tenants.textproto");
  std::ofstream(tenants) << R"pb(
    tenants {
      name: "team-load"
      quotas { model: "A100" partition: "1g.5gb" nominal: 100 }
    }
  )pb";
  ASSERT_TRUE(StartServer({"--sweep_interval=50ms", "--metrics_per_device",
                           "--tenants=" + tenants, "--preemption_grace=0s"}));
  ASSERT_NO_FATAL_FAILURE(DriveTraffic(*this));

  const int prom_port = FreePort();
  const std::string config = dir_.File("prometheus.yml");
  std::ofstream(config)
      << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
      << "scrape_configs:\n  - job_name: accelsched\n"
      << "    static_configs:\n      - targets: ['127.0.0.1:"
      << server_->metrics_port() << "']\n";
  auto prometheus = ServerProcess::StartProgram(
      "/usr/bin/prometheus",
      {"--config.file=" + config, "--storage.tsdb.path=" + dir_.File("tsdb"),
       absl::StrCat("--web.listen-address=127.0.0.1:", prom_port)},
      "Server is ready to receive web requests.");
  ASSERT_TRUE(prometheus.ok()) << prometheus.status();

  // Steady traffic while Prometheus scrapes, so that rates and quantiles have
  // data.
  std::atomic<bool> stop{false};
  std::thread load;
  // Joined on every way out of the test: an ASSERT below returns early, and a
  // joinable thread destroyed would end the process in std::terminate.
  absl::Cleanup stop_load = [&] {
    stop = true;
    if (load.joinable()) load.join();
  };
  load = std::thread([&] {
    for (int i = 0; !stop.load(); ++i) {
      v1::Allocation a;
      v1::AllocateRequest req =
          AllocateReq(absl::StrCat("load-", i), "A100", 1, "1g.5gb");
      req.set_tenant("team-load");
      if (Allocate(req, &a).ok()) {
        v1::ReleaseRequest release;
        release.set_allocation_id(a.id());
        v1::Allocation released;
        Call(&Stub::Release, release, &released);
      }
      Allocate(AllocateReq(absl::StrCat("miss-", i), "L4"));
      // Queued: a T4 that a request of higher priority then preempts (no
      // grace), which the next sweep admits.
      v1::ReleaseRequest done;
      done.set_request_id(absl::StrCat("urgent-", i - 1));
      v1::Allocation ended;
      Call(&Stub::Release, done, &ended);
      v1::AllocateRequest victim =
          AllocateReq(absl::StrCat("victim-", i), "T4");
      victim.set_queue(true);
      victim.set_tenant("team-queue");
      Allocate(victim);
      v1::AllocateRequest urgent =
          AllocateReq(absl::StrCat("urgent-", i), "T4", 2);
      urgent.set_queue(true);
      urgent.set_priority(5);
      urgent.set_tenant("team-urgent");
      Allocate(urgent);
      v1::AllocateRequest expiring = AllocateReq(absl::StrCat("exp-", i), "T4");
      expiring.mutable_lease()->set_nanos(100'000'000);
      Allocate(expiring);
      absl::SleepFor(absl::Milliseconds(50));
    }
  });

  auto query = [&](const std::string& expr, google::protobuf::Struct* out) {
    absl::StatusOr<std::string> body =
        HttpGet(prom_port, "/api/v1/query?query=" + UrlEncode(expr));
    if (!body.ok()) return body.status();
    if (!google::protobuf::util::JsonStringToMessage(*body, out).ok()) {
      return absl::DataLossError("not JSON: " + *body);
    }
    return absl::OkStatus();
  };
  // Wait for at least 6 scrapes.
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  for (;;) {
    google::protobuf::Struct r;
    if (query("count_over_time(up{job=\"accelsched\"}[1m])", &r).ok()) {
      const auto& result =
          r.fields().at("data").struct_value().fields().at("result");
      if (result.list_value().values_size() > 0 &&
          std::stod(result.list_value()
                        .values(0)
                        .struct_value()
                        .fields()
                        .at("value")
                        .list_value()
                        .values(1)
                        .string_value()) >= 6) {
        break;
      }
    }
    ASSERT_LT(absl::Now(), deadline) << "Prometheus did not scrape accelsched";
    absl::SleepFor(absl::Milliseconds(500));
  }

  google::protobuf::Struct dashboard;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(
                  Slurp(ACCELSCHED_DASHBOARD_PATH), &dashboard)
                  .ok());
  int queries = 0;
  for (const auto& panel :
       dashboard.fields().at("panels").list_value().values()) {
    const auto& fields = panel.struct_value().fields();
    for (const auto& target : fields.at("targets").list_value().values()) {
      const std::string expr = absl::StrReplaceAll(
          target.struct_value().fields().at("expr").string_value(),
          {{"$__rate_interval", "1m"}});
      google::protobuf::Struct r;
      absl::Status s = query(expr, &r);
      ASSERT_TRUE(s.ok()) << expr << ": " << s;
      EXPECT_EQ(r.fields().at("status").string_value(), "success") << expr;
      const int series = r.fields()
                             .at("data")
                             .struct_value()
                             .fields()
                             .at("result")
                             .list_value()
                             .values_size();
      EXPECT_GT(series, 0) << fields.at("title").string_value() << ": " << expr
                           << " returned no data";
      std::printf("dashboard query (%d series): %s\n", series, expr.c_str());
      ++queries;
    }
  }
  EXPECT_GE(queries, 10);
  std::move(stop_load).Invoke();
  (*prometheus)->Stop(SIGTERM);
}

}  // namespace
}  // namespace accelsched
