#include "services/server.h"

#include <grpc/grpc.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "config/accelerator_types_file.h"
#include "config/tenants_file.h"
#include "core/base/clock.h"
#include "core/base/labels.h"
#include "core/base/status_macros.h"
#include "core/catalog/device_stats.h"
#include "core/scheduler/scheduler.h"
#include "grpc/health/v1/health.pb.h"
#include "services/admin_auth.h"
#include "services/leadership.h"
#include "services/metrics.h"
#include "services/scheduler_service.h"
#include "storage/pg_connection.h"
#include "storage/pg_leader_election.h"
#include "storage/pg_store.h"
#include "storage/sqlite_store.h"

namespace accelsched {
namespace {

// The flag's, or three retry periods, kept below the lease (halfway between
// the retry period and the lease) for configurations that predate the flag.
absl::Duration RenewDeadline(const Server::Options& options) {
  if (options.leader_renew_deadline > absl::ZeroDuration()) {
    return options.leader_renew_deadline;
  }
  return std::min(3 * options.leader_retry_period,
                  (options.leader_retry_period + options.leader_lease) / 2);
}

bool IsPostgresUri(absl::string_view db) {
  return absl::StartsWith(db, "postgresql://") ||
         absl::StartsWith(db, "postgres://");
}

}  // namespace

Server::Server() = default;

Server::~Server() { Shutdown(absl::ZeroDuration()); }

absl::StatusOr<std::unique_ptr<Server>> Server::BuildAndStart(
    const Options& options) {
  if (options.listen.empty())
    return absl::InvalidArgumentError("--listen is empty");
  if (options.metrics_listen.empty()) {
    return absl::InvalidArgumentError("--metrics_listen is empty");
  }
  if (options.db.empty()) return absl::InvalidArgumentError("--db is empty");
  if (options.default_lease <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--default_lease must be positive");
  }
  if (options.heartbeat_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--heartbeat_timeout must not be negative");
  }
  if (options.allocation_retention < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--allocation_retention must not be negative");
  }
  if (options.max_commit_batch < 0) {
    return absl::InvalidArgumentError(
        "--max_commit_batch must not be negative");
  }
  if (options.sweep_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--sweep_interval must be positive");
  }
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  }
  if (!options.tls_client_ca.empty() && options.tls_cert.empty()) {
    return absl::InvalidArgumentError(
        "--tls_client_ca needs --tls_cert and --tls_key");
  }
  if (options.leader_retry_period <= absl::ZeroDuration() ||
      options.leader_lease <= options.leader_retry_period) {
    return absl::InvalidArgumentError(
        "--leader_retry_period must be positive and shorter than "
        "--leader_lease");
  }
  if (options.leader_renew_deadline < absl::ZeroDuration() ||
      RenewDeadline(options) <= options.leader_retry_period ||
      RenewDeadline(options) >= options.leader_lease) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--leader_renew_deadline (",
        absl::FormatDuration(RenewDeadline(options)),
        ") must be longer than --leader_retry_period and shorter than "
        "--leader_lease"));
  }
  if (!IsLabelKey(options.placement.shared_gpu_resource_name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--shared_gpu_resource_name \"",
        options.placement.shared_gpu_resource_name,
        "\" is not a resource name ([prefix/]name, e.g. nvidia.com/gpu)"));
  }
  std::unique_ptr<Server> server(new Server);
  RETURN_IF_ERROR(server->OpenScheduler(options));
  RETURN_IF_ERROR(server->StartMetrics(options));
  RETURN_IF_ERROR(server->StartGrpc(options));
  RETURN_IF_ERROR(server->StartElection(options));
  server->StartSweeper(options.sweep_interval);
  return server;
}

absl::Status Server::OpenScheduler(const Options& options) {
  // Before the store: a bad file must not leave a new database behind.
  absl::StatusOr<std::shared_ptr<const AcceleratorTypeSet>> registry =
      LoadAcceleratorTypes(options.accelerator_types);
  if (!registry.ok()) {
    return absl::Status(
        registry.status().code(),
        absl::StrCat("--accelerator_types: ", registry.status().message()));
  }
  absl::StatusOr<TenantPolicies> tenants =
      LoadTenantPolicies(options.tenants, **registry);
  if (!tenants.ok()) {
    return absl::Status(
        tenants.status().code(),
        absl::StrCat("--tenants: ", tenants.status().message()));
  }
  if (options.pending_lease <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--pending_lease must be positive");
  }
  if (options.preemption_grace < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--preemption_grace must not be negative");
  }
  ASSIGN_OR_RETURN(const Packing packing, ParsePacking(options.packing));
  if (IsPostgresUri(options.db)) {
    // Leases on the database's clock: a replica whose clock runs ahead would
    // otherwise, once leader, end its predecessor's leases early.
    auto clock = std::make_unique<OffsetClock>();
    storage_.database_clock = clock.get();
    storage_.clock = std::move(clock);
    RETURN_IF_ERROR(OpenPostgres(options));
  } else {
    storage_.clock = std::make_unique<RealClock>();
    SqliteStore::Options store_options;
    store_options.max_pages = options.max_db_pages;
    ASSIGN_OR_RETURN(storage_.store,
                     SqliteStore::Open(options.db, store_options));
    storage_.description = options.db;
    storage_.leadership = std::make_unique<Leadership>();
  }
  Scheduler::Options scheduler_options;
  scheduler_options.default_lease = options.default_lease;
  scheduler_options.heartbeat_timeout = options.heartbeat_timeout;
  scheduler_options.retention = options.allocation_retention;
  scheduler_options.max_commit_batch =
      static_cast<size_t>(options.max_commit_batch);
  scheduler_options.commit_mode = options.commit_thread
                                      ? GroupCommitter::Mode::kThread
                                      : GroupCommitter::Mode::kLeader;
  scheduler_options.pending_lease = options.pending_lease;
  scheduler_options.preemption = options.preemption;
  scheduler_options.preemption_grace = options.preemption_grace;
  scheduler_options.packing = packing;
  if (options.mig_relayout_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--mig_relayout_timeout must be positive");
  }
  scheduler_options.mig_relayout_timeout = options.mig_relayout_timeout;
  if (options.mig_relayout_ahead < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--mig_relayout_ahead must not be negative");
  }
  scheduler_options.mig_relayout_ahead = options.mig_relayout_ahead;
  for (absl::string_view level :
       absl::StrSplit(options.topology_levels, ',', absl::SkipEmpty())) {
    std::vector<std::string>& levels = scheduler_options.topology_levels;
    if (!IsLabelKey(level)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--topology_levels: \"", absl::CHexEscape(level),
                       "\" is not a Kubernetes label key"));
    }
    if (std::find(levels.begin(), levels.end(), level) != levels.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--topology_levels: \"", level, "\" is named twice"));
    }
    levels.emplace_back(level);
  }
  files_.accelerator_types = options.accelerator_types;
  files_.tenants = options.tenants;
  scheduler_ =
      std::make_unique<Scheduler>(storage_.store.get(), storage_.clock.get(),
                                  *std::move(registry), scheduler_options);
  // A replica loads once elected (Leadership's promote).
  if (storage_.pg_store == nullptr) RETURN_IF_ERROR(scheduler_->Load());
  return scheduler_->queue().SetTenantPolicies(
      std::make_shared<const TenantPolicies>(*std::move(tenants)));
}

absl::Status Server::OpenPostgres(const Options& options) {
  storage_.description = PgConnection::Describe(options.db);
  PgStore::Options store_options;
  // A write transaction left open by a leader frozen mid-way (SIGSTOP, a VM
  // paused) holds the share lock a takeover waits for: the takeover ends
  // such a session (pg_leader_election.h), and so does the database after
  // the lease. A write never waits longer than the lease for a lock either
  // (one held by a server frozen inside its takeover, until the database
  // ends that session).
  const std::string lease_ms =
      absl::StrCat(absl::ToInt64Milliseconds(options.leader_lease), "ms");
  store_options.connection.settings.emplace_back(
      "idle_in_transaction_session_timeout", lease_ms);
  store_options.connection.settings.emplace_back("lock_timeout", lease_ms);
  store_options.on_fenced = [this] {
    storage_.leadership->Lose(
        "a write was refused: another server holds a later "
        "epoch");
  };
  ASSIGN_OR_RETURN(std::unique_ptr<PgStore> store,
                   PgStore::Open(options.db, std::move(store_options)));
  storage_.pg_store = store.get();
  storage_.store = std::move(store);
  Leadership::Callbacks callbacks;
  callbacks.promote = [this](int64_t epoch) {
    // Loaded first: until the state is whole, nothing this server would
    // write (the sweeper's expiries) may commit.
    RETURN_IF_ERROR(scheduler_->Load());
    storage_.pg_store->set_epoch(epoch);
    return absl::OkStatus();
  };
  callbacks.serving = [this](bool serving, int64_t epoch) {
    grpc_server_->GetHealthCheckService()->SetServingStatus(
        v1::AcceleratorScheduler::service_full_name(), serving);
    exporter_.metrics->SetLeader(serving, epoch);
  };
  callbacks.lost = [this](const std::string&) {
    storage_.lost_leadership.store(true);
    // main() waits for signals: this one stops the server, and main exits 1
    // so that a supervisor restarts it as a follower.
    kill(getpid(), SIGTERM);
  };
  storage_.leadership = std::make_unique<Leadership>(
      RenewDeadline(options), options.leader_retry_period,
      std::move(callbacks));
  return absl::OkStatus();
}

absl::Status Server::StartElection(const Options& options) {
  if (storage_.pg_store == nullptr) return absl::OkStatus();
  std::string address = options.advertise_address;
  if (address.empty()) {
    char host[HOST_NAME_MAX + 1] = {};
    if (gethostname(host, sizeof(host) - 1) != 0) {
      return absl::FailedPreconditionError(
          "gethostname failed: set --advertise_address");
    }
    address = absl::StrCat(host, ":", grpc_port_);
  }
  PgLeaderElection::Options election_options;
  election_options.address = address;
  election_options.lease = options.leader_lease;
  election_options.renew_deadline = RenewDeadline(options);
  election_options.clock = storage_.database_clock;
  election_options.connection.application_name =
      absl::StrCat("accelschedd ", address);
  ASSIGN_OR_RETURN(std::unique_ptr<PgLeaderElection> election,
                   PgLeaderElection::Open(options.db, election_options));
  storage_.leadership->Start(std::move(election));
  return absl::OkStatus();
}

absl::StatusOr<std::string> Server::ReloadTenants() {
  if (files_.tenants.empty()) {
    return absl::FailedPreconditionError("no --tenants file to re-read");
  }
  ASSIGN_OR_RETURN(
      TenantPolicies next,
      LoadTenantPolicies(files_.tenants,
                         *scheduler_->nodes().accelerator_types()));
  const size_t count = next.tenants().size();
  RETURN_IF_ERROR(scheduler_->queue().SetTenantPolicies(
      std::make_shared<const TenantPolicies>(std::move(next))));
  return absl::StrCat("tenants re-read from ", files_.tenants, ": ", count,
                      " tenants");
}

absl::StatusOr<std::string> Server::ReloadAcceleratorTypes() {
  if (files_.accelerator_types.empty()) {
    return absl::FailedPreconditionError(
        "no --accelerator_types file to re-read; the built-in types stay");
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const AcceleratorTypeSet> next,
                   LoadAcceleratorTypes(files_.accelerator_types));
  const size_t types = next->types().size();
  RETURN_IF_ERROR(scheduler_->nodes().ReplaceAcceleratorTypes(std::move(next)));
  return absl::StrCat("accelerator types re-read from ",
                      files_.accelerator_types, ": ", types, " types in use");
}

void Server::StartSweeper(absl::Duration interval) {
  sweeper_.thread = std::thread([this, interval] {
    while (!sweeper_.stop.WaitForNotificationWithTimeout(interval)) {
      // Only a serving leader sweeps: a follower's or a deposed leader's
      // expiries would be refused, and a half-loaded state's be wrong.
      if (!storage_.leadership->Check().ok()) continue;
      absl::Status s = scheduler_->Sweep().status();
      if (!s.ok()) {
        std::fprintf(stderr, "accelschedd: lease sweep: %s\n",
                     std::string(s.ToString()).c_str());
      }
    }
  });
}

absl::Status Server::StartMetrics(const Options& options) {
  exporter_.registry = std::make_shared<prometheus::Registry>();
  // A node silent for longer than the heartbeat timeout is stale: so are its
  // statistics.
  device_stats_ = std::make_unique<DeviceStatsTable>(options.heartbeat_timeout);
  exporter_.metrics = std::make_unique<Metrics>(
      *exporter_.registry, scheduler_.get(), device_stats_.get(),
      options.metrics_per_device, ACCELSCHED_VERSION);
  try {
    exporter_.exposer =
        std::make_unique<prometheus::Exposer>(options.metrics_listen);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on \"",
                                               options.metrics_listen,
                                               "\": ", e.what()));
  }
  exporter_.metrics->SetLeader(storage_.leadership->Check().ok(), 0);
  exporter_.exposer->RegisterCollectable(exporter_.registry);
  exporter_.exposer->RegisterCollectable(
      exporter_.metrics->catalog_collector());
  exporter_.exposer->RegisterCollectable(
      exporter_.metrics->device_stats_collector());
  std::vector<int> ports = exporter_.exposer->GetListeningPorts();
  exporter_.port = ports.empty() ? 0 : ports.front();
  return absl::OkStatus();
}

namespace {

absl::StatusOr<std::string> ReadPem(const std::string& path,
                                    absl::string_view flag) {
  std::ifstream in(path, std::ios::binary);
  std::string pem(std::istreambuf_iterator<char>(in), {});
  if (!in.good() && !in.eof()) pem.clear();
  if (pem.find("-----BEGIN") == std::string::npos) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot read a PEM file from ", flag, " \"", path, "\""));
  }
  return pem;
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Server::Credentials(
    const Options& options) {
  if (options.tls_cert.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions ssl;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  ASSIGN_OR_RETURN(pair.cert_chain, ReadPem(options.tls_cert, "--tls_cert"));
  ASSIGN_OR_RETURN(pair.private_key, ReadPem(options.tls_key, "--tls_key"));
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  if (!options.tls_client_ca.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_root_certs,
                     ReadPem(options.tls_client_ca, "--tls_client_ca"));
    // Optional but verified: allocation clients need no certificate; catalog
    // changes do (AdminAuth), unless they carry the admin token.
    ssl.client_certificate_request =
        GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

absl::Status Server::StartGrpc(const Options& options) {
  grpc::EnableDefaultHealthCheckService(true);
  // libgrpc++'s health service carries no protobuf descriptors; touching ours
  // keeps the linker from dropping them, so reflection (`grpcurl describe`) can
  // show the service.
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  std::string token;
  if (!options.admin_token_file.empty()) {
    ASSIGN_OR_RETURN(token, AdminAuth::ReadTokenFile(options.admin_token_file));
  }
  auth_ = std::make_unique<AdminAuth>(std::move(token),
                                      !options.tls_client_ca.empty());
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                   Credentials(options));
  service_ = std::make_unique<SchedulerService>(
      scheduler_.get(), exporter_.metrics.get(), auth_.get(), options.placement,
      device_stats_.get(), storage_.leadership.get());
  grpc::ServerBuilder builder;
  // Without this, Linux's SO_REUSEPORT would let a second server share a busy
  // port silently.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(kMaxRequestBytes);
  builder.AddListeningPort(options.listen, credentials, &grpc_port_);
  builder.RegisterService(service_.get());
  grpc_server_ = builder.BuildAndStart();
  if (grpc_server_ == nullptr || grpc_port_ == 0) {
    grpc_server_.reset();
    return absl::UnavailableError(
        absl::StrCat("cannot serve gRPC on \"", options.listen,
                     "\" (address in use, or not a valid host:port)"));
  }
  grpc::HealthCheckServiceInterface* health =
      grpc_server_->GetHealthCheckService();
  // The overall status first: setting it sets every service's. A replica's
  // service serves once elected (Leadership's serving callback).
  health->SetServingStatus(true);
  health->SetServingStatus(v1::AcceleratorScheduler::service_full_name(),
                           storage_.leadership->Check().ok());
  return absl::OkStatus();
}

void Server::Shutdown(absl::Duration grace) {
  // The metrics endpoint (civetweb) takes one to two seconds to stop, waiting
  // out its polls: let it do so while gRPC stops. Its collectors read the
  // scheduler, which goes after it.
  std::thread stop_metrics([this] { exporter_.exposer.reset(); });
  // No promotion, renewal or health change from here on; still leader (if it
  // was) until every write in flight has committed.
  if (storage_.leadership != nullptr) storage_.leadership->Stop();
  if (grpc_server_ != nullptr) {
    grpc_server_->GetHealthCheckService()->SetServingStatus(false);
    // Watch streams would otherwise run to the grace deadline.
    scheduler_->events().Close();
    const absl::Time deadline = absl::Now() + grace;
    // grpc::Server::Shutdown refuses new calls and lets those in flight
    // finish, but then also waits for every client's connection to close, up
    // to the deadline, and a connected client that is not reading (a
    // synchronous one between calls) keeps its connection open. So: start
    // the shutdown in gRPC's core (idempotent: the C++ server's own call
    // later is notified at once), wait for our calls in flight, then cancel
    // what is left, which closes those connections.
    grpc_server* core = grpc_server_->c_server();
    grpc_completion_queue* notified =
        grpc_completion_queue_create_for_pluck(nullptr);
    int tag = 0;
    grpc_server_shutdown_and_notify(core, notified, &tag);
    service_->AwaitIdle(deadline);
    grpc_server_cancel_all_calls(core);
    grpc_server_->Shutdown(absl::ToChronoTime(deadline));
    grpc_server_->Wait();
    // Shut down: our tag is there, then the queue's end. Neither wait can
    // time out; anything else would be gRPC's bug, worth a line in the log.
    const grpc_event shut = grpc_completion_queue_pluck(
        notified, &tag, gpr_inf_future(GPR_CLOCK_REALTIME), nullptr);
    grpc_completion_queue_shutdown(notified);
    const grpc_event end = grpc_completion_queue_pluck(
        notified, nullptr, gpr_inf_future(GPR_CLOCK_REALTIME), nullptr);
    if (shut.type != GRPC_OP_COMPLETE || end.type != GRPC_QUEUE_SHUTDOWN) {
      std::fprintf(stderr,
                   "accelschedd: unexpected gRPC shutdown events %d, %d\n",
                   static_cast<int>(shut.type), static_cast<int>(end.type));
    }
    grpc_completion_queue_destroy(notified);
    grpc_server_.reset();
  }
  if (sweeper_.thread.joinable()) {
    sweeper_.stop.Notify();
    sweeper_.thread.join();
  }
  // No scrape may read the scheduler once it is gone, and destroying it drains
  // its commit queue, whose commits still report to metrics: metrics go last.
  stop_metrics.join();
  scheduler_.reset();
  exporter_.metrics.reset();
  // Everything acknowledged is committed: a follower may take over now.
  if (storage_.leadership != nullptr) storage_.leadership->Resign();
}

}  // namespace accelsched
