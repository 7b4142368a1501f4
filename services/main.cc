// accelschedd: the accelsched gRPC server.
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "services/server.h"

ABSL_FLAG(std::string, listen, "0.0.0.0:50051",
          "gRPC address (host:port; port 0 picks one)");
ABSL_FLAG(std::string, metrics_listen, "0.0.0.0:9464",
          "Prometheus /metrics address (host:port; port 0 picks one)");
ABSL_FLAG(std::string, db, "accelsched.db",
          "SQLite file, created with its schema if absent; or a PostgreSQL "
          "connection URI (postgresql://user:password@host:port/dbname), "
          "which several servers may share: one is the leader and serves, "
          "the others take over when it goes");
ABSL_FLAG(std::string, advertise_address, "",
          "PostgreSQL only: the gRPC address that the other servers name to "
          "clients while this one leads (default: hostname:port)");
ABSL_FLAG(absl::Duration, leader_lease, absl::Seconds(10),
          "PostgreSQL only: how long a leader that stops renewing while its "
          "database session lives (frozen, cut off) stays leader");
ABSL_FLAG(absl::Duration, leader_renew_deadline, absl::ZeroDuration(),
          "PostgreSQL only: how long a leader serves after its last renewal, "
          "and how soon a leader whose database session is gone (its process "
          "died) is replaced; 0: three --leader_retry_period");
ABSL_FLAG(absl::Duration, leader_retry_period, absl::Milliseconds(250),
          "PostgreSQL only: how often the leader renews its lease and the "
          "others try to take over");
ABSL_FLAG(absl::Duration, default_lease, absl::Hours(1),
          "lease given when a request names none (e.g. 30m, 1h)");
ABSL_FLAG(
    absl::Duration, heartbeat_timeout, absl::Minutes(5),
    "nodes whose last heartbeat is older get no new allocations; 0 disables");
ABSL_FLAG(absl::Duration, allocation_retention, absl::Hours(24),
          "how long released and expired allocations stay readable");
ABSL_FLAG(absl::Duration, sweep_interval, absl::Seconds(1),
          "how often expired leases are swept");
ABSL_FLAG(
    int, max_commit_batch, 0,
    "writes per SQLite transaction at most; 0: no cap (group commit), 1: one "
    "commit per call");
ABSL_FLAG(bool, commit_thread, false,
          "commit on a dedicated thread rather than on the thread of the call "
          "that finds the committer idle (for comparison: bench/README.md)");

ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate chain; with --tls_key turns on TLS");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA for client certificates (mutual TLS); a verified client "
          "certificate may "
          "change the catalog");
ABSL_FLAG(
    std::string, admin_token_file, "",
    "file with the bearer token that RegisterNode, RemoveNode, "
    "SetNodeSchedulable "
    "and Heartbeat must present (metadata authorization: Bearer <token>)");

ABSL_FLAG(std::string, accelerator_types, "",
          "accelerator-type file (protobuf text, an "
          "accelsched.v1.AcceleratorTypeRegistry) whose types, aliases, MIG "
          "profiles and TPU topologies are added to the built-in ones; "
          "SIGHUP re-reads it");

ABSL_FLAG(std::string, tenants, "",
          "Tenants' fair-share weights, quotas, cohorts and preemption policy "
          "(an accelsched.v1.TenantsConfig in protobuf text format); SIGHUP "
          "re-reads it");
ABSL_FLAG(absl::Duration, pending_lease, absl::Minutes(10),
          "How long a PENDING request keeps its place without a retry of its "
          "Allocate or a RenewLease");
ABSL_FLAG(bool, preemption, true,
          "Let pending requests of higher priority, or of tenants reclaiming "
          "their quota, preempt ACTIVE allocations");
ABSL_FLAG(absl::Duration, preemption_grace, absl::Seconds(30),
          "How long a preempted allocation keeps its devices");
ABSL_FLAG(std::string, packing, "fragmentation",
          "How a request's node is chosen among those that fit: "
          "fragmentation (least fragmentation added under the recent mix of "
          "requests, units that come free together), best_fit, first_fit "
          "(node name order) or spread (most free first)");
ABSL_FLAG(absl::Duration, mig_relayout_timeout, absl::Minutes(10),
          "How long a node has to apply a planned MIG re-layout before the "
          "plan is dropped (the request waits again), and how long a GPU "
          "whose plan failed or was dropped is not planned for again");
ABSL_FLAG(absl::Duration, mig_relayout_ahead, absl::Minutes(10),
          "A request for a MIG profile that no slice offers, which no "
          "re-layout serves now, holds a GPU whose allocated slices free "
          "within this, to be re-laid out for it once they do (0: never)");
ABSL_FLAG(std::string, topology_levels, "",
          "Node labels naming topology domains, comma-separated, widest "
          "first (say a block, a rack, an NVLink domain): what a request's "
          "required_topology and preferred_topology may name");
ABSL_FLAG(bool, metrics_per_device, false,
          "also export device statistics per device and MIG slice on /metrics "
          "(a series each: mind the cardinality), not only per node and model");
ABSL_FLAG(bool, nvidia_visible_devices, false,
          "put NVIDIA_VISIBLE_DEVICES=<allocated UUIDs> in each NVIDIA "
          "placement; off by default: with the device plugin the kubelet "
          "picks a container's GPUs, and the variable can expose GPUs it "
          "gave to another pod (docs/concepts/placement.md)");
ABSL_FLAG(std::string, shared_gpu_resource_name, "nvidia.com/gpu",
          "the extended resource a GPU share's pod asks one of: what NVIDIA's "
          "device plugin advertises for the GPUs it shares (nvidia.com/gpu, "
          "or nvidia.com/gpu.shared with its renameByDefault)");

ABSL_FLAG(int64_t, max_db_pages, 0,
          "cap the database at this many pages (SQLite's max_page_count); "
          "writes beyond "
          "it fail with RESOURCE_EXHAUSTED; 0: no cap");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "accelsched: schedules a cluster's GPUs, MIG slices and TPUs");
  absl::ParseCommandLine(argc, argv);
  // Debian builds abseil without NDEBUG, which leaves absl::Mutex's deadlock
  // detection on: a global lock-order graph updated on every lock, and on
  // every mutex's creation and destruction (one per queued write). It cost 5%
  // of the server's CPU under load (bench/README.md). The tests keep it on.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  // Block the signals handled here in every thread (gRPC's included) and take
  // them in this one: SIGINT and SIGTERM stop, SIGHUP re-reads
  // --accelerator_types and --tenants.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  accelsched::Server::Options options;
  options.listen = absl::GetFlag(FLAGS_listen);
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  options.db = absl::GetFlag(FLAGS_db);
  options.advertise_address = absl::GetFlag(FLAGS_advertise_address);
  options.leader_lease = absl::GetFlag(FLAGS_leader_lease);
  options.leader_retry_period = absl::GetFlag(FLAGS_leader_retry_period);
  options.leader_renew_deadline = absl::GetFlag(FLAGS_leader_renew_deadline);
  options.default_lease = absl::GetFlag(FLAGS_default_lease);
  options.heartbeat_timeout = absl::GetFlag(FLAGS_heartbeat_timeout);
  options.allocation_retention = absl::GetFlag(FLAGS_allocation_retention);
  options.sweep_interval = absl::GetFlag(FLAGS_sweep_interval);
  options.max_commit_batch = absl::GetFlag(FLAGS_max_commit_batch);
  options.commit_thread = absl::GetFlag(FLAGS_commit_thread);
  options.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  options.tls_key = absl::GetFlag(FLAGS_tls_key);
  options.tls_client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  options.admin_token_file = absl::GetFlag(FLAGS_admin_token_file);
  options.max_db_pages = absl::GetFlag(FLAGS_max_db_pages);
  options.accelerator_types = absl::GetFlag(FLAGS_accelerator_types);
  options.tenants = absl::GetFlag(FLAGS_tenants);
  options.pending_lease = absl::GetFlag(FLAGS_pending_lease);
  options.preemption = absl::GetFlag(FLAGS_preemption);
  options.preemption_grace = absl::GetFlag(FLAGS_preemption_grace);
  options.packing = absl::GetFlag(FLAGS_packing);
  options.mig_relayout_timeout = absl::GetFlag(FLAGS_mig_relayout_timeout);
  options.mig_relayout_ahead = absl::GetFlag(FLAGS_mig_relayout_ahead);
  options.topology_levels = absl::GetFlag(FLAGS_topology_levels);
  options.metrics_per_device = absl::GetFlag(FLAGS_metrics_per_device);
  options.placement.nvidia_visible_devices =
      absl::GetFlag(FLAGS_nvidia_visible_devices);
  options.placement.shared_gpu_resource_name =
      absl::GetFlag(FLAGS_shared_gpu_resource_name);

  auto server = accelsched::Server::BuildAndStart(options);
  if (!server.ok()) {
    std::fprintf(stderr, "accelschedd: %s\n",
                 std::string(server.status().ToString()).c_str());
    return 1;
  }
  std::fprintf(stderr,
               "accelschedd ready: grpc_port=%d metrics_port=%d db=%s\n",
               (*server)->grpc_port(), (*server)->metrics_port(),
               (*server)->db_description().c_str());

  int sig = 0;
  for (;;) {
    if (const int error = sigwait(&signals, &sig); error != 0) {
      std::fprintf(stderr, "accelschedd: sigwait: %s; shutting down\n",
                   std::strerror(error));
      break;
    }
    if (sig != SIGHUP) {
      if (!(*server)->lost_leadership()) {
        std::fprintf(stderr, "accelschedd: %s received, shutting down\n",
                     sig == SIGTERM ? "SIGTERM" : "SIGINT");
      }
      break;
    }
    absl::StatusOr<std::string> reloaded = (*server)->ReloadAcceleratorTypes();
    std::fprintf(stderr, "accelschedd: SIGHUP: %s\n",
                 reloaded.ok() ? reloaded->c_str()
                               : absl::StrCat("accelerator types not changed: ",
                                              reloaded.status().ToString())
                                     .c_str());
    // Tenants after the types: their quotas may name a type just added.
    if (!options.tenants.empty()) {
      absl::StatusOr<std::string> tenants = (*server)->ReloadTenants();
      std::fprintf(stderr, "accelschedd: SIGHUP: %s\n",
                   tenants.ok() ? tenants->c_str()
                                : absl::StrCat("tenants not changed: ",
                                               tenants.status().ToString())
                                      .c_str());
    }
  }
  const bool lost = (*server)->lost_leadership();
  (*server)->Shutdown();
  server->reset();
  if (lost) {
    std::fprintf(stderr,
                 "accelschedd: stopped: another server took over; restart "
                 "this one to follow it\n");
    return 1;
  }
  std::fprintf(stderr, "accelschedd: stopped\n");
  return 0;
}
