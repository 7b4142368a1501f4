// The node agent's steady-state cost: resident memory and CPU of the real
// accelsched-agent on 8 GPUs (4 whole H100s and 4 A100s in MIG mode with
// seven 1g.5gb slices each, from the fake libnvidia-ml), reporting to the real
// server. Two runs of one agent each:
//   fast: --interval=--fast_interval for --seconds: the CPU cost of one
//         discovery pass and its RegisterNode/Heartbeat round, per pass;
//   steady: --interval=10s (the default) for --steady_seconds: the CPU share
//         of one core actually used, idle time included.
// Prints each figure and its ratio to the target (20 MB resident, 1% of one
// core at 10 s). Not a pass/fail test: CI runs it briefly as a smoke test.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "tests/support/http_client.h"
#include "tests/support/server_process.h"

ABSL_FLAG(double, seconds, 10, "length of the fast run");
ABSL_FLAG(double, fast_interval_ms, 100, "the fast run's --interval");
ABSL_FLAG(double, steady_seconds, 60,
          "length of the run at the default 10 s interval (0: skip it)");
ABSL_FLAG(std::string, dir, "/tmp/accelsched-agent-footprint",
          "scratch directory (databases, scenario)");

namespace accelsched {
namespace {

constexpr double kRssTargetMb = 20;
constexpr double kCpuTargetPercent = 1;

std::string Scenario() {
  std::string s;
  for (int i = 0; i < 4; ++i) {
    absl::StrAppend(&s, "gpu uuid=GPU-h100-", i,
                    " name=\"NVIDIA H100 80GB HBM3\" memory_mib=81559 "
                    "used_mib=4096 util=",
                    20 * i, " temp=45 power_mw=300000\n");
  }
  for (int i = 0; i < 4; ++i) {
    absl::StrAppend(&s, "gpu uuid=GPU-a100-", i,
                    " name=\"NVIDIA A100-SXM4-40GB\" memory_mib=40960 mig=1 "
                    "temp=40 power_mw=150000\n");
    for (int k = 0; k < 7; ++k) {
      absl::StrAppend(&s, "mig gpu=", 4 + i, " uuid=MIG-a100-", i, "-", k,
                      " profile=0 mem_mib=4864 start=", k, " gi=", k + 1,
                      " used_mib=100\n");
    }
  }
  return s;
}

// utime + stime of `pid`, in seconds.
double CpuSeconds(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  // Fields after the command name (which may hold spaces) start at ')'.
  std::vector<std::string> f =
      absl::StrSplit(stat.substr(stat.rfind(')') + 2), ' ');
  // f[0] is field 3 (state): utime is field 14, stime 15.
  double utime = 0, stime = 0;
  if (f.size() > 13) {
    (void)absl::SimpleAtod(f[11], &utime);
    (void)absl::SimpleAtod(f[12], &stime);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// A "VmRSS:" style line of /proc/<pid>/status, in MB.
double StatusMb(pid_t pid, const std::string& key) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) == 0) {
      std::istringstream fields(line.substr(key.size()));
      double kb = 0;
      fields >> kb;
      return kb / 1024;
    }
  }
  return -1;
}

// Heartbeats the server has acknowledged.
double Heartbeats(const ServerProcess& server) {
  absl::StatusOr<std::string> body = HttpGet(server.metrics_port(), "/metrics");
  if (!body.ok()) return -1;
  return SampleValue(
      *body,
      "accelsched_grpc_requests_total{code=\"OK\",method=\"Heartbeat\"}");
}

struct Run {
  double seconds = 0;
  double heartbeats = 0;
  double cpu_seconds = 0;
  double rss_mb = 0;
  double peak_rss_mb = 0;
};

// One agent against a server of its own (the same GPUs on another node would
// be refused).
absl::StatusOr<Run> Measure(const std::string& dir, const std::string& node,
                            absl::Duration interval, absl::Duration length) {
  auto started = ServerProcess::Start(dir + "/" + node + ".db");
  if (!started.ok()) return started.status();
  const ServerProcess& server = **started;
  auto agent = ServerProcess::StartProgram(
      ACCELSCHED_AGENT_PATH,
      {"--server=" + server.grpc_address(), "--node_name=" + node,
       absl::StrCat("--interval=", absl::FormatDuration(interval)),
       std::string("--nvml_library=") + FAKE_NVML_PATH,
       "--sys_dir=/nonexistent", "--dev_dir=/nonexistent"},
      "registered node");
  if (!agent.ok()) return agent.status();
  // Past start-up (loading, the first registration and its allocations).
  absl::SleepFor(std::min(interval * 2, absl::Seconds(2)));
  const pid_t pid = (*agent)->pid();
  Run run;
  const double hb0 = Heartbeats(server);
  const double cpu0 = CpuSeconds(pid);
  const absl::Time t0 = absl::Now();
  absl::SleepFor(length);
  run.cpu_seconds = CpuSeconds(pid) - cpu0;
  run.seconds = absl::ToDoubleSeconds(absl::Now() - t0);
  run.heartbeats = Heartbeats(server) - hb0;
  run.rss_mb = StatusMb(pid, "VmRSS:");
  run.peak_rss_mb = StatusMb(pid, "VmHWM:");
  (*agent)->Stop(SIGTERM);
  (*started)->Stop(SIGTERM);
  return run;
}

int Main() {
  const std::string dir = absl::GetFlag(FLAGS_dir);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string scenario = dir + "/scenario";
  std::ofstream(scenario) << Scenario();
  ::setenv("FAKE_NVML_SCENARIO", scenario.c_str(), 1);
  absl::StatusOr<Run> fast = Measure(
      dir, "fast", absl::Milliseconds(absl::GetFlag(FLAGS_fast_interval_ms)),
      absl::Seconds(absl::GetFlag(FLAGS_seconds)));
  if (!fast.ok()) {
    std::fprintf(stderr, "%s\n", fast.status().ToString().c_str());
    return 1;
  }
  const double per_pass_ms =
      fast->heartbeats > 0 ? 1000 * fast->cpu_seconds / fast->heartbeats : -1;
  std::printf(
      "fast run: %.1f s, %.0f passes, CPU %.3f s: %.3f ms per pass "
      "(discovery of 8 GPUs + 28 MIG slices, Heartbeat); at 10 s: %.4f%% of "
      "one core (target %.0f%%, ratio %.4f)\n",
      fast->seconds, fast->heartbeats, fast->cpu_seconds, per_pass_ms,
      per_pass_ms / 100, kCpuTargetPercent,
      per_pass_ms / 100 / kCpuTargetPercent);
  std::printf(
      "fast run: resident %.1f MB, peak %.1f MB (target %.0f MB, "
      "ratio %.2f)\n",
      fast->rss_mb, fast->peak_rss_mb, kRssTargetMb,
      fast->peak_rss_mb / kRssTargetMb);

  const double steady_seconds = absl::GetFlag(FLAGS_steady_seconds);
  if (steady_seconds > 0) {
    absl::StatusOr<Run> steady = Measure(dir, "steady", absl::Seconds(10),
                                         absl::Seconds(steady_seconds));
    if (!steady.ok()) {
      std::fprintf(stderr, "%s\n", steady.status().ToString().c_str());
      return 1;
    }
    const double percent = 100 * steady->cpu_seconds / steady->seconds;
    std::printf(
        "steady run at --interval=10s: %.0f s, %.0f passes, CPU %.3f s: "
        "%.4f%% of one core (target %.0f%%, ratio %.4f); resident %.1f MB, "
        "peak %.1f MB (ratio %.2f)\n",
        steady->seconds, steady->heartbeats, steady->cpu_seconds, percent,
        kCpuTargetPercent, percent / kCpuTargetPercent, steady->rss_mb,
        steady->peak_rss_mb, steady->peak_rss_mb / kRssTargetMb);
  }
  return 0;
}

}  // namespace
}  // namespace accelsched

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return accelsched::Main();
}
