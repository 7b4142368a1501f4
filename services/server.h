// Server assembly: opens the store, loads the scheduler, and serves the
// scheduler, health and reflection services over gRPC and /metrics over HTTP.
// Owns everything it builds.
#ifndef ACCELSCHED_SERVICES_SERVER_H_
#define ACCELSCHED_SERVICES_SERVER_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/placement/placement.h"
#include "services/monotonic_notification.h"

namespace grpc {
class Server;
class ServerCredentials;
}  // namespace grpc
namespace prometheus {
class Exposer;
class Registry;
}  // namespace prometheus

namespace accelsched {

class AdminAuth;
class Clock;
class OffsetClock;
class DeviceStatsTable;
class Metrics;
class Scheduler;
class SchedulerService;
class Leadership;
class PgStore;
class Store;

// The largest request accepted, in bytes; larger ones are RESOURCE_EXHAUSTED.
inline constexpr int kMaxRequestBytes = 4 << 20;

class Server {
 public:
  struct Options {
    std::string listen = "0.0.0.0:50051";
    std::string metrics_listen = "0.0.0.0:9464";
    // A SQLite file, or a PostgreSQL connection URI (postgresql://...), which
    // several servers may share: one leader serves, the others wait.
    std::string db = "accelsched.db";
    // PostgreSQL only: the gRPC address followers name to clients (empty:
    // this host's name and the gRPC port); how long a leader that stops
    // renewing while its database session lives stays leader; how long a
    // leader serves after its last renewal (zero: three retry periods), which
    // is also how soon a leader whose session is gone is replaced; how often
    // the leader renews and followers try to take over.
    std::string advertise_address;
    absl::Duration leader_lease = absl::Seconds(10);
    absl::Duration leader_renew_deadline = absl::ZeroDuration();
    absl::Duration leader_retry_period = absl::Milliseconds(250);
    absl::Duration default_lease = absl::Hours(1);
    // Nodes silent for longer get no new allocations; zero disables the check.
    absl::Duration heartbeat_timeout = absl::Minutes(5);
    // Ended allocations stay readable this long.
    absl::Duration allocation_retention = absl::Hours(24);
    // How often expired leases are swept.
    absl::Duration sweep_interval = absl::Seconds(1);
    // Writes per SQLite transaction at most; 0: no cap.
    int max_commit_batch = 0;
    // Commit on a dedicated thread rather than on the thread of the call
    // that finds the committer idle (core/commit/group_committer.h).
    bool commit_thread = false;
    // PEM files. Cert and key together turn on TLS; a client CA adds mutual
    // TLS, where a verified client certificate is an admin credential.
    std::string tls_cert;
    std::string tls_key;
    std::string tls_client_ca;
    // A file holding the bearer token that catalog-changing calls must present.
    std::string admin_token_file;
    // Caps the database at this many pages (0: no cap).
    int64_t max_db_pages = 0;
    // An operator's accelerator-type file merged over the built-in types
    // (none when empty); ReloadAcceleratorTypes re-reads it.
    std::string accelerator_types;
    // The --tenants file (weights, quotas, cohorts); empty: none.
    std::string tenants;
    absl::Duration pending_lease = absl::Minutes(10);
    bool preemption = true;
    absl::Duration preemption_grace = absl::Seconds(30);
    // --packing: one of ParsePacking's names.
    std::string packing = "fragmentation";
    // --mig_relayout_timeout (Scheduler::Options::mig_relayout_timeout).
    absl::Duration mig_relayout_timeout = absl::Minutes(10);
    // --mig_relayout_ahead (Scheduler::Options::mig_relayout_ahead).
    absl::Duration mig_relayout_ahead = absl::Minutes(10);
    // --topology_levels: node label keys, comma-separated, widest first
    // (Scheduler::Options::topology_levels); "" none.
    std::string topology_levels;
    PlacementOptions placement;
    // Device statistics on /metrics per device and MIG slice too, not only
    // per node and model.
    bool metrics_per_device = false;
  };

  // Checks the options, then opens, loads and starts everything; an error
  // leaves nothing running.
  static absl::StatusOr<std::unique_ptr<Server>> BuildAndStart(
      const Options& options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int grpc_port() const { return grpc_port_; }
  int metrics_port() const { return exporter_.port; }
  // --db for the log: a PostgreSQL URI without its password.
  const std::string& db_description() const { return storage_.description; }
  // True once another server has taken over from this one (which then raises
  // SIGTERM, so that it exits and restarts as a follower).
  bool lost_leadership() const { return storage_.lost_leadership.load(); }

  // Re-reads the accelerator-type file (on SIGHUP) and, when it is valid and
  // no registered device would lose its type, uses it for every later
  // request; on error the registry in use stays. Returns a line for the log:
  // how many types are in use now, or why the file was refused.
  absl::StatusOr<std::string> ReloadAcceleratorTypes();
  // Re-reads --tenants (the registry in use resolves its models) and admits
  // what the new quotas let in. FAILED_PRECONDITION when there is no file;
  // the file's errors otherwise, and then the policies in use stay.
  absl::StatusOr<std::string> ReloadTenants();

  // Stops taking calls, lets calls in flight finish (up to `grace`), then
  // stops. Every acknowledged write is already committed, so nothing is lost.
  // Idempotent.
  void Shutdown(absl::Duration grace = absl::Seconds(5));

 private:
  Server();
  absl::Status OpenScheduler(const Options& options);
  // Opens the PostgreSQL store, and the leadership that starts as a follower.
  absl::Status OpenPostgres(const Options& options);
  // Starts campaigning (PostgreSQL), once the gRPC port is known.
  absl::Status StartElection(const Options& options);
  void StartSweeper(absl::Duration interval);
  absl::Status StartMetrics(const Options& options);
  absl::Status StartGrpc(const Options& options);
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(
      const Options& options);

  // The files the server reloads (SIGHUP): their paths.
  struct ConfigFiles {
    std::string accelerator_types;
    std::string tenants;  // --tenants
  };
  // The store, who may write it and the clock the leases read.
  struct Storage {
    std::unique_ptr<Clock> clock;
    // `clock` on PostgreSQL, set by the election (null on SQLite).
    OffsetClock* database_clock = nullptr;
    std::unique_ptr<Store> store;
    PgStore* pg_store = nullptr;  // `store`, when it is PostgreSQL
    std::unique_ptr<Leadership> leadership;
    std::atomic<bool> lost_leadership{false};
    std::string description;
  };
  // The Prometheus endpoint.
  struct Exporter {
    std::shared_ptr<prometheus::Registry> registry;
    std::unique_ptr<Metrics> metrics;
    std::unique_ptr<prometheus::Exposer> exposer;
    int port = 0;
  };
  // The periodic sweeps' thread.
  struct Sweeper {
    // Monotonic: a step of the wall clock back must not stop the sweeps (the
    // reload retried after a failed commit among them).
    MonotonicNotification stop;
    std::thread thread;
  };

  // Declared in the order they are made: destroyed in reverse.
  ConfigFiles files_;
  Storage storage_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<DeviceStatsTable> device_stats_;
  std::unique_ptr<AdminAuth> auth_;
  std::unique_ptr<SchedulerService> service_;
  Exporter exporter_;
  std::unique_ptr<grpc::Server> grpc_server_;
  Sweeper sweeper_;
  int grpc_port_ = 0;
};

}  // namespace accelsched

#endif  // ACCELSCHED_SERVICES_SERVER_H_
