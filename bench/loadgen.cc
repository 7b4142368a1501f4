// loadgen: drives a real accelschedd on a real SQLite file over gRPC and
// compares it with the floors of the same run: Health/Check served by the same
// server to the same callers, and one fsync'd SQLite commit (the physical
// limit of one durable write). Then it opens --watchers WatchEvents streams
// and runs the widest load again: the server's threads and memory, throughput
// with them, and how long an event takes from commit to a watcher. Last, the
// same loads against a server that commits on a dedicated thread
// (--commit_thread) and one that commits every call alone
// (--max_commit_batch=1).
//
//   build/bench/loadgen --seconds=5 --callers=1,8,64
//   build/bench/loadgen --startup_devices=100000      # start-up time and
//   memory
//   build/bench/loadgen --postgres                    # SQLite against a
//   private PostgreSQL 15 at the widest load
//   build/bench/loadgen --postgres --startup_devices=100000   # a new leader's
//   start-up after the old one is killed
//   build/bench/loadgen --postgres --failovers=10   # failover after kill -9
//   and after SIGSTOP of the leader, default election settings
//   build/bench/loadgen --postgres --baseline_server=OLD/accelschedd  # this
//   build's PostgreSQL throughput against an older build's, same rounds
//
// By default it starts its own server on a fresh database (synchronous=FULL);
// --target connects to a running one instead (it must be empty of allocations;
// only the caller loads run).
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

#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "accelsched/v1/accelsched.grpc.pb.h"
#include "core/commit/store.h"
#include "google/protobuf/util/time_util.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "storage/sqlite_store.h"
#include "tests/support/http_client.h"
#include "tests/support/postgres_instance.h"
#include "tests/support/server_process.h"

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
ABSL_FLAG(bool, compare_committers, true,
          "also run the narrowest and the widest load against a server with "
          "--commit_thread");
ABSL_FLAG(int, rounds, 3,
          "floor and workload take turns this many times per caller count");
ABSL_FLAG(int, watchers, 1000,
          "WatchEvents streams open during the watcher measurement (0: skip)");
ABSL_FLAG(int, fsync_commits, 1000,
          "single-write SQLite commits timed for the durable-write floor");
ABSL_FLAG(
    int, startup_devices, 0,
    "instead: fill a database with this many devices, restart, and report the "
    "time to serve and the resident memory");
ABSL_FLAG(std::string, baseline_server, "",
          "with --postgres: another accelschedd binary (an older build) "
          "measured on PostgreSQL in the same rounds, alternating");
ABSL_FLAG(int, failovers, 0,
          "with --postgres: instead, kill -9 the leader of two servers this "
          "many times and freeze it (SIGSTOP) as many, alternating, and "
          "report how long until the other serves");
ABSL_FLAG(bool, postgres, false,
          "instead: start a private PostgreSQL 15 (Debian's postgresql-15) in "
          "--dir and compare Allocate+Release at the widest --callers on "
          "SQLite and on it, servers alternating --rounds times; with "
          "--startup_devices, time a new leader taking over from a killed one");

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

void Merge(Result& into, Result from) {
  into.calls += from.calls;
  into.seconds += from.seconds;
  into.latencies_us.insert(into.latencies_us.end(), from.latencies_us.begin(),
                           from.latencies_us.end());
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
  double commit_seconds = 0;  // in the store's Apply, summed
};

CommitCounters ReadCommitCounters(int metrics_port) {
  CommitCounters c;
  absl::StatusOr<std::string> body = HttpGet(metrics_port, "/metrics");
  if (!body.ok()) return c;
  c.commits = SampleValue(*body, "accelsched_group_commit_batch_size_count");
  c.writes = SampleValue(*body, "accelsched_group_commit_batch_size_sum");
  c.commit_seconds =
      SampleValue(*body, "accelsched_sqlite_commit_duration_seconds_sum");
  return c;
}

struct Measured {
  Result floor, work;
  CommitCounters commits;
  // When each caller's Allocate was acknowledged, by allocation id.
  std::vector<std::vector<std::pair<std::string, absl::Time>>> acks;
};

// Caller t's tenant: watcher i of the watcher measurement watches tenant i.
std::string Tenant(int t) { return absl::StrCat("t", t); }

// The workload only, by `callers` callers on `stubs`; adds to m->acks (one
// vector per caller).
Result Workload(std::vector<std::unique_ptr<Stub>>& stubs, int callers,
                double seconds, const std::string& tag, Measured* m) {
  // Allocate then Release; each is one call. Latency is Allocate's.
  return Run(callers, seconds, [&](int t, int64_t i, std::vector<double>& lat) {
    v1::AllocateRequest req;
    req.set_request_id(absl::StrCat(tag, "-", t, "-", i));
    req.mutable_accelerator()->set_device("nvidia-tesla-t4");
    req.set_tenant(Tenant(t));
    v1::Allocation a;
    grpc::ClientContext ctx;
    const absl::Time start = absl::Now();
    grpc::Status s = stubs[t]->Allocate(&ctx, req, &a);
    const absl::Time acked = absl::Now();
    if (!s.ok()) {
      std::fprintf(stderr, "allocate: %s\n", s.error_message().c_str());
      return 0;
    }
    lat.push_back(absl::ToDoubleMicroseconds(acked - start));
    m->acks[t].emplace_back(a.id(), acked);
    v1::ReleaseRequest rel;
    rel.set_allocation_id(a.id());
    v1::Allocation released;
    grpc::ClientContext ctx2;
    return stubs[t]->Release(&ctx2, rel, &released).ok() ? 2 : 1;
  });
}

// `count` stubs over `connections` channels (default: one per stub, at most
// 8).
std::vector<std::unique_ptr<Stub>> Stubs(const std::string& target, int count,
                                         int connections = 0) {
  auto channels =
      Channels(target, connections > 0 ? connections : std::min(count, 8));
  std::vector<std::unique_ptr<Stub>> stubs;
  for (int t = 0; t < count; ++t) {
    stubs.push_back(
        v1::AcceleratorScheduler::NewStub(channels[t % channels.size()]));
  }
  return stubs;
}

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
  // Floor and workload take turns, so that a change in the machine's speed
  // (it is shared) weighs on both alike.
  Measured m;
  m.acks.assign(callers, {});
  const int rounds = std::max(1, absl::GetFlag(FLAGS_rounds));
  for (int round = 0; round < rounds; ++round) {
    Merge(m.floor, Run(callers, seconds / rounds,
                       [&](int t, int64_t, std::vector<double>& lat) {
                         grpc::ClientContext ctx;
                         grpc::health::v1::HealthCheckRequest req;
                         grpc::health::v1::HealthCheckResponse resp;
                         const absl::Time start = absl::Now();
                         grpc::Status s = health[t]->Check(&ctx, req, &resp);
                         lat.push_back(Micros(start));
                         return s.ok() ? 1 : 0;
                       }));
    const CommitCounters before = ReadCommitCounters(metrics_port);
    Merge(m.work, Workload(stubs, callers, seconds / rounds,
                           absl::StrCat(tag, "-", round), &m));
    const CommitCounters after = ReadCommitCounters(metrics_port);
    m.commits.commits += after.commits - before.commits;
    m.commits.writes += after.writes - before.writes;
    m.commits.commit_seconds += after.commit_seconds - before.commit_seconds;
  }
  return m;
}

std::unique_ptr<ServerProcess> StartServer(
    const std::string& db, const std::vector<std::string>& flags,
    const std::string& binary = ServerProcess::ServerPath()) {
  if (db.find("://") == std::string::npos) {  // a SQLite file
    std::filesystem::remove(db);
    std::filesystem::remove(db + "-wal");
    std::filesystem::remove(db + "-shm");
  }
  auto server = ServerProcess::Start(db, flags, {}, binary);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string(server.status().message()).c_str());
    std::exit(1);
  }
  return std::move(*server);
}

void Print(const char* what, Result& r) {
  std::printf(
      "  %-34s %9.0f calls/s  p50 %7.0f us  p99 %7.0f us  p999 %7.0f us\n",
      what, r.per_second(), r.quantile(0.5), r.quantile(0.99),
      r.quantile(0.999));
}

// A field of /proc/<pid>/status ("VmRSS", "Threads"): its number, -1 when
// missing.
int64_t ProcStatus(pid_t pid, const std::string& field) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      return std::stoll(line.substr(field.size() + 1));
    }
  }
  return -1;
}

int64_t ResidentKiB(pid_t pid) { return ProcStatus(pid, "VmRSS"); }

// The physical limit of one durable write: single-write transactions through
// the server's own store on a fresh file in the same directory (WAL,
// synchronous=FULL: each commit is one fsync of the WAL).
Result FsyncFloor(const std::string& dir, int commits) {
  const std::string db = dir + "/fsync-floor.db";
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::filesystem::remove(db + suffix);
  }
  absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(db);
  Result r;
  if (!store.ok()) {
    std::fprintf(stderr, "fsync floor: %s\n",
                 std::string(store.status().message()).c_str());
    return r;
  }
  const absl::Time begin = absl::Now();
  for (int i = 1; i <= commits; ++i) {
    const absl::Time start = absl::Now();
    absl::Status s =
        (*store)->Apply({PutEventSequenceMutation{static_cast<uint64_t>(i)}});
    r.latencies_us.push_back(Micros(start));
    if (!s.ok()) {
      std::fprintf(stderr, "fsync floor: %s\n",
                   std::string(s.message()).c_str());
      break;
    }
    ++r.calls;
  }
  r.seconds = absl::ToDoubleSeconds(absl::Now() - begin);
  return r;
}

// One WatchEvents stream on the client's callback API (no thread of its own):
// notes when each ALLOCATED event arrives.
class WatchClient final : public grpc::ClientReadReactor<v1::Event> {
 public:
  struct Receipt {
    std::string allocation_id;
    absl::Time event_time;  // the server's, stamped before the commit
    absl::Time received;
  };

  WatchClient(Stub* stub, const std::string& tenant) {
    request_.set_tenant(tenant);
    stub->async()->WatchEvents(&ctx_, &request_, this);
    StartRead(&event_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows
    const absl::Time now = absl::Now();
    ++events_;
    if (event_.type() == v1::Event::ALLOCATED) {
      receipts_.push_back(
          {event_.allocation().id(),
           absl::FromUnixNanos(
               google::protobuf::util::TimeUtil::TimestampToNanoseconds(
                   event_.time())),
           now});
    }
    StartRead(&event_);
  }
  void OnDone(const grpc::Status& s) override {
    absl::MutexLock lock(&mu_);
    status_ = s;
    done_ = true;
  }
  // Cancels the stream and waits until gRPC is done with it.
  grpc::Status Stop() {
    ctx_.TryCancel();
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&done_));
    return status_;
  }
  // Valid after Stop.
  const std::vector<Receipt>& receipts() const { return receipts_; }
  int64_t events() const { return events_; }

 private:
  grpc::ClientContext ctx_;
  v1::WatchEventsRequest request_;
  v1::Event event_;
  // Touched by one read at a time, then read after Stop.
  std::vector<Receipt> receipts_;
  int64_t events_ = 0;
  absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
};

// Waits until the server's accelsched_watchers gauge reads `n` (the streams
// are subscribed), up to 30 s.
bool AwaitWatchers(int metrics_port, int n) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    absl::StatusOr<std::string> body = HttpGet(metrics_port, "/metrics");
    if (body.ok() && SampleValue(*body, "accelsched_watchers") == n) {
      return true;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return false;
}

struct Footprint {
  int64_t threads, rss_kib;
};

Footprint FootprintOf(pid_t pid) {
  return {ProcStatus(pid, "Threads"), ResidentKiB(pid)};
}

// `n` streams on `stubs` in turn: watcher i on tenant i with `deliver` (the
// callers' tenants), else on a tenant nobody uses.
void OpenWatchers(std::vector<std::unique_ptr<Stub>>& stubs, int n,
                  bool deliver,
                  std::vector<std::unique_ptr<WatchClient>>& clients) {
  for (int i = 0; i < n; ++i) {
    clients.push_back(std::make_unique<WatchClient>(
        stubs[i % stubs.size()].get(),
        deliver ? Tenant(i) : absl::StrCat("idle-", i)));
  }
}

// Cancels clients[first...]; returns how many ended otherwise (a watcher
// dropped for falling behind would leave receipts out), and says so.
int StopWatchers(std::vector<std::unique_ptr<WatchClient>>& clients,
                 size_t first) {
  int ended_otherwise = 0;
  for (size_t c = first; c < clients.size(); ++c) {
    grpc::Status ended = clients[c]->Stop();
    if (ended.error_code() != grpc::StatusCode::CANCELLED) {
      ++ended_otherwise;
      std::fprintf(stderr, "a watch stream ended: %s\n",
                   ended.error_message().c_str());
    }
  }
  return ended_otherwise;
}

// What `watchers` idle streams cost the server, on a heap no load has grown
// yet (freed memory that a load left behind would hide it): threads and
// resident memory before, with them open, and after they ended.
void MeasureWatcherFootprint(ServerProcess& server, int watchers) {
  const pid_t pid = server.pid();
  auto stubs = Stubs(server.grpc_address(), 10, 10);
  const Footprint before = FootprintOf(pid);
  std::vector<std::unique_ptr<WatchClient>> clients;
  OpenWatchers(stubs, watchers, /*deliver=*/false, clients);
  const bool counted = AwaitWatchers(server.metrics_port(), watchers);
  const Footprint open = FootprintOf(pid);
  StopWatchers(clients, 0);
  const bool freed = AwaitWatchers(server.metrics_port(), 0);
  const Footprint after = FootprintOf(pid);
  std::printf(
      "%d WatchEvents streams on a fresh server (%s): threads %lld before, "
      "%lld with them, %lld after; resident memory %.1f MiB before, %.1f MiB "
      "with them: %.1f KiB per watcher; %.1f MiB after they ended (%s)\n",
      watchers, counted ? "all subscribed" : "NOT all subscribed",
      static_cast<long long>(before.threads),
      static_cast<long long>(open.threads),
      static_cast<long long>(after.threads), before.rss_kib / 1024.0,
      open.rss_kib / 1024.0,
      static_cast<double>(open.rss_kib - before.rss_kib) / watchers,
      after.rss_kib / 1024.0, freed ? "all freed" : "NOT all freed");
}

// The widest load without watchers, then with --watchers streams open: with
// `deliver`, watcher i watches tenant i, and the callers' tenants are the
// first ones, so each of their events reaches one watcher and the others wait
// idle, as a watch per task would; without, no event reaches any.
void MeasureWatchers(ServerProcess& server, int watchers, int callers,
                     double seconds, bool deliver) {
  const pid_t pid = server.pid();
  auto stubs = Stubs(server.grpc_address(), 10, 10);
  auto work_stubs = Stubs(server.grpc_address(), callers);
  // The load without and with the watchers take turns (--rounds), the
  // watchers opened and ended each time; the footprint is the first round's.
  Measured plain, m;
  plain.acks.assign(callers, {});
  m.acks.assign(callers, {});
  Result without;
  Footprint before{}, idle{}, loaded{};
  bool freed = true;
  int ended_otherwise = 0;
  std::vector<std::unique_ptr<WatchClient>> clients;
  const int rounds = std::max(1, absl::GetFlag(FLAGS_rounds));
  for (int round = 0; round < rounds; ++round) {
    const std::string tag = absl::StrCat(deliver ? "d" : "i", round);
    Merge(without, Workload(work_stubs, callers, seconds / rounds,
                            "unwatched-" + tag, &plain));
    if (round == 0) before = FootprintOf(pid);
    const size_t first = clients.size();
    OpenWatchers(stubs, watchers, deliver, clients);
    if (!AwaitWatchers(server.metrics_port(), watchers)) {
      std::fprintf(stderr, "the server never counted %d watchers\n", watchers);
    }
    if (round == 0) idle = FootprintOf(pid);
    Merge(m.work, Workload(work_stubs, callers, seconds / rounds,
                           "watched-" + tag, &m));
    if (round == 0) loaded = FootprintOf(pid);
    ended_otherwise += StopWatchers(clients, first);
    freed = AwaitWatchers(server.metrics_port(), 0) && freed;
  }

  // Commit to receipt: from the event's time (stamped before its commit, so
  // this includes the commit) and from the caller's acknowledgement (which
  // follows the commit; negative when the event came first).
  absl::flat_hash_map<std::string, absl::Time> acked;
  for (const auto& per_caller : m.acks) {
    for (const auto& [id, when] : per_caller) acked[id] = when;
  }
  Result from_event, from_ack;
  int64_t events = 0;
  for (const auto& c : clients) {
    events += c->events();
    for (const WatchClient::Receipt& r : c->receipts()) {
      from_event.latencies_us.push_back(
          absl::ToDoubleMicroseconds(r.received - r.event_time));
      auto it = acked.find(r.allocation_id);
      if (it != acked.end()) {
        from_ack.latencies_us.push_back(
            absl::ToDoubleMicroseconds(r.received - it->second));
      }
    }
  }
  std::printf("%d caller%s with %d WatchEvents streams open (%s):\n", callers,
              callers == 1 ? "" : "s", watchers,
              deliver ? "watcher i on tenant i: each caller's events reach one"
                      : "on tenants nobody uses: no event reaches them");
  Print("Allocate+Release (latency: Alloc.)", m.work);
  std::printf(
      "  throughput %.2f of the same load without watchers (%.0f calls/s)\n",
      m.work.per_second() / without.per_second(), without.per_second());
  std::printf(
      "  server threads: %lld before the watchers, %lld with them idle, %lld "
      "after the load with them\n",
      static_cast<long long>(before.threads),
      static_cast<long long>(idle.threads),
      static_cast<long long>(loaded.threads));
  std::printf(
      "  once cancelled, the server counts 0 watchers: %s; streams that ended "
      "otherwise: %d\n",
      freed ? "yes" : "NO", ended_otherwise);
  std::printf(
      "  %lld events delivered; ALLOCATED event to its watcher: p50 %.0f us, "
      "p99 %.0f us after the event's time (its commit included); p50 %.0f us, "
      "p99 %.0f us after the caller's acknowledgement\n",
      static_cast<long long>(events), from_event.quantile(0.5),
      from_event.quantile(0.99), from_ack.quantile(0.5),
      from_ack.quantile(0.99));
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

void PrintLoad(int n, Measured& m) {
  std::printf("%d caller%s:\n", n, n == 1 ? "" : "s");
  Print("Health/Check (floor)", m.floor);
  Print("Allocate+Release (latency: Alloc.)", m.work);
  std::printf(
      "  ratio: throughput %.2f of the floor; Allocate p99 %.2fx the "
      "floor's\n",
      m.work.per_second() / m.floor.per_second(),
      m.work.quantile(0.99) / std::max(1.0, m.floor.quantile(0.99)));
  if (m.commits.commits > 0) {
    std::printf(
        "  group commit: %.0f commits/s, %.1f writes per commit, %.0f us per "
        "commit\n",
        m.commits.commits / m.work.seconds,
        m.commits.writes / m.commits.commits,
        1e6 * m.commits.commit_seconds / m.commits.commits);
  }
}

// A private PostgreSQL in `dir`, or exits.
std::unique_ptr<PostgresInstance> StartPostgres(const std::string& dir) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  absl::StatusOr<std::unique_ptr<PostgresInstance>> pg =
      PostgresInstance::Start(dir);
  if (!pg.ok()) {
    std::fprintf(stderr, "%s\n", pg.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*pg);
}

// A fresh database on `pg`, or exits.
std::string FreshDatabase(PostgresInstance& pg, const std::string& name) {
  absl::StatusOr<std::string> uri = pg.CreateDatabase(name);
  if (!uri.ok()) {
    std::fprintf(stderr, "%s\n", uri.status().ToString().c_str());
    std::exit(1);
  }
  return *uri;
}

// Polls GetCapacity until it answers OK (a follower answers UNAVAILABLE);
// the answer.
v1::GetCapacityResponse AwaitServing(Stub& stub) {
  for (;;) {
    v1::GetCapacityResponse capacity;
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    if (stub.GetCapacity(&ctx, v1::GetCapacityRequest(), &capacity).ok()) {
      return capacity;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
}

// Two servers on one PostgreSQL database filled with `devices`; the leader
// is killed, and the time until the other answers is the new leader's
// start-up: noticing, taking over, loading everything.
int PostgresStartup(int devices) {
  const std::string dir = absl::GetFlag(FLAGS_dir);
  std::unique_ptr<PostgresInstance> pg = StartPostgres(dir + "/pg");
  const std::string uri = FreshDatabase(*pg, "startup");
  auto leader = StartServer(uri, {});
  auto follower = StartServer(uri, {});
  const int nodes = (devices + 7) / 8;
  const absl::Time fill = absl::Now();
  RegisterNodes(leader->grpc_address(), nodes);
  std::printf("filled %d nodes x 8 devices on PostgreSQL in %.1f s\n", nodes,
              absl::ToDoubleSeconds(absl::Now() - fill));
  auto stub = v1::AcceleratorScheduler::NewStub(grpc::CreateChannel(
      follower->grpc_address(), grpc::InsecureChannelCredentials()));
  const absl::Time killed = absl::Now();
  leader->Stop(SIGKILL);
  v1::GetCapacityResponse capacity = AwaitServing(*stub);
  const double serving = absl::ToDoubleSeconds(absl::Now() - killed);
  std::printf(
      "new leader with %lld devices: first GetCapacity answered %.3f s after "
      "the old leader's kill -9 (%lld units); resident memory %.1f MiB\n",
      static_cast<long long>(nodes) * 8, serving,
      capacity.entries_size()
          ? static_cast<long long>(capacity.entries(0).total())
          : 0LL,
      ResidentKiB(follower->pid()) / 1024.0);
  follower->Stop(SIGTERM);
  return 0;
}

// Two servers on one PostgreSQL database with the default election settings
// (--leader_lease=10s, --leader_retry_period=250ms); the leader killed (-9)
// `n` times and frozen (SIGSTOP) `n` times, alternating, and each time the
// time until the other answers GetCapacity. A frozen one is thawed after,
// finds that it lost and exits 1; the killed or exited one is started again
// as the follower.
int PostgresFailovers(int n) {
  const std::string dir = absl::GetFlag(FLAGS_dir);
  std::unique_ptr<PostgresInstance> pg = StartPostgres(dir + "/pg");
  const std::string uri = FreshDatabase(*pg, "failover");
  std::unique_ptr<ServerProcess> servers[2];
  auto stub_of = [](const ServerProcess& server) {
    return v1::AcceleratorScheduler::NewStub(grpc::CreateChannel(
        server.grpc_address(), grpc::InsecureChannelCredentials()));
  };
  servers[0] = StartServer(uri, {});
  AwaitServing(*stub_of(*servers[0]));
  servers[1] = StartServer(uri, {});
  RegisterNodes(servers[0]->grpc_address(), 8);
  std::vector<double> killed, frozen;
  int leader = 0;
  for (int i = 0; i < 2 * n; ++i) {
    const bool freeze = i % 2 == 1;
    auto next = stub_of(*servers[1 - leader]);
    const absl::Time at = absl::Now();
    if (freeze) {
      kill(servers[leader]->pid(), SIGSTOP);
    } else {
      servers[leader]->Stop(SIGKILL);
    }
    AwaitServing(*next);
    (freeze ? frozen : killed)
        .push_back(absl::ToDoubleSeconds(absl::Now() - at));
    if (freeze) {
      kill(servers[leader]->pid(), SIGCONT);
      servers[leader]->Stop(0);  // it exits by itself
    }
    servers[leader] = StartServer(uri, {});
    leader = 1 - leader;
  }
  auto report = [n](const char* what, std::vector<double>& t, double bound) {
    std::sort(t.begin(), t.end());
    std::printf(
        "%s, %d times: min %.3f s, median %.3f s, max (p99) %.3f s; the "
        "target %.1f s %s\n",
        what, n, t.front(), t[t.size() / 2], t.back(), bound,
        t.back() <= bound ? "met" : "MISSED");
  };
  report("failover after kill -9 of the leader", killed, 1.0);
  report("failover after SIGSTOP of the leader", frozen, 10.0 + 1.0);
  return 0;
}

// Allocate+Release at `callers` on SQLite and on PostgreSQL, each on a fresh
// database, servers alternating.
int ComparePostgres(int callers, double seconds) {
  const std::string dir = absl::GetFlag(FLAGS_dir);
  std::filesystem::create_directories(dir);
  std::unique_ptr<PostgresInstance> pg = StartPostgres(dir + "/pg");
  const int rounds = std::max(1, absl::GetFlag(FLAGS_rounds));
  std::printf(
      "%d callers, %.1f s per measurement, %d rounds; SQLite synchronous=FULL "
      "in %s; PostgreSQL 15 on loopback, synchronous_commit=on, fsync=on\n",
      callers, seconds, rounds, dir.c_str());
  // Engine 2: PostgreSQL served by --baseline_server, when given.
  const std::string baseline = absl::GetFlag(FLAGS_baseline_server);
  const int engines = baseline.empty() ? 2 : 3;
  double per_floor[3] = {0, 0, 0};
  double per_second[3] = {0, 0, 0};
  for (int round = 0; round < rounds; ++round) {
    for (int engine = 0; engine < engines; ++engine) {
      const std::string db =
          engine == 0
              ? dir + "/compare.db"
              : FreshDatabase(*pg, absl::StrCat("compare", round, "_", engine));
      auto server = StartServer(
          db, {}, engine == 2 ? baseline : ServerProcess::ServerPath());
      if (engine >= 1) {
        auto stub = v1::AcceleratorScheduler::NewStub(grpc::CreateChannel(
            server->grpc_address(), grpc::InsecureChannelCredentials()));
        AwaitServing(*stub);
      }
      RegisterNodes(server->grpc_address(), 64);
      Measured m = Measure(server->grpc_address(), server->metrics_port(),
                           callers, seconds, absl::StrCat("r", round));
      std::printf("round %d, %s:\n", round,
                  engine == 0   ? "SQLite"
                  : engine == 1 ? "PostgreSQL"
                                : "PostgreSQL, baseline server");
      PrintLoad(callers, m);
      per_second[engine] += m.work.per_second() / rounds;
      per_floor[engine] += m.work.per_second() / m.floor.per_second() / rounds;
      server->Stop(SIGTERM);
    }
  }
  std::printf(
      "Allocate+Release, mean of %d rounds: SQLite %.0f calls/s, PostgreSQL "
      "%.0f calls/s: PostgreSQL/SQLite %.2f (each divided by its own health "
      "floor first: %.2f)\n",
      rounds, per_second[0], per_second[1], per_second[1] / per_second[0],
      per_floor[1] / per_floor[0]);
  if (engines == 3) {
    std::printf(
        "PostgreSQL, this build against --baseline_server: %.0f against %.0f "
        "calls/s: %.3f (each divided by its own health floor first: %.3f)\n",
        per_second[1], per_second[2], per_second[1] / per_second[2],
        per_floor[1] / per_floor[2]);
  }
  return 0;
}

int Main() {
  if (absl::GetFlag(FLAGS_postgres) && absl::GetFlag(FLAGS_failovers) > 0) {
    return PostgresFailovers(absl::GetFlag(FLAGS_failovers));
  }
  if (absl::GetFlag(FLAGS_postgres) &&
      absl::GetFlag(FLAGS_startup_devices) > 0) {
    return PostgresStartup(absl::GetFlag(FLAGS_startup_devices));
  }
  if (absl::GetFlag(FLAGS_startup_devices) > 0) {
    return Startup(absl::GetFlag(FLAGS_startup_devices));
  }
  std::vector<int> callers;
  for (absl::string_view c :
       absl::StrSplit(absl::GetFlag(FLAGS_callers), ',')) {
    int n = 0;
    if (absl::SimpleAtoi(c, &n) && n > 0) callers.push_back(n);
  }
  if (callers.empty()) {
    std::fprintf(stderr, "--callers names no caller count\n");
    return 1;
  }
  const double seconds = absl::GetFlag(FLAGS_seconds);
  if (absl::GetFlag(FLAGS_postgres)) {
    return ComparePostgres(callers.back(), seconds);
  }
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
  if (server != nullptr && absl::GetFlag(FLAGS_watchers) > 0) {
    MeasureWatcherFootprint(*server, absl::GetFlag(FLAGS_watchers));
  }
  Result fsync = FsyncFloor(dir, absl::GetFlag(FLAGS_fsync_commits));
  std::printf("one fsync'd SQLite commit (the store, one write):\n");
  Print("commit", fsync);
  auto vs_fsync = [&](Measured& m) {
    std::printf("  Allocate p50 %.2fx one fsync'd commit's p50\n",
                m.work.quantile(0.5) / std::max(1.0, fsync.quantile(0.5)));
  };
  // The committer thread's server runs beside the first, and is measured
  // right after it at the narrowest and the widest load.
  std::unique_ptr<ServerProcess> threaded;
  if (server != nullptr && absl::GetFlag(FLAGS_compare_committers)) {
    threaded = StartServer(dir + "/loadgen-thread.db", {"--commit_thread"});
    RegisterNodes(threaded->grpc_address(), 64);
  }
  for (int n : callers) {
    Measured m =
        Measure(target, metrics_port, n, seconds, absl::StrCat("c", n));
    PrintLoad(n, m);
    if (n == 1) vs_fsync(m);
    if (threaded != nullptr && (n == callers.front() || n == callers.back())) {
      Measured t = Measure(threaded->grpc_address(), threaded->metrics_port(),
                           n, seconds, absl::StrCat("thread", n));
      std::printf("  the same with a committer thread (--commit_thread):\n  ");
      PrintLoad(n, t);
      if (n == 1) vs_fsync(t);
    }
  }
  if (threaded != nullptr) threaded->Stop(SIGTERM);
  const int n = callers.back();
  if (server == nullptr) return 0;
  if (const int watchers = absl::GetFlag(FLAGS_watchers); watchers > 0) {
    for (bool deliver : {false, true}) {
      MeasureWatchers(*server, watchers, n, seconds, deliver);
    }
    // Delivery latency without queueing behind a saturated machine.
    if (callers.front() < n) {
      MeasureWatchers(*server, watchers, callers.front(), seconds, true);
    }
  }
  server->Stop(SIGTERM);
  if (absl::GetFlag(FLAGS_compare_batching)) {
    auto baseline =
        StartServer(dir + "/loadgen-nobatch.db", {"--max_commit_batch=1"});
    RegisterNodes(baseline->grpc_address(), 64);
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
  // As in the server (services/main.cc): no lock-order graph in the client's
  // share of the CPU.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return accelsched::Main();
}
