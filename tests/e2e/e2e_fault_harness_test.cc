// The fault harness: three real accelschedd replicas on one real PostgreSQL
// 15, each reaching it through a TCP proxy the test can cut; clients calling
// every replica, retrying UNAVAILABLE and DEADLINE_EXCEEDED with the same
// request id, every call recorded; faults drawn from a seeded schedule; then
// a checker that reads the database itself (as Jepsen's and etcd's
// robustness tests check a recorded history).
//
// ACCELSCHED_FAULT_SEED (default 1) and ACCELSCHED_FAULTS (default 10: each
// kind once, in the seed's order; more draws kinds at random) choose the
// schedule. A frozen leader inside a batch larger than 8 KiB and a follower
// frozen at a chosen statement of its takeover are pinned down exactly in
// tests/storage/pg_store_test.cc; here they land where the schedule drops
// them.
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "accelsched/v1/accelsched.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/clock_offset.h"
#include "tests/support/e2e_fixture.h"
#include "tests/support/postgres_instance.h"
#include "tests/support/scheduler_health.h"
#include "tests/support/server_process.h"
#include "tests/support/status_matchers.h"
#include "tests/support/tcp_proxy.h"
#include "tests/support/temp_dir.h"

namespace accelsched {
namespace {

using Stub = v1::AcceleratorScheduler::Stub;

constexpr char kModel[] = "nvidia-tesla-t4";
constexpr absl::Duration kLease = absl::Seconds(2);
constexpr int kReplicas = 3;
constexpr int kClients = 12;
// Writes resume within this many leases after each fault. Under
// AddressSanitizer every server runs several times slower: there the bound
// is three leases, and the claim of two is the plain build's.
#ifdef __SANITIZE_ADDRESS__
constexpr int kRecoveryLeases = 3;
#else
constexpr int kRecoveryLeases = 2;
#endif
// The tolerance of the database-side overlap check: each leader's clock is
// the database's as measured at its last renewal, to half a loopback round
// trip.
constexpr absl::Duration kClockError = absl::Milliseconds(10);

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  int out = 0;
  return v != nullptr && absl::SimpleAtoi(v, &out) ? out : fallback;
}

bool Serving(const std::shared_ptr<grpc::Channel>& channel) {
  return ServesScheduler(channel, absl::Milliseconds(500));
}

// What a client retries with the same request: the server is not the
// leader, is gone, or did not answer in time.
bool Retryable(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAVAILABLE ||
         s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
         s.error_code() == grpc::StatusCode::CANCELLED;
}

// One allocation as its client saw it. Times are this process's.
struct Call {
  std::string request_id;
  std::string id;
  std::string device;
  absl::Time acked;
  // When the release was sent (infinite: never); it may commit from then on.
  absl::Time release_sent = absl::InfiniteFuture();
  bool release_acked = false;
};

// The replicas, behind one lock: the fault thread replaces them, the
// clients call them.
class Cluster {
 public:
  std::shared_ptr<Stub> stub(size_t i) {
    absl::MutexLock lock(&mu_);
    return stubs_[i % stubs_.size()];
  }
  void set_stub(size_t i, std::shared_ptr<Stub> stub) {
    absl::MutexLock lock(&mu_);
    stubs_.resize(std::max(stubs_.size(), i + 1));
    stubs_[i] = std::move(stub);
  }

 private:
  absl::Mutex mu_;
  std::vector<std::shared_ptr<Stub>> stubs_ ABSL_GUARDED_BY(mu_);
};

class History {
 public:
  // Calls `method` on one replica after another until one answers other
  // than Retryable or a minute passes. The final status; `*attempt` is when
  // the answering attempt was sent.
  template <typename Req, typename Resp>
  static grpc::Status Call(Cluster& cluster, size_t* server,
                           grpc::Status (Stub::*method)(grpc::ClientContext*,
                                                        const Req&, Resp*),
                           const Req& req, Resp* resp, absl::Time* attempt) {
    const absl::Time give_up = absl::Now() + absl::Minutes(1);
    for (;;) {
      std::shared_ptr<Stub> stub = cluster.stub(*server);
      grpc::ClientContext ctx;
      *attempt = absl::Now();
      ctx.set_deadline(absl::ToChronoTime(*attempt + absl::Seconds(2)));
      grpc::Status s = (stub.get()->*method)(&ctx, req, resp);
      if (!Retryable(s) || absl::Now() > give_up) return s;
      ++*server;
      absl::SleepFor(absl::Milliseconds(10));
    }
  }

  void Ack(absl::Time attempt, absl::Time acked) {
    absl::MutexLock lock(&mu_);
    acks_.push_back({attempt, acked});
  }
  void Fail(std::string what) {
    absl::MutexLock lock(&mu_);
    failures_.push_back(std::move(what));
  }
  // Blocks until `more` writes are acknowledged from now; false on timeout.
  bool AwaitAcks(size_t more, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    const size_t target = acks_.size() + more;
    auto reached = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return acks_.size() >= target;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&reached), timeout);
  }
  // How long after `fault` the first write sent after it was acknowledged;
  // nullopt when none was within `timeout`.
  std::optional<absl::Duration> Recovery(absl::Time fault,
                                         absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto first =
        [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> std::optional<absl::Time> {
      std::optional<absl::Time> best;
      for (const auto& [attempt, acked] : acks_) {
        if (attempt >= fault && (!best || acked < *best)) best = acked;
      }
      return best;
    };
    auto any = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return first().has_value();
    };
    if (!mu_.AwaitWithTimeout(absl::Condition(&any), timeout)) {
      return std::nullopt;
    }
    return *first() - fault;
  }
  std::vector<::accelsched::Call> calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  ::accelsched::Call call(size_t i) {
    absl::MutexLock lock(&mu_);
    return calls_[i];
  }
  size_t Record(::accelsched::Call call) {
    absl::MutexLock lock(&mu_);
    calls_.push_back(std::move(call));
    return calls_.size() - 1;
  }
  void ReleaseSent(size_t i) {
    absl::MutexLock lock(&mu_);
    calls_[i].release_sent = absl::Now();
  }
  void ReleaseAcked(size_t i) {
    absl::MutexLock lock(&mu_);
    calls_[i].release_acked = true;
  }
  std::vector<std::string> failures() {
    absl::MutexLock lock(&mu_);
    return failures_;
  }

 private:
  absl::Mutex mu_;
  std::vector<::accelsched::Call> calls_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<absl::Time, absl::Time>> acks_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> failures_ ABSL_GUARDED_BY(mu_);
};

// Client `k`: allocates a GPU, reads it back from any replica, releases the
// one it held before and reads that back, until stopped.
void RunClient(int k, Cluster& cluster, History& history,
               const std::atomic<bool>& stop) {
  size_t server = static_cast<size_t>(k);
  std::optional<size_t> previous;
  absl::Time attempt;
  for (int n = 0; !stop.load(); ++n) {
    v1::AllocateRequest req = AllocateReq(absl::StrCat("c", k, "-", n), kModel);
    req.mutable_lease()->set_seconds(3600);
    v1::Allocation a;
    const absl::Time first_attempt = absl::Now();
    grpc::Status s =
        History::Call(cluster, &server, &Stub::Allocate, req, &a, &attempt);
    if (!s.ok() || a.devices_size() != 1) {
      return history.Fail(
          absl::StrCat("Allocate ", req.request_id(), ": ", s.error_message()));
    }
    const absl::Time acked = absl::Now();
    history.Ack(attempt, acked);
    // The lease ends an hour after the leader took the request, on the true
    // clock (a leader on its own clock, a minute ahead, would say otherwise).
    const absl::Time expires = absl::FromUnixSeconds(a.expires_at().seconds());
    if (expires < first_attempt + absl::Hours(1) - absl::Seconds(5) ||
        expires > acked + absl::Hours(1) + absl::Seconds(5)) {
      history.Fail(absl::StrCat(a.id(), " expires at ",
                                absl::FormatTime(expires), ", not an hour on"));
    }
    const size_t mine = history.Record(
        {req.request_id(), a.id(), a.devices(0).device_id(), acked});
    // A read after the acknowledgement sees it, from whichever replica.
    v1::GetAllocationRequest get;
    get.set_request_id(req.request_id());
    v1::Allocation got;
    ++server;
    s = History::Call(cluster, &server, &Stub::GetAllocation, get, &got,
                      &attempt);
    if (!s.ok() || got.id() != a.id() || got.state() != v1::ACTIVE) {
      history.Fail(absl::StrCat(
          "read of ", a.id(), " after its Allocate: ",
          s.ok() ? v1::AllocationState_Name(got.state()) : s.error_message()));
    }
    if (previous.has_value()) {
      const ::accelsched::Call before = history.call(*previous);
      history.ReleaseSent(*previous);
      v1::ReleaseRequest rel;
      rel.set_allocation_id(before.id);
      v1::Allocation released;
      s = History::Call(cluster, &server, &Stub::Release, rel, &released,
                        &attempt);
      if (!s.ok()) {
        return history.Fail(
            absl::StrCat("Release ", before.id, ": ", s.error_message()));
      }
      history.Ack(attempt, absl::Now());
      history.ReleaseAcked(*previous);
      v1::GetAllocationRequest again;
      again.set_allocation_id(before.id);
      ++server;
      s = History::Call(cluster, &server, &Stub::GetAllocation, again, &got,
                        &attempt);
      if (!s.ok() || got.state() != v1::RELEASED) {
        history.Fail(absl::StrCat("read of ", before.id, " after its Release: ",
                                  s.ok() ? v1::AllocationState_Name(got.state())
                                         : s.error_message()));
      }
    }
    previous = mine;
  }
}

enum class Fault {
  kKillLeader,
  kKillFollower,
  kFreezeLeader,
  kFreezeFollower,
  kFreezeFollowerInTakeover,
  kDatabaseCrash,
  kTerminateCommit,
  kCutLeader,
  kCutFollower,
  kClockOffset,
};
constexpr int kFaultKinds = 10;

const char* Name(Fault f) {
  switch (f) {
    case Fault::kKillLeader:
      return "kill -9 leader";
    case Fault::kKillFollower:
      return "kill -9 follower";
    case Fault::kFreezeLeader:
      return "SIGSTOP leader";
    case Fault::kFreezeFollower:
      return "SIGSTOP follower";
    case Fault::kFreezeFollowerInTakeover:
      return "kill -9 leader + SIGSTOP follower in takeover";
    case Fault::kDatabaseCrash:
      return "pg_ctl restart -m immediate";
    case Fault::kTerminateCommit:
      return "pg_terminate_backend in COMMIT";
    case Fault::kCutLeader:
      return "network cut leader";
    case Fault::kCutFollower:
      return "network cut follower";
    case Fault::kClockOffset:
      return "clock offset";
  }
  return "?";
}

struct Replica {
  std::unique_ptr<TcpProxy> proxy;
  std::unique_ptr<ServerProcess> process;
  std::shared_ptr<grpc::Channel> channel;
  std::vector<std::string> environment;  // a clock offset, or none
  bool killed = false;
};

class FaultHarnessTest : public testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(pg_dir_);
    ASSERT_OK_AND_ASSIGN(pg_, PostgresInstance::Start(pg_dir_));
    for (int i = 0; i < kReplicas; ++i) {
      ASSERT_OK_AND_ASSIGN(replicas_[i].proxy, TcpProxy::Start(pg_->port()));
      ASSERT_TRUE(StartReplica(i));
    }
  }

  testing::AssertionResult StartReplica(int i) {
    Replica& r = replicas_[i];
    const std::string uri = absl::StrReplaceAll(
        pg_->Uri(), {{absl::StrCat(":", pg_->port(), "/"),
                      absl::StrCat(":", r.proxy->port(), "/")}});
    absl::StatusOr<std::unique_ptr<ServerProcess>> p = ServerProcess::Start(
        uri,
        {absl::StrCat("--leader_lease=", absl::FormatDuration(kLease)),
         "--leader_retry_period=200ms"},
        r.environment);
    if (!p.ok()) {
      return testing::AssertionFailure()
             << "replica " << i << ": " << p.status();
    }
    r.process = std::move(*p);
    r.killed = false;
    r.channel = grpc::CreateChannel(r.process->grpc_address(),
                                    grpc::InsecureChannelCredentials());
    cluster_.set_stub(i, v1::AcceleratorScheduler::NewStub(r.channel));
    return testing::AssertionSuccess();
  }

  // The serving replica; -1 when none serves within 10 s.
  int Leader() {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (absl::Now() < deadline) {
      for (int i = 0; i < kReplicas; ++i) {
        if (!replicas_[i].killed && Serving(replicas_[i].channel)) return i;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    return -1;
  }

  void Kill(int i) {
    ASSERT_GT(replicas_[i].process->pid(), 0);
    const int code = replicas_[i].process->Stop(SIGKILL);
    // 1: it had found out that it lost, and exited first.
    EXPECT_TRUE(code == 128 + SIGKILL || code == 1) << code;
    replicas_[i].killed = true;
  }
  void Signal(int i, int signal) {
    ASSERT_GT(replicas_[i].process->pid(), 0);
    ASSERT_EQ(kill(replicas_[i].process->pid(), signal), 0);
  }

  // What a supervisor does: restarts every replica that was killed or that
  // exited (a deposed leader exits 1 to come back as a follower).
  void Supervise() {
    for (int i = 0; i < kReplicas; ++i) {
      Replica& r = replicas_[i];
      if (!r.killed && r.process->WaitForOutput("lost the leadership",
                                                absl::ZeroDuration())) {
        EXPECT_TRUE(
            r.process->WaitForOutput("accelschedd: stopped", absl::Seconds(15)))
            << r.process->output();
        EXPECT_EQ(r.process->Stop(0), 1) << r.process->output();
        r.killed = true;
      }
      if (r.killed) {
        ASSERT_TRUE(StartReplica(i));
      }
    }
  }

  // Ends the sessions committing at this moment, trying for up to two
  // seconds (the statistics snapshot cleared before each look); what it
  // reports.
  std::string TerminateCommit() {
    absl::StatusOr<std::string> out = pg_->Psql(
        "CREATE TEMP TABLE ended (n int); DO $$ DECLARE n int := 0; BEGIN "
        "FOR i IN 1..2000 LOOP PERFORM pg_stat_clear_snapshot(); SELECT "
        "count(pg_terminate_backend(pid)) INTO n FROM pg_stat_activity WHERE "
        "usename = '" +
        std::string(PostgresInstance::kRole) +
        "' AND state = 'active' AND query = 'COMMIT'; "
        "EXIT WHEN n > 0; PERFORM pg_sleep(0.001); END LOOP; INSERT INTO "
        "ended VALUES (n); END $$; SELECT 'sessions ended in COMMIT: ' || n "
        "FROM ended");
    return out.ok() ? *out : std::string(out.status().message());
  }

  // After a leader was frozen or cut off and is back: waits until it has
  // found out that it lost (it then exits, and Supervise restarts it) or
  // serves on (the fault was shorter than its deadline).
  void AwaitVerdict(int i) {
    const absl::Time deadline = absl::Now() + absl::Seconds(15);
    while (absl::Now() < deadline &&
           !replicas_[i].process->WaitForOutput("lost the leadership",
                                                absl::ZeroDuration()) &&
           !Serving(replicas_[i].channel)) {
      absl::SleepFor(absl::Milliseconds(20));
    }
  }

  void Inject(Fault f, std::mt19937& rng, History& history) {
    Supervise();
    if (HasFatalFailure()) return;
    auto between = [&rng](int lo_ms, int hi_ms) {
      return absl::Milliseconds(
          std::uniform_int_distribution<int>(lo_ms, hi_ms)(rng));
    };
    const int leader = Leader();
    ASSERT_GE(leader, 0) << "no leader before the fault";
    const int follower =
        (leader + 1 + std::uniform_int_distribution<int>(0, 1)(rng)) %
        kReplicas;
    absl::Time at = absl::Now();
    switch (f) {
      case Fault::kKillLeader:
        Kill(leader);
        break;
      case Fault::kKillFollower:
        Kill(follower);
        break;
      case Fault::kFreezeLeader:
      case Fault::kFreezeFollower: {
        const int i = f == Fault::kFreezeLeader ? leader : follower;
        Signal(i, SIGSTOP);
        absl::SleepFor(between(300, 4000));
        Signal(i, SIGCONT);
        if (i == leader) AwaitVerdict(i);
        break;
      }
      case Fault::kFreezeFollowerInTakeover:
        Kill(leader);
        // The followers campaign every 200 ms and at once when the killed
        // session is gone: this lands in one's takeover or just before it.
        absl::SleepFor(between(0, 300));
        Signal(follower, SIGSTOP);
        absl::SleepFor(kLease + kLease / 2);
        Signal(follower, SIGCONT);
        // It may have won before it froze.
        AwaitVerdict(follower);
        break;
      case Fault::kDatabaseCrash:
        ASSERT_OK(pg_->Crash());
        // From when it is down: writes acknowledged while pg_ctl stopped it
        // do not count.
        at = absl::Now();
        ASSERT_OK(pg_->Start());
        break;
      case Fault::kTerminateCommit:
        std::printf("fault harness: %s\n", TerminateCommit().c_str());
        break;
      case Fault::kCutLeader:
      case Fault::kCutFollower: {
        const int i = f == Fault::kCutLeader ? leader : follower;
        replicas_[i].proxy->Cut();
        absl::SleepFor(between(500, 4000));
        replicas_[i].proxy->Heal();
        if (i == leader) AwaitVerdict(i);
        break;
      }
      case Fault::kClockOffset: {
        // A follower comes back a minute ahead (or, if it already was, on
        // time), and the leader is killed: one of the two takes over.
        Replica& r = replicas_[follower];
        r.environment = r.environment.empty()
                            ? ClockOffsetEnvironment(absl::Minutes(1))
                            : std::vector<std::string>{};
        Kill(follower);
        ASSERT_TRUE(StartReplica(follower));
        at = absl::Now();
        Kill(leader);
        break;
      }
    }
    std::optional<absl::Duration> recovered =
        history.Recovery(at, absl::Seconds(30));
    ASSERT_TRUE(recovered.has_value()) << Name(f) << ": no write for 30 s";
    recoveries_[f].push_back(*recovered);
    EXPECT_LE(*recovered, kRecoveryLeases * kLease)
        << Name(f) << ": writes resumed only " << *recovered << " after it";
    Supervise();
  }

  TempDir dir_;
  std::string pg_dir_ = dir_.File("pg");
  std::unique_ptr<PostgresInstance> pg_;
  Replica replicas_[kReplicas];
  Cluster cluster_;
  std::map<Fault, std::vector<absl::Duration>> recoveries_;
};

// One row of the database's allocations with one of its devices.
struct Row {
  std::string id;
  std::string request_id;
  int state = 0;
  int64_t created_ns = 0;
  int64_t ended_ns = 0;  // 0: not ended
  std::string device;
};

TEST_F(FaultHarnessTest, EveryAcknowledgedWriteSurvivesAndNoDeviceIsHeldTwice) {
  ASSERT_TRUE(std::filesystem::exists(kLibFaketime)) << kLibFaketime;
  const int seed = EnvInt("ACCELSCHED_FAULT_SEED", 1);
  const int faults = EnvInt("ACCELSCHED_FAULTS", kFaultKinds);
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::vector<Fault> schedule;
  for (int i = 0; i < faults; ++i) {
    if (i % kFaultKinds == 0) {
      std::vector<Fault> round;
      for (int k = 0; k < kFaultKinds; ++k) round.push_back(Fault(k));
      std::shuffle(round.begin(), round.end(), rng);
      schedule.insert(schedule.end(), round.begin(), round.end());
    }
  }
  schedule.resize(static_cast<size_t>(faults));

  const int leader = Leader();
  ASSERT_GE(leader, 0);
  {
    std::shared_ptr<Stub> stub = cluster_.stub(static_cast<size_t>(leader));
    for (int n = 0; n < 4; ++n) {
      v1::RegisterNodeRequest req;
      req.mutable_node()->set_name(absl::StrCat("node-", n));
      for (int g = 0; g < 8; ++g) {
        AddGpu(req.mutable_node(), absl::StrCat("node-", n, "-gpu", g), kModel,
               g);
      }
      v1::Node resp;
      grpc::ClientContext ctx;
      ASSERT_TRUE(stub->RegisterNode(&ctx, req, &resp).ok());
    }
  }

  History history;
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  // Joined on every way out, a failed assertion's too.
  absl::Cleanup join_clients = [&] {
    stop.store(true);
    for (std::thread& t : clients) {
      if (t.joinable()) t.join();
    }
  };
  for (int k = 0; k < kClients; ++k) {
    clients.emplace_back([&, k] { RunClient(k, cluster_, history, stop); });
  }
  const absl::Time start = absl::Now();
  for (size_t i = 0; i < schedule.size() && !HasFatalFailure(); ++i) {
    ASSERT_TRUE(history.AwaitAcks(30, absl::Seconds(30)))
        << "no progress before fault " << i << ": "
        << absl::StrJoin(history.failures(), "; ");
    std::printf("fault harness: fault %zu: %s\n", i, Name(schedule[i]));
    std::fflush(stdout);
    Inject(schedule[i], rng, history);
  }
  ASSERT_TRUE(history.AwaitAcks(30, absl::Seconds(30)));
  std::move(join_clients).Invoke();
  EXPECT_THAT(history.failures(), testing::IsEmpty());

  // The database, read directly.
  ASSERT_OK_AND_ASSIGN(
      const std::string dump,
      pg_->Psql("SELECT a.id, a.request_id, a.state, a.created_at_unix_ns, "
                "a.ended_at_unix_ns, d.device_id FROM allocations a JOIN "
                "allocation_devices d ON d.allocation_id = a.id"));
  std::map<std::string, Row> by_id;
  std::map<std::string, std::vector<Row>> by_device;
  for (absl::string_view line : absl::StrSplit(dump, '\n', absl::SkipEmpty())) {
    std::vector<std::string> f = absl::StrSplit(line, '|');
    ASSERT_EQ(f.size(), 6u) << line;
    Row row;
    row.id = f[0];
    row.request_id = f[1];
    ASSERT_TRUE(absl::SimpleAtoi(f[2], &row.state)) << line;
    ASSERT_TRUE(absl::SimpleAtoi(f[3], &row.created_ns)) << line;
    ASSERT_TRUE(absl::SimpleAtoi(f[4], &row.ended_ns)) << line;
    row.device = f[5];
    by_id[row.id] = row;
    by_device[row.device].push_back(row);
  }

  // 1. Every acknowledged Allocate and Release is stored as acknowledged.
  const std::vector<Call> calls = history.calls();
  int lost = 0;
  for (const Call& c : calls) {
    auto it = by_id.find(c.id);
    const bool release_unknown =
        c.release_sent != absl::InfiniteFuture() && !c.release_acked;
    const bool ok =
        it != by_id.end() && it->second.request_id == c.request_id &&
        it->second.device == c.device &&
        (c.release_acked   ? it->second.state == 2
         : release_unknown ? (it->second.state == 1 || it->second.state == 2)
                           : it->second.state == 1);
    if (!ok) {
      ++lost;
      ADD_FAILURE() << c.id << " (" << c.request_id << ") acknowledged "
                    << (c.release_acked ? "released" : "allocated")
                    << " but stored as "
                    << (it == by_id.end()
                            ? std::string("nothing")
                            : absl::StrCat("state ", it->second.state));
    }
  }
  // 2. No device in two allocations whose held windows overlap: in the
  // database (created to ended, on the database's clock) ...
  int overlaps = 0;
  for (auto& [device, rows] : by_device) {
    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
      return a.created_ns < b.created_ns;
    });
    int64_t held_until = 0;
    std::string holder;
    for (const Row& r : rows) {
      if (r.created_ns + absl::ToInt64Nanoseconds(kClockError) < held_until) {
        ++overlaps;
        ADD_FAILURE() << device << " held by " << holder << " and " << r.id
                      << " at once";
      }
      const int64_t until = r.ended_ns == 0 ? INT64_MAX : r.ended_ns;
      if (until > held_until) {
        held_until = until;
        holder = r.id;
      }
    }
  }
  // ... and as the clients were told (acknowledged, until its release was
  // sent): two such windows that overlap mean both held it at once.
  std::map<std::string, std::vector<const Call*>> told;
  for (const Call& c : calls) told[c.device].push_back(&c);
  for (auto& [device, held] : told) {
    std::sort(held.begin(), held.end(),
              [](const Call* a, const Call* b) { return a->acked < b->acked; });
    absl::Time until = absl::InfinitePast();
    for (const Call* c : held) {
      if (c->acked < until) {
        ++overlaps;
        ADD_FAILURE() << device << " acknowledged to " << c->id
                      << " while another client held it";
      }
      until = std::max(until, c->release_sent);
    }
  }
  EXPECT_EQ(lost, 0);
  EXPECT_EQ(overlaps, 0);

  std::printf(
      "fault harness: seed %d, %d faults in %s, %zu allocations "
      "acknowledged, %d lost, %d overlaps; writes resumed after each fault "
      "within (max per kind):",
      seed, faults, absl::FormatDuration(absl::Now() - start).c_str(),
      calls.size(), lost, overlaps);
  for (const auto& [fault, times] : recoveries_) {
    std::printf(
        " %s %s (%zu);", Name(fault),
        absl::FormatDuration(*std::max_element(times.begin(), times.end()))
            .c_str(),
        times.size());
  }
  std::printf("\n");
}

}  // namespace
}  // namespace accelsched
