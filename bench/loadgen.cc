// loadgen: drives a real accelschedd on a real SQLite file over gRPC and
// compares it with the floor of the same server: Health/Check from the same
// callers.
//
//   build/bench/loadgen --seconds=5 --callers=1,8,64
//   build/bench/loadgen --startup_devices=100000      # start-up time and
//   memory
//
// By default it starts its own server on a fresh database (synchronous=FULL);
// --target connects to a running one instead (it must be empty of allocations).
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "accelsched/v1/accelsched.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/http_client.h"
#include "tests/server_process.h"

ABSL_FLAG(double, seconds, 5, "duration of each measurement");
ABSL_FLAG(std::string, callers, "1,8,64",
          "concurrent callers, comma-separated");
ABSL_FLAG(std::string, target, "",
          "host:port of a running server (default: start one)");
ABSL_FLAG(int, metrics_port, 0, "its metrics port, with --target");
ABSL_FLAG(std::string, dir, "/tmp/accelsched-loadgen",
          "where the started server's db goes");
ABSL_FLAG(
    bool, compare_batching, true,
    "also run the widest load against a server with --max_commit_batch=1");
ABSL_FLAG(
    int, startup_devices, 0,
    "instead: fill a database with this many devices, restart, and report the "
    "time to serve and the resident memory");

namespace accelsched {
namespace {

using Stub = v1::AcceleratorScheduler::Stub;

struct Result {
  int64_t calls = 0;
  double seconds = 0;
  std::vector<double> latencies_us;  // of the calls that count for latency

  double per_second() const { return static_cast<double>(calls) / seconds; }
  double quantile(double q) {
    if (latencies_us.empty()) return 0;
    std::sort(latencies_us.begin(), latencies_us.end());
    return latencies_us[std::min(latencies_us.size() - 1,
                                 static_cast<size_t>(q * latencies_us.size()))];
  }
};

std::vector<std::shared_ptr<grpc::Channel>> Channels(const std::string& target,
                                                     int n) {
  std::vector<std::shared_ptr<grpc::Channel>> out;
  for (int i = 0; i < n; ++i) {
    grpc::ChannelArguments args;
    args.SetInt("loadgen.channel",
                i);  // distinct arguments: distinct connections
    out.push_back(grpc::CreateCustomChannel(
        target, grpc::InsecureChannelCredentials(), args));
  }
  return out;
}

// Runs `callers` threads for `seconds`; `body(thread, i, latencies)` makes one
// round of calls and returns how many it made.
template <typename Body>
Result Run(int callers, double seconds, Body body) {
  std::atomic<bool> stop{false};
  std::vector<Result> per(callers);
  std::vector<std::thread> threads;
  const absl::Time start = absl::Now();
  for (int t = 0; t < callers; ++t) {
    threads.emplace_back([&, t] {
      for (int64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        per[t].calls += body(t, i, per[t].latencies_us);
      }
    });
  }
  absl::SleepFor(absl::Seconds(seconds));
  stop = true;
  for (auto& th : threads) th.join();
  Result all;
  all.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  for (Result& r : per) {
    all.calls += r.calls;
    all.latencies_us.insert(all.latencies_us.end(), r.latencies_us.begin(),
                            r.latencies_us.end());
  }
  return all;
}

double Micros(absl::Time since) {
  return absl::ToDoubleMicroseconds(absl::Now() - since);
}

// Registers `nodes` nodes of 8 T4s each (with 16 threads).
void RegisterNodes(const std::string& target, int nodes) {
  auto channels = Channels(target, 4);
  std::atomic<int> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      auto stub =
          v1::AcceleratorScheduler::NewStub(channels[t % channels.size()]);
      for (int n; (n = next++) < nodes;) {
        v1::RegisterNodeRequest req;
        v1::Node* node = req.mutable_node();
        node->set_name(absl::StrCat("node-", n));
        for (int g = 0; g < 8; ++g) {
          v1::Device* d = node->add_devices();
          d->set_id(absl::StrCat("GPU-", n, "-", g));
          d->set_model("NVIDIA T4");
          d->set_index(g);
          d->set_healthy(true);
        }
        grpc::ClientContext ctx;
        v1::Node resp;
        grpc::Status s = stub->RegisterNode(&ctx, req, &resp);
        if (!s.ok())
          std::fprintf(stderr, "register: %s\n", s.error_message().c_str());
      }
    });
  }
  for (auto& th : threads) th.join();
}

struct CommitCounters {
  double commits = 0, writes = 0;
};

CommitCounters ReadCommitCounters(int metrics_port) {
  CommitCounters c;
  absl::StatusOr<std::string> body = HttpGet(metrics_port, "/metrics");
  if (!body.ok()) return c;
  c.commits = SampleValue(*body, "accelsched_group_commit_batch_size_count");
  c.writes = SampleValue(*body, "accelsched_group_commit_batch_size_sum");
  return c;
}

struct Measured {
  Result floor, work;
  CommitCounters commits;
};

Measured Measure(const std::string& target, int metrics_port, int callers,
                 double seconds, const std::string& tag) {
  auto channels = Channels(target, std::min(callers, 8));
  std::vector<std::unique_ptr<Stub>> stubs;
  std::vector<std::unique_ptr<grpc::health::v1::Health::Stub>> health;
  for (int t = 0; t < callers; ++t) {
    stubs.push_back(
        v1::AcceleratorScheduler::NewStub(channels[t % channels.size()]));
    health.push_back(
        grpc::health::v1::Health::NewStub(channels[t % channels.size()]));
  }
  Measured m;
  m.floor =
      Run(callers, seconds, [&](int t, int64_t, std::vector<double>& lat) {
        grpc::ClientContext ctx;
        grpc::health::v1::HealthCheckRequest req;
        grpc::health::v1::HealthCheckResponse resp;
        const absl::Time start = absl::Now();
        grpc::Status s = health[t]->Check(&ctx, req, &resp);
        lat.push_back(Micros(start));
        return s.ok() ? 1 : 0;
      });
  const CommitCounters before = ReadCommitCounters(metrics_port);
  // Allocate then Release; each is one call. Latency is Allocate's.
  m.work =
      Run(callers, seconds, [&](int t, int64_t i, std::vector<double>& lat) {
        v1::AllocateRequest req;
        req.set_request_id(absl::StrCat(tag, "-", t, "-", i));
        req.mutable_accelerator()->set_device("nvidia-tesla-t4");
        v1::Allocation a;
        grpc::ClientContext ctx;
        const absl::Time start = absl::Now();
        grpc::Status s = stubs[t]->Allocate(&ctx, req, &a);
        lat.push_back(Micros(start));
        if (!s.ok()) {
          std::fprintf(stderr, "allocate: %s\n", s.error_message().c_str());
          return 0;
        }
        v1::ReleaseRequest rel;
        rel.set_allocation_id(a.id());
        v1::Allocation released;
        grpc::ClientContext ctx2;
        return stubs[t]->Release(&ctx2, rel, &released).ok() ? 2 : 1;
      });
  const CommitCounters after = ReadCommitCounters(metrics_port);
  m.commits = {after.commits - before.commits, after.writes - before.writes};
  return m;
}

std::unique_ptr<ServerProcess> StartServer(
    const std::string& db, const std::vector<std::string>& flags) {
  std::filesystem::remove(db);
  std::filesystem::remove(db + "-wal");
  std::filesystem::remove(db + "-shm");
  auto server = ServerProcess::Start(db, flags);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string(server.status().message()).c_str());
    std::exit(1);
  }
  return std::move(*server);
}

int64_t ResidentKiB(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

int Startup(int devices) {
  const std::string dir = absl::GetFlag(FLAGS_dir);
  std::filesystem::create_directories(dir);
  const std::string db = dir + "/startup.db";
  auto server = StartServer(db, {});
  const int nodes = (devices + 7) / 8;
  const absl::Time fill = absl::Now();
  RegisterNodes(server->grpc_address(), nodes);
  std::printf("filled %d nodes x 8 devices in %.1f s\n", nodes,
              absl::ToDoubleSeconds(absl::Now() - fill));
  server->Stop(SIGTERM);
  const absl::Time start = absl::Now();
  auto restarted = ServerProcess::Start(db);
  if (!restarted.ok()) return 1;
  const double ready = absl::ToDoubleSeconds(absl::Now() - start);
  auto channel = grpc::CreateChannel((*restarted)->grpc_address(),
                                     grpc::InsecureChannelCredentials());
  auto stub = v1::AcceleratorScheduler::NewStub(channel);
  v1::GetCapacityResponse capacity;
  grpc::ClientContext ctx;
  grpc::Status s = stub->GetCapacity(&ctx, v1::GetCapacityRequest(), &capacity);
  const double serving = absl::ToDoubleSeconds(absl::Now() - start);
  std::printf(
      "start-up with %lld devices: ready line after %.3f s, first GetCapacity "
      "answered after %.3f s (%s, %lld units); resident memory %.1f MiB\n",
      static_cast<long long>(nodes) * 8, ready, serving,
      s.ok() ? "ok" : "failed",
      capacity.entries_size()
          ? static_cast<long long>(capacity.entries(0).total())
          : 0LL,
      ResidentKiB((*restarted)->pid()) / 1024.0);
  return s.ok() ? 0 : 1;
}

void Print(const char* what, Result& r) {
  std::printf(
      "  %-34s %9.0f calls/s  p50 %7.0f us  p99 %7.0f us  p999 %7.0f us\n",
      what, r.per_second(), r.quantile(0.5), r.quantile(0.99),
      r.quantile(0.999));
}

int Main() {
  if (absl::GetFlag(FLAGS_startup_devices) > 0) {
    return Startup(absl::GetFlag(FLAGS_startup_devices));
  }
  std::vector<int> callers;
  for (absl::string_view c :
       absl::StrSplit(absl::GetFlag(FLAGS_callers), ',')) {
    int n = 0;
    if (absl::SimpleAtoi(c, &n) && n > 0) callers.push_back(n);
  }
  const double seconds = absl::GetFlag(FLAGS_seconds);
  std::unique_ptr<ServerProcess> server;
  std::string target = absl::GetFlag(FLAGS_target);
  int metrics_port = absl::GetFlag(FLAGS_metrics_port);
  const std::string dir = absl::GetFlag(FLAGS_dir);
  std::filesystem::create_directories(dir);
  if (target.empty()) {
    server = StartServer(dir + "/loadgen.db", {});
    target = server->grpc_address();
    metrics_port = server->metrics_port();
  }
  // 64 nodes x 8 T4: every caller always finds a free device.
  RegisterNodes(target, 64);
  std::printf(
      "accelschedd at %s, SQLite synchronous=FULL, %.1f s per measurement\n",
      target.c_str(), seconds);
  for (int n : callers) {
    Measured m =
        Measure(target, metrics_port, n, seconds, absl::StrCat("c", n));
    std::printf("%d caller%s:\n", n, n == 1 ? "" : "s");
    Print("Health/Check (floor)", m.floor);
    Print("Allocate+Release (latency: Alloc.)", m.work);
    std::printf(
        "  ratio: throughput %.2f of the floor; Allocate p99 %.2fx the "
        "floor's\n",
        m.work.per_second() / m.floor.per_second(),
        m.work.quantile(0.99) / std::max(1.0, m.floor.quantile(0.99)));
    if (m.commits.commits > 0) {
      std::printf("  group commit: %.0f commits/s, %.1f writes per commit\n",
                  m.commits.commits / m.work.seconds,
                  m.commits.writes / m.commits.commits);
    }
  }
  if (server != nullptr && absl::GetFlag(FLAGS_compare_batching) &&
      !callers.empty()) {
    server->Stop(SIGTERM);
    auto baseline =
        StartServer(dir + "/loadgen-nobatch.db", {"--max_commit_batch=1"});
    RegisterNodes(baseline->grpc_address(), 64);
    const int n = callers.back();
    Measured m = Measure(baseline->grpc_address(), baseline->metrics_port(), n,
                         seconds, "nobatch");
    std::printf("%d callers, one commit per call (--max_commit_batch=1):\n", n);
    Print("Allocate+Release (latency: Alloc.)", m.work);
    std::printf("  %.0f commits/s, %.1f writes per commit\n",
                m.commits.commits / m.work.seconds,
                m.commits.writes / m.commits.commits);
  }
  return 0;
}

}  // namespace
}  // namespace accelsched

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return accelsched::Main();
}
