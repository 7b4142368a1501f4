// accelsched-agent: discovers the node's accelerators and keeps the server's
// catalog of them true (agent/node_reporter.h), or with --once prints them.
#include <grpcpp/grpcpp.h>
#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "accelsched/v1/accelsched.grpc.pb.h"
#include "agent/backoff.h"
#include "agent/discovery.h"
#include "agent/files.h"
#include "agent/gpu_sharing.h"
#include "agent/inventory_file.h"
#include "agent/mig_relayout.h"
#include "agent/node_allocatable.h"
#include "agent/node_reporter.h"
#include "agent/nvidia_gpus.h"
#include "agent/tpu_chips.h"

ABSL_FLAG(std::string, server, "localhost:50051", "accelschedd's gRPC address");
ABSL_FLAG(std::string, node_name, "",
          "the node's name (default: $NODE_NAME, which a DaemonSet sets from "
          "spec.nodeName, else the host name)");
ABSL_FLAG(absl::Duration, interval, absl::Seconds(10),
          "how often to look at the devices and heartbeat");
ABSL_FLAG(std::string, nvml_library, "libnvidia-ml.so.1",
          "NVML to dlopen, or comma-separated candidates tried in order; "
          "empty: no NVIDIA GPUs. Failing to load one is fatal on a host "
          "with the driver loaded (DEV/nvidiactl exists); elsewhere the host "
          "has no NVIDIA GPUs");
ABSL_FLAG(std::string, inventory, "",
          "a file listing devices by hand (an accelsched.v1.Node in protobuf "
          "text format; its devices are added to those discovered)");
ABSL_FLAG(std::string, labels_file, "",
          "the node's labels, key=value per line (key=\"value\" as the "
          "downward API writes them)");
ABSL_FLAG(std::vector<std::string>, labels, {},
          "more node labels, k=v,k2=v2 (over those of --labels_file)");
ABSL_FLAG(std::string, gpu_sharing, "auto",
          "how the node shares its whole GPUs (Device.sharing): none, "
          "time-slicing or mps, as NVIDIA's device plugin names its "
          "strategies; auto: the node's nvidia.com/gpu.sharing-strategy label "
          "(GPU Feature Discovery's), none without it");
ABSL_FLAG(bool, allow_mig_relayout, false,
          "apply the MIG layouts the server plans for this node's GPUs "
          "(HeartbeatResponse.mig_plans: create and destroy GPU and compute "
          "instances, never switching MIG mode), and label the node "
          "accelsched.io/mig-relayout=enabled so that the server plans them; "
          "off: layouts are never changed, whatever the server sends");
ABSL_FLAG(absl::Duration, mig_relayout_margin,
          accelsched::agent::kDefaultMigRelayoutMargin,
          "with --allow_mig_relayout: a plan whose deadline is less than this "
          "away is refused (reported as failed) rather than started, since "
          "the server drops it at its deadline");
ABSL_FLAG(bool, once, false,
          "discover, print the node as JSON on stdout and exit");
ABSL_FLAG(std::string, sys_dir, "/sys", "where sysfs is (TPU discovery)");
ABSL_FLAG(std::string, dev_dir, "/dev", "where the host's device nodes are");
ABSL_FLAG(std::string, tpu_topology, "",
          "the TPU slice's topology (default: TPU_TOPOLOGY, the "
          "cloud.google.com/gke-tpu-topology label, or the single-host shape)");
ABSL_FLAG(std::string, tpu_slice_id, "",
          "the TPU slice's id, the same on each of its hosts (default: the "
          "first of TPU_WORKER_HOSTNAMES, else the node's name)");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM file of the CA that signed the server's certificate: turns on "
          "TLS");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM client certificate for mutual TLS (with --tls_key)");
ABSL_FLAG(std::string, tls_key, "", "PEM key of --tls_cert");
ABSL_FLAG(std::string, admin_token_file, "",
          "file holding the bearer token RegisterNode and Heartbeat need");
ABSL_FLAG(absl::Duration, max_backoff, absl::Seconds(30),
          "longest wait between retries while the server is unavailable");
ABSL_FLAG(std::string, allocatable, "auto",
          "the node's CPU, memory and pods for pods accelsched places "
          "(Node.allocatable): auto (the Kubernetes node's status.allocatable "
          "from --kube_node_file when set, else this machine minus "
          "--reserved_cpu_milli and --reserved_memory_bytes) or none (not "
          "accounted)");
ABSL_FLAG(std::string, kube_node_file, "",
          "a file holding this node's Node object as `kubectl get node NAME "
          "-o json` prints it (a sidecar refreshes it), re-read every pass");
ABSL_FLAG(std::string, proc_dir, "/proc",
          "where procfs is (meminfo's MemTotal, without --kube_node_file)");
ABSL_FLAG(int64_t, reserved_cpu_milli, 1500,
          "without --kube_node_file: CPU kept from pods, in thousandths of a "
          "CPU (kubelet's documented example: kube-reserved 1 CPU + "
          "system-reserved 500m)");
ABSL_FLAG(int64_t, reserved_memory_bytes, int64_t{3584} << 20,
          "without --kube_node_file: memory kept from pods, in bytes (3.5 GiB, "
          "kubelet's documented example: kube-reserved 2Gi + system-reserved "
          "1Gi + eviction-hard 500Mi)");
ABSL_FLAG(int32_t, max_pods, 0,
          "without --kube_node_file: pods accelsched may place on the node; 0: "
          "not limited");

namespace accelsched::agent {
namespace {

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "accelsched-agent: %s\n", status.ToString().c_str());
  return 1;
}

std::string NodeName() {
  std::string name = absl::GetFlag(FLAGS_node_name);
  if (!name.empty()) return name;
  if (const char* env = std::getenv("NODE_NAME"); env != nullptr && *env) {
    return env;
  }
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) == 0) return host;
  return "";
}

absl::StatusOr<std::map<std::string, std::string>> Labels() {
  std::map<std::string, std::string> labels;
  if (const std::string file = absl::GetFlag(FLAGS_labels_file);
      !file.empty()) {
    absl::StatusOr<std::string> text = ReadWholeFile(file);
    if (!text.ok()) return text.status();
    absl::StatusOr<std::map<std::string, std::string>> parsed =
        ParseLabels(*text, file);
    if (!parsed.ok()) return parsed.status();
    labels = *std::move(parsed);
  }
  absl::StatusOr<std::map<std::string, std::string>> flags =
      ParseLabels(absl::StrJoin(absl::GetFlag(FLAGS_labels), "\n"), "--labels");
  if (!flags.ok()) return flags.status();
  for (auto& [k, v] : *flags) labels[k] = v;
  return labels;
}

// The first of `paths` that loads; otherwise the last failure's code and
// every candidate's error.
absl::StatusOr<std::unique_ptr<NvmlLibrary>> LoadNvml(
    const std::vector<std::string>& paths) {
  absl::StatusCode code = absl::StatusCode::kNotFound;
  std::vector<std::string> errors;
  for (const std::string& path : paths) {
    absl::StatusOr<std::unique_ptr<NvmlLibrary>> nvml = NvmlLibrary::Load(path);
    if (nvml.ok()) {
      std::fprintf(stderr, "accelsched-agent: NVML from %s, driver %s\n",
                   path.c_str(), (*nvml)->DriverVersion().c_str());
      return nvml;
    }
    code = nvml.status().code();
    errors.emplace_back(nvml.status().message());
  }
  return absl::Status(code, absl::StrJoin(errors, "; "));
}

// The node's device sources; `gpus` is set to the NVIDIA one, null when
// NVML did not load.
absl::StatusOr<std::vector<std::unique_ptr<DeviceSource>>> Sources(
    const std::string& node_name,
    const std::map<std::string, std::string>& labels, NvidiaGpus*& gpus) {
  gpus = nullptr;
  std::vector<std::unique_ptr<DeviceSource>> sources;
  // Checked on every host, GPUs or not, so that a bad value is never silent.
  absl::StatusOr<v1::GpuSharing> sharing =
      GpuSharingOf(absl::GetFlag(FLAGS_gpu_sharing), labels);
  if (!sharing.ok()) return sharing.status();
  const std::vector<std::string> nvml_paths =
      absl::StrSplit(absl::GetFlag(FLAGS_nvml_library), ',', absl::SkipEmpty());
  if (!nvml_paths.empty()) {
    absl::StatusOr<std::unique_ptr<NvmlLibrary>> nvml = LoadNvml(nvml_paths);
    if (nvml.ok()) {
      auto nvidia = std::make_unique<NvidiaGpus>(*std::move(nvml), *sharing);
      gpus = nvidia.get();
      sources.push_back(std::move(nvidia));
    } else {
      const std::filesystem::path ctl =
          std::filesystem::path(absl::GetFlag(FLAGS_dev_dir)) / "nvidiactl";
      std::error_code ec;
      // A host with the driver loaded has GPUs: registering none would drop
      // them from the catalog.
      if (std::filesystem::exists(ctl, ec)) return nvml.status();
      std::fprintf(stderr, "accelsched-agent: no NVIDIA GPUs (%s)\n",
                   std::string(nvml.status().message()).c_str());
    }
  }
  TpuChips::Options tpu;
  tpu.node_name = node_name;
  tpu.sys_dir = absl::GetFlag(FLAGS_sys_dir);
  tpu.dev_dir = absl::GetFlag(FLAGS_dev_dir);
  tpu.topology = absl::GetFlag(FLAGS_tpu_topology);
  tpu.slice_id = absl::GetFlag(FLAGS_tpu_slice_id);
  tpu.labels = labels;
  sources.push_back(std::make_unique<TpuChips>(std::move(tpu)));
  if (const std::string inventory = absl::GetFlag(FLAGS_inventory);
      !inventory.empty()) {
    sources.push_back(std::make_unique<InventoryFile>(inventory));
  }
  return sources;
}

absl::StatusOr<NodeAllocatable::Options> AllocatableOptions(
    const std::string& node_name) {
  NodeAllocatable::Options options;
  options.node_name = node_name;
  options.kube_node_file = absl::GetFlag(FLAGS_kube_node_file);
  absl::StatusOr<NodeAllocatable::Source> source = AllocatableSource(
      absl::GetFlag(FLAGS_allocatable), !options.kube_node_file.empty());
  if (!source.ok()) return source.status();
  options.source = *source;
  options.proc_dir = absl::GetFlag(FLAGS_proc_dir);
  options.reserve.cpu_milli = absl::GetFlag(FLAGS_reserved_cpu_milli);
  options.reserve.memory_bytes = absl::GetFlag(FLAGS_reserved_memory_bytes);
  options.reserve.max_pods = absl::GetFlag(FLAGS_max_pods);
  if (options.reserve.cpu_milli < 0 || options.reserve.memory_bytes < 0) {
    return absl::InvalidArgumentError(
        "--reserved_cpu_milli and --reserved_memory_bytes must not be "
        "negative");
  }
  if (options.reserve.max_pods < 0 || options.reserve.max_pods > kMaxPods) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_pods must be 0 to ", kMaxPods));
  }
  return options;
}

// What was last logged about the allocatable, so that a line is written
// once until it changes.
struct AllocatableLog {
  std::string line;
  bool error = false;
};

// This pass's allocatable. A failed read, or a reserve larger than the
// machine, is logged once until it changes, and a read after failures says so.
std::optional<v1::NodeResources> ReadAllocatable(NodeAllocatable& allocatable,
                                                 AllocatableLog& log) {
  NodeAllocatable::Reading reading = allocatable.Read();
  std::string line = reading.notice;
  if (!reading.error.ok()) {
    line = absl::StrCat(reading.error.ToString(),
                        reading.allocatable.has_value()
                            ? " (keeping the last allocatable read)"
                            : " (registering none until it reads)");
  } else if (log.error) {
    std::fprintf(stderr, "accelsched-agent: allocatable: read again\n");
  }
  if (line != log.line && !line.empty()) {
    std::fprintf(stderr, "accelsched-agent: allocatable: %s\n", line.c_str());
  }
  log.line = line;
  log.error = !reading.error.ok();
  return reading.allocatable;
}

std::string AllocatableText(const Observation& seen) {
  if (!seen.allocatable.has_value()) return "no allocatable";
  return absl::StrCat("allocatable ", seen.allocatable->cpu_milli(),
                      " cpu_milli, ", seen.allocatable->memory_bytes(),
                      " memory_bytes, ", seen.allocatable->pods(), " pods");
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> Credentials() {
  const std::string ca = absl::GetFlag(FLAGS_tls_ca);
  const std::string cert = absl::GetFlag(FLAGS_tls_cert);
  const std::string key = absl::GetFlag(FLAGS_tls_key);
  if (ca.empty()) {
    if (!cert.empty() || !key.empty()) {
      return absl::InvalidArgumentError(
          "--tls_cert and --tls_key need --tls_ca");
    }
    return grpc::InsecureChannelCredentials();
  }
  if (cert.empty() != key.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  }
  grpc::SslCredentialsOptions options;
  absl::StatusOr<std::string> pem = ReadWholeFile(ca);
  if (!pem.ok()) return pem.status();
  options.pem_root_certs = *pem;
  if (!cert.empty()) {
    absl::StatusOr<std::string> c = ReadWholeFile(cert);
    if (!c.ok()) return c.status();
    absl::StatusOr<std::string> k = ReadWholeFile(key);
    if (!k.ok()) return k.status();
    options.pem_cert_chain = *c;
    options.pem_private_key = *k;
  }
  return grpc::SslCredentials(options);
}

int Run(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "accelsched-agent --server=HOST:PORT [--node_name=N] [--interval=10s]\n"
      "Discovers the node's GPUs (NVML), MIG slices and TPU chips, registers "
      "them with accelschedd and heartbeats their health and readings.");
  absl::ParseCommandLine(argc, argv);
  // Taken in this thread only: SIGINT and SIGTERM stop the loop.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const std::string node_name = NodeName();
  if (node_name.empty()) {
    return Fail(absl::InvalidArgumentError(
        "--node_name is required (or NODE_NAME in the environment)"));
  }
  const absl::Duration interval = absl::GetFlag(FLAGS_interval);
  if (interval <= absl::ZeroDuration()) {
    return Fail(absl::InvalidArgumentError("--interval must be positive"));
  }
  absl::StatusOr<std::map<std::string, std::string>> labels = Labels();
  if (!labels.ok()) return Fail(labels.status());
  const bool allow_mig_relayout = absl::GetFlag(FLAGS_allow_mig_relayout);
  const absl::Duration mig_relayout_margin =
      absl::GetFlag(FLAGS_mig_relayout_margin);
  if (mig_relayout_margin < absl::ZeroDuration()) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
        "--mig_relayout_margin ", absl::FormatDuration(mig_relayout_margin),
        " must not be negative")));
  }
  if (SetMigRelayoutLabel(allow_mig_relayout, *labels)) {
    std::fprintf(stderr,
                 "accelsched-agent: label %s left out: only "
                 "--allow_mig_relayout sets it\n",
                 kMigRelayoutLabel);
  }
  absl::StatusOr<NodeAllocatable::Options> allocatable_options =
      AllocatableOptions(node_name);
  if (!allocatable_options.ok()) return Fail(allocatable_options.status());
  NodeAllocatable allocatable(*std::move(allocatable_options));
  AllocatableLog allocatable_log;
  NvidiaGpus* gpus = nullptr;
  absl::StatusOr<std::vector<std::unique_ptr<DeviceSource>>> sources =
      Sources(node_name, *labels, gpus);
  if (!sources.ok()) return Fail(sources.status());

  NodeReporter::Options options;
  options.node_name = node_name;
  options.labels = *labels;
  // A call may take as long as the interval, within 1 to 10 seconds: long
  // enough for a registration's durable commit on a busy server, short enough
  // that a hung connection is noticed before the node goes stale.
  options.rpc_timeout =
      std::clamp(interval, absl::Seconds(1), absl::Seconds(10));
  if (const std::string file = absl::GetFlag(FLAGS_admin_token_file);
      !file.empty()) {
    absl::StatusOr<std::string> token = ReadWholeFile(file);
    if (!token.ok()) return Fail(token.status());
    options.admin_token = std::string(absl::StripAsciiWhitespace(*token));
  }

  if (absl::GetFlag(FLAGS_once)) {
    absl::StatusOr<Observation> seen = ObserveAll(*sources, absl::Now());
    if (!seen.ok()) return Fail(seen.status());
    seen->allocatable = ReadAllocatable(allocatable, allocatable_log);
    NodeReporter printer(nullptr, options);
    std::printf("%s\n", NodeJson(printer.NodeOf(*seen), *seen).c_str());
    return 0;
  }

  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      Credentials();
  if (!credentials.ok()) return Fail(credentials.status());
  // gRPC reconnects on its own schedule (up to 2 minutes apart by default);
  // keep it within the agent's so that a restarted server hears from every
  // node within --max_backoff.
  const absl::Duration initial_backoff = std::min(absl::Seconds(1), interval);
  const absl::Duration max_backoff =
      std::max(absl::GetFlag(FLAGS_max_backoff), initial_backoff);
  grpc::ChannelArguments channel_args;
  channel_args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
                      absl::ToInt64Milliseconds(initial_backoff));
  channel_args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
                      absl::ToInt64Milliseconds(max_backoff));
  NodeReporter reporter(
      v1::AcceleratorScheduler::NewStub(grpc::CreateCustomChannel(
          absl::GetFlag(FLAGS_server), *credentials, channel_args)),
      options);

  absl::Notification stop;
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    stop.Notify();
  });
  MigRelayout relayout(gpus != nullptr ? &gpus->nvml() : nullptr);
  MigPlans mig_plans(&relayout, mig_relayout_margin);
  bool ignored_plans_logged = false;
  Backoff backoff(initial_backoff, max_backoff);
  std::string last_error;
  int last_registrations = 0;
  int last_heartbeats = 0;
  absl::Duration delay = interval;
  do {
    const bool retried_at_once = delay == absl::ZeroDuration();
    delay = interval;
    absl::StatusOr<Observation> seen = ObserveAll(*sources, absl::Now());
    if (seen.ok()) {
      seen->allocatable = ReadAllocatable(allocatable, allocatable_log);
    }
    // A pass that could not look reports nothing: the node's heartbeat goes
    // stale rather than the catalog being told the devices are gone.
    absl::Status status = seen.ok()
                              ? reporter.Report(*seen, mig_plans.failures())
                              : seen.status();
    if (status.ok()) {
      backoff.Reset();
      if (!last_error.empty()) {
        std::fprintf(stderr, "accelsched-agent: reporting again\n");
      }
      last_error.clear();
      if (reporter.registrations() != last_registrations) {
        last_registrations = reporter.registrations();
        std::fprintf(
            stderr,
            "accelsched-agent: registered node %s with %zu devices, %s\n",
            node_name.c_str(), seen->devices.size(),
            AllocatableText(*seen).c_str());
      }
    } else {
      if (IsTransient(status.code())) delay = backoff.Next();
      // The server forgot the node: register again at once (once).
      if (status.code() == absl::StatusCode::kNotFound &&
          absl::StartsWith(status.message(), "Heartbeat:") &&
          !retried_at_once) {
        delay = absl::ZeroDuration();
      }
      if (status.ToString() != last_error) {
        last_error = status.ToString();
        std::fprintf(stderr, "accelsched-agent: %s\n", last_error.c_str());
      }
    }
    if (reporter.heartbeats() != last_heartbeats) {
      // The heartbeat got through, with the failures it carried.
      last_heartbeats = reporter.heartbeats();
      mig_plans.FailuresDelivered();
      if (!allow_mig_relayout) {
        if (!reporter.mig_plans().empty() && !ignored_plans_logged) {
          ignored_plans_logged = true;
          std::fprintf(stderr,
                       "accelsched-agent: ignoring the server's MIG layout "
                       "plans: --allow_mig_relayout is off\n");
        }
      } else if (mig_plans.Handle(reporter.mig_plans())) {
        // The GPUs' slices changed: look again and register now, so that
        // the new slices' ids reach the server.
        delay = absl::ZeroDuration();
      }
    }
  } while (!stop.WaitForNotificationWithTimeout(delay));
  waiter.join();
  std::fprintf(stderr, "accelsched-agent: stopped\n");
  return 0;
}

}  // namespace
}  // namespace accelsched::agent

int main(int argc, char** argv) { return accelsched::agent::Run(argc, argv); }
