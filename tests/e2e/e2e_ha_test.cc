// High availability end to end: real accelschedd processes sharing a real
// PostgreSQL 15 (tests/support/postgres_instance.h), with clients that do what
// docs/operations/ha-postgresql.md asks of them: retry UNAVAILABLE on the other
// server with the same request_id. Failover by kill -9, fencing of a frozen
// leader, the database restarted under a server, and start-up errors.
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
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
#include "tests/support/temp_dir.h"

namespace accelsched {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Stub = v1::AcceleratorScheduler::Stub;

constexpr char kModel[] = "nvidia-tesla-t4";

// One server of the pair and a stub to it.
struct Replica {
  std::unique_ptr<ServerProcess> process;
  std::shared_ptr<grpc::Channel> channel;
  std::shared_ptr<Stub> stub;
};

template <typename Req, typename Resp>
using Method = grpc::Status (Stub::*)(grpc::ClientContext*, const Req&, Resp*);

template <typename Req, typename Resp>
grpc::Status CallOn(Stub& stub, Method<Req, Resp> method, const Req& req,
                    Resp* resp, absl::Duration timeout = absl::Seconds(5)) {
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  return (stub.*method)(&ctx, req, resp);
}

bool Serving(const std::shared_ptr<grpc::Channel>& channel) {
  return ServesScheduler(channel, absl::Seconds(1));
}

// The codes a client retries elsewhere: the server is not the leader, is
// gone, or did not answer in time (the outcome unknown: the same request_id
// makes the retry safe).
bool Retryable(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAVAILABLE ||
         s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
         s.error_code() == grpc::StatusCode::CANCELLED ||
         s.error_code() == grpc::StatusCode::UNKNOWN;
}

class HaTest : public testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(pg_dir_);
    absl::StatusOr<std::unique_ptr<PostgresInstance>> pg =
        PostgresInstance::Start(pg_dir_);
    ASSERT_OK(pg);
    pg_ = std::move(*pg);
  }

  // Starts a server on the shared database. Use as
  // ASSERT_TRUE(StartReplica(...)).
  testing::AssertionResult StartReplica(
      Replica& r, const std::vector<std::string>& flags = {},
      const std::vector<std::string>& environment = {}) {
    absl::StatusOr<std::unique_ptr<ServerProcess>> p =
        ServerProcess::Start(pg_->Uri(), flags, environment);
    if (!p.ok()) {
      return testing::AssertionFailure()
             << "accelschedd did not start: " << p.status();
    }
    r.process = std::move(*p);
    r.channel = grpc::CreateChannel(r.process->grpc_address(),
                                    grpc::InsecureChannelCredentials());
    r.stub = v1::AcceleratorScheduler::NewStub(r.channel);
    return testing::AssertionSuccess();
  }

  // Waits until `r` serves as leader; the time it took, or nullopt.
  static std::optional<absl::Duration> AwaitServing(
      const Replica& r, absl::Duration timeout = absl::Seconds(30)) {
    const absl::Time start = absl::Now();
    while (absl::Now() - start < timeout) {
      if (Serving(r.channel)) return absl::Now() - start;
      absl::SleepFor(absl::Milliseconds(10));
    }
    return std::nullopt;
  }

  static void RegisterNodes(Stub& stub, const std::string& prefix, int nodes,
                            int gpus) {
    for (int n = 0; n < nodes; ++n) {
      v1::RegisterNodeRequest req;
      v1::Node* node = req.mutable_node();
      node->set_name(absl::StrCat(prefix, n));
      for (int g = 0; g < gpus; ++g) {
        AddGpu(node, absl::StrCat(prefix, n, "-gpu", g), kModel, g);
      }
      v1::Node resp;
      grpc::Status s = CallOn(stub, &Stub::RegisterNode, req, &resp);
      ASSERT_TRUE(s.ok()) << s.error_message();
    }
  }

  // Every allocation the server holds, by id.
  static std::map<std::string, v1::Allocation> AllAllocations(
      Stub& stub,
      v1::AllocationState state = v1::ALLOCATION_STATE_UNSPECIFIED) {
    std::map<std::string, v1::Allocation> out;
    v1::ListAllocationsRequest req;
    req.set_state(state);
    req.set_page_size(1000);
    for (;;) {
      v1::ListAllocationsResponse resp;
      grpc::Status s = CallOn(stub, &Stub::ListAllocations, req, &resp);
      EXPECT_TRUE(s.ok()) << s.error_message();
      if (!s.ok()) return out;
      for (const v1::Allocation& a : resp.allocations()) out[a.id()] = a;
      if (resp.next_page_token().empty()) return out;
      req.set_page_token(resp.next_page_token());
    }
  }

  // Devices held by two live allocations at once (none, or a failure).
  static std::vector<std::string> DoublyBooked(Stub& stub) {
    std::map<std::string, int> holders;
    for (v1::AllocationState state : {v1::ACTIVE, v1::PREEMPTED}) {
      for (const auto& [id, a] : AllAllocations(stub, state)) {
        for (const v1::AllocatedDevice& d : a.devices()) {
          ++holders[d.device_id() + "/" + d.mig_slice_id()];
        }
      }
    }
    std::vector<std::string> twice;
    for (const auto& [device, n] : holders) {
      if (n > 1) twice.push_back(device);
    }
    return twice;
  }

  TempDir dir_;
  std::string pg_dir_ = dir_.File("pg");
  std::unique_ptr<PostgresInstance> pg_;
};

TEST_F(HaTest, AFollowerIsNotServingAndNamesTheLeader) {
  Replica a, b;
  ASSERT_TRUE(StartReplica(a));
  ASSERT_TRUE(AwaitServing(a).has_value()) << a.process->output();
  ASSERT_TRUE(StartReplica(b));
  ASSERT_TRUE(b.process->WaitForOutput("accelschedd ready", absl::Seconds(5)));
  EXPECT_FALSE(Serving(b.channel));
  RegisterNodes(*a.stub, "n", 1, 1);

  v1::Allocation out;
  grpc::Status s =
      CallOn(*b.stub, &Stub::Allocate, AllocateReq("r1", kModel), &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(),
              HasSubstr(absl::StrCat(":", a.process->grpc_port())));
  EXPECT_THAT(s.error_message(), HasSubstr("follower"));
  // Reads too: a follower holds no state.
  v1::ListNodesResponse nodes;
  s = CallOn(*b.stub, &Stub::ListNodes, v1::ListNodesRequest(), &nodes);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  // The leader answers both.
  EXPECT_TRUE(
      CallOn(*a.stub, &Stub::Allocate, AllocateReq("r1", kModel), &out).ok());
  EXPECT_EQ(out.devices_size(), 1);

  // A graceful stop hands over at once: the follower needs no lease expiry.
  const absl::Time stopped = absl::Now();
  EXPECT_EQ(a.process->Stop(SIGTERM), 0);
  ASSERT_TRUE(AwaitServing(b).has_value());
  EXPECT_LT(absl::Now() - stopped, absl::Seconds(5));
  v1::GetAllocationRequest get;
  get.set_request_id("r1");
  v1::Allocation got;
  ASSERT_TRUE(CallOn(*b.stub, &Stub::GetAllocation, get, &got).ok());
  EXPECT_EQ(got.id(), out.id());
  EXPECT_EQ(got.state(), v1::ACTIVE);
}

// What a client was told: each allocation acknowledged, and whether its
// release was.
struct Acknowledged {
  std::string id;
  std::string device;
  bool released = false;
};

class Clients {
 public:
  // Calls go to `servers`, each retried for up to `give_up`.
  Clients(std::vector<std::shared_ptr<Stub>> servers, absl::Duration give_up)
      : servers_(std::move(servers)), give_up_(give_up) {}

  // Retries `call` on each server in turn until one answers other than
  // Retryable, or `give_up_` passes. The final status.
  template <typename Req, typename Resp>
  grpc::Status UntilAnswered(Method<Req, Resp> method, const Req& req,
                             Resp* resp, size_t* server) {
    const absl::Time deadline = absl::Now() + give_up_;
    for (;;) {
      std::shared_ptr<Stub> stub;
      {
        absl::MutexLock lock(&mu_);
        stub = servers_[*server % servers_.size()];
      }
      grpc::Status s = CallOn(*stub, method, req, resp, absl::Seconds(3));
      if (!Retryable(s) || absl::Now() > deadline) return s;
      ++*server;
      absl::SleepFor(absl::Milliseconds(20));
    }
  }

  // Client `k`: allocates a GPU, then releases the one it held before, and
  // again until stopped; so it holds one or two (64 GPUs for 32 clients).
  // While its release is not sent, a GPU acknowledged to it must not be
  // given to anyone else.
  void Run(int k) {
    size_t server = static_cast<size_t>(k);
    std::optional<Acknowledged> previous;
    for (int n = 0; !stop_.load(); ++n) {
      v1::AllocateRequest req =
          AllocateReq(absl::StrCat("c", k, "-", n), kModel);
      req.mutable_lease()->set_seconds(3600);
      v1::Allocation a;
      grpc::Status s = UntilAnswered(&Stub::Allocate, req, &a, &server);
      if (!s.ok() || a.devices_size() != 1) {
        Fail(absl::StrCat("Allocate ", req.request_id(), ": ",
                          s.error_message()));
        return;
      }
      const Acknowledged ack{a.id(), a.devices(0).device_id(), false};
      {
        absl::MutexLock lock(&mu_);
        if (!held_.insert(ack.device).second) {
          failures_.push_back(absl::StrCat(ack.device, " given to ", a.id(),
                                           " while acknowledged elsewhere"));
        }
        acked_[a.id()] = ack;
        ++acks_;
      }
      if (previous.has_value() && !Release(*previous, &server)) return;
      previous = ack;
    }
  }

  // Releases `ack`'s allocation; false (and a failure) when it is refused.
  bool Release(const Acknowledged& ack, size_t* server) {
    {
      // Forgotten before the release is sent: once it commits, another
      // Allocate may be given the device before this client hears.
      absl::MutexLock lock(&mu_);
      held_.erase(ack.device);
    }
    v1::ReleaseRequest rel;
    rel.set_allocation_id(ack.id);
    v1::Allocation released;
    grpc::Status s = UntilAnswered(&Stub::Release, rel, &released, server);
    if (!s.ok()) {
      Fail(absl::StrCat("Release ", ack.id, ": ", s.error_message()));
      return false;
    }
    absl::MutexLock lock(&mu_);
    acked_[ack.id].released = true;
    ++acks_;
    return true;
  }

  void Start(int n) {
    for (int k = 0; k < n; ++k) threads_.emplace_back([this, k] { Run(k); });
  }
  void Stop() {
    stop_.store(true);
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }
  // Blocks until `more` acknowledgements have come since the call.
  bool AwaitAcks(int more, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    const int64_t target = acks_ + more;
    auto reached = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return acks_ >= target;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&reached), timeout);
  }
  void Replace(size_t i, std::shared_ptr<Stub> server) {
    absl::MutexLock lock(&mu_);
    servers_[i] = std::move(server);
  }
  std::map<std::string, Acknowledged> acked() {
    absl::MutexLock lock(&mu_);
    return acked_;
  }
  std::vector<std::string> failures() {
    absl::MutexLock lock(&mu_);
    return failures_;
  }

 private:
  void Fail(std::string what) {
    absl::MutexLock lock(&mu_);
    failures_.push_back(std::move(what));
  }

  absl::Mutex mu_;
  std::vector<std::shared_ptr<Stub>> servers_ ABSL_GUARDED_BY(mu_);
  const absl::Duration give_up_;
  std::map<std::string, Acknowledged> acked_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> held_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> failures_ ABSL_GUARDED_BY(mu_);
  int64_t acks_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// Issue 30 on PostgreSQL: what live allocations hold of a node's CPU and
// memory is committed with them, and a leader killed with -9 comes back
// (or is replaced) knowing it: no pinned pod ever outgrows its node.
TEST_F(HaTest, PodResourcesSurviveKillNineOnPostgres) {
  Replica r;
  ASSERT_TRUE(StartReplica(r));
  ASSERT_TRUE(AwaitServing(r).has_value());
  v1::RegisterNodeRequest reg;
  v1::Node* node = reg.mutable_node();
  node->set_name("n1");
  for (int g = 0; g < 4; ++g)
    AddGpu(node, absl::StrCat("n1-gpu", g), kModel, g);
  node->mutable_allocatable()->set_cpu_milli(10000);
  node->mutable_allocatable()->set_memory_bytes(int64_t{32} << 30);
  v1::Node registered;
  ASSERT_TRUE(CallOn(*r.stub, &Stub::RegisterNode, reg, &registered).ok());
  auto want = [](const std::string& id, int64_t cpu_milli) {
    v1::AllocateRequest req = AllocateReq(id, kModel);
    req.mutable_pod_resources()->set_cpu_milli(cpu_milli);
    req.mutable_pod_resources()->set_memory_bytes(int64_t{1} << 30);
    return req;
  };
  v1::Allocation a;
  ASSERT_TRUE(CallOn(*r.stub, &Stub::Allocate, want("a", 4000), &a).ok());
  ASSERT_TRUE(CallOn(*r.stub, &Stub::Allocate, want("b", 4000), &a).ok());
  EXPECT_EQ(r.process->Stop(SIGKILL), 128 + SIGKILL);
  ASSERT_TRUE(StartReplica(r));
  ASSERT_TRUE(AwaitServing(r).has_value());
  v1::GetNodeRequest get;
  get.set_name("n1");
  v1::Node after;
  ASSERT_TRUE(CallOn(*r.stub, &Stub::GetNode, get, &after).ok());
  EXPECT_EQ(after.allocatable().cpu_milli(), 10000);
  EXPECT_EQ(after.available().cpu_milli(), 2000);
  EXPECT_EQ(after.available().memory_bytes(), int64_t{30} << 30);
  v1::GetAllocationRequest which;
  which.set_request_id("a");
  v1::Allocation stored;
  ASSERT_TRUE(CallOn(*r.stub, &Stub::GetAllocation, which, &stored).ok());
  EXPECT_EQ(stored.pod_resources().cpu_milli(), 4000);
  EXPECT_EQ(stored.pod_resources().pods(), 1);
  // Two GPUs are free, 2000m of CPU is not enough for a third pod.
  grpc::Status refused = CallOn(*r.stub, &Stub::Allocate, want("c", 4000), &a);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << refused.error_message();
  ASSERT_TRUE(CallOn(*r.stub, &Stub::Allocate, want("d", 2000), &a).ok());
}

// Issue 31 on PostgreSQL: GPU shares, with their groups and placements, are
// committed with their allocations, and a leader killed with -9 comes back
// holding them: no GPU takes more than its compute, nor two groups' shares.
TEST_F(HaTest, SharesSurviveKillNineOnPostgres) {
  Replica r;
  ASSERT_TRUE(StartReplica(r));
  ASSERT_TRUE(AwaitServing(r).has_value());
  v1::RegisterNodeRequest reg;
  v1::Node* node = reg.mutable_node();
  node->set_name("n1");
  for (int g = 0; g < 2; ++g) {
    AddGpu(node, absl::StrCat("n1-gpu", g), kModel, g)->set_sharing(v1::MPS);
  }
  v1::Node registered;
  ASSERT_TRUE(CallOn(*r.stub, &Stub::RegisterNode, reg, &registered).ok());
  auto share = [](const std::string& id, int milli, const std::string& group) {
    v1::AllocateRequest req = AllocateReq(id, kModel);
    req.mutable_share()->set_compute_milli(milli);
    req.mutable_share()->set_group(group);
    return req;
  };
  v1::Allocation a;
  ASSERT_TRUE(
      CallOn(*r.stub, &Stub::Allocate, share("a", 600, "ns-a"), &a).ok());
  v1::Allocation b;
  ASSERT_TRUE(
      CallOn(*r.stub, &Stub::Allocate, share("b", 600, "ns-b"), &b).ok());
  ASSERT_NE(a.devices(0).device_id(), b.devices(0).device_id());
  EXPECT_EQ(r.process->Stop(SIGKILL), 128 + SIGKILL);
  ASSERT_TRUE(StartReplica(r));
  ASSERT_TRUE(AwaitServing(r).has_value());
  v1::GetAllocationRequest which;
  which.set_request_id("a");
  v1::Allocation stored;
  ASSERT_TRUE(CallOn(*r.stub, &Stub::GetAllocation, which, &stored).ok());
  EXPECT_EQ(stored.devices(0).share().compute_milli(), 600);
  EXPECT_EQ(stored.devices(0).share().group(), "ns-a");
  EXPECT_THAT(stored.placement().env(),
              testing::Contains(
                  testing::Pair("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "60")));
  EXPECT_EQ(stored.placement().resource_claim(),
            a.placement().resource_claim());
  // 400 milli are left on each GPU, each for its own group only.
  v1::Allocation c;
  ASSERT_TRUE(
      CallOn(*r.stub, &Stub::Allocate, share("c", 400, "ns-b"), &c).ok());
  EXPECT_EQ(c.devices(0).device_id(), b.devices(0).device_id());
  grpc::Status refused =
      CallOn(*r.stub, &Stub::Allocate, share("d", 300, "ns-b"), &c);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << refused.error_message();
  ASSERT_TRUE(
      CallOn(*r.stub, &Stub::Allocate, share("e", 400, "ns-a"), &c).ok());
  EXPECT_EQ(c.devices(0).device_id(), a.devices(0).device_id());
}

TEST_F(HaTest, KillingTheLeaderTenTimesLosesNoAcknowledgedWrite) {
  // Default election settings: the times below are what users get.
  Replica replicas[2];
  ASSERT_TRUE(StartReplica(replicas[0]));
  ASSERT_TRUE(AwaitServing(replicas[0]).has_value());
  ASSERT_TRUE(StartReplica(replicas[1]));
  RegisterNodes(*replicas[0].stub, "node-", 8, 8);

  Clients clients({replicas[0].stub, replicas[1].stub}, absl::Seconds(60));
  clients.Start(32);
  std::vector<absl::Duration> failovers;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(clients.AwaitAcks(200, absl::Seconds(60)))
        << "no progress before kill " << i;
    const int leader = Serving(replicas[0].channel) ? 0 : 1;
    Replica& old = replicas[leader];
    Replica& next = replicas[1 - leader];
    ASSERT_TRUE(Serving(old.channel));
    const absl::Time killed = absl::Now();
    EXPECT_EQ(old.process->Stop(SIGKILL), 128 + SIGKILL);
    std::optional<absl::Duration> took = AwaitServing(next);
    ASSERT_TRUE(took.has_value()) << "no new leader after kill " << i;
    failovers.push_back(absl::Now() - killed);
    EXPECT_THAT(DoublyBooked(*next.stub), testing::IsEmpty())
        << "after kill " << i;
    // The killed one comes back as a follower.
    ASSERT_TRUE(StartReplica(old));
    clients.Replace(static_cast<size_t>(leader), old.stub);
  }
  ASSERT_TRUE(clients.AwaitAcks(200, absl::Seconds(60)));
  clients.Stop();
  EXPECT_THAT(clients.failures(), testing::IsEmpty());

  Stub& leader =
      Serving(replicas[0].channel) ? *replicas[0].stub : *replicas[1].stub;
  const std::map<std::string, v1::Allocation> stored = AllAllocations(leader);
  int lost = 0;
  const std::map<std::string, Acknowledged> acked = clients.acked();
  for (const auto& [id, ack] : acked) {
    auto it = stored.find(id);
    const v1::AllocationState want = ack.released ? v1::RELEASED : v1::ACTIVE;
    if (it == stored.end() || it->second.state() != want) {
      ++lost;
      ADD_FAILURE() << id << " acknowledged "
                    << (ack.released ? "released" : "allocated")
                    << " but stored as "
                    << (it == stored.end()
                            ? std::string("nothing")
                            : v1::AllocationState_Name(it->second.state()));
    }
  }
  EXPECT_EQ(lost, 0);
  EXPECT_THAT(DoublyBooked(leader), testing::IsEmpty());

  std::sort(failovers.begin(), failovers.end());
  absl::Duration total;
  for (absl::Duration d : failovers) total += d;
  std::printf(
      "failover (kill -9 to the new leader serving), 10 kills: min %s, "
      "median %s, max (p99) %s, mean %s; %zu allocations acknowledged, "
      "%d lost\n",
      absl::FormatDuration(failovers.front()).c_str(),
      absl::FormatDuration(failovers[failovers.size() / 2]).c_str(),
      absl::FormatDuration(failovers.back()).c_str(),
      absl::FormatDuration(total / failovers.size()).c_str(), acked.size(),
      lost);
  EXPECT_LT(failovers.back(), absl::Seconds(5));
}

TEST_F(HaTest, AFrozenLeaderIsFencedOutAndCommitsNothingAfterTheTakeover) {
  const std::vector<std::string> flags = {"--leader_lease=2s",
                                          "--leader_retry_period=200ms"};
  Replica a, b;
  ASSERT_TRUE(StartReplica(a, flags));
  ASSERT_TRUE(AwaitServing(a).has_value());
  ASSERT_TRUE(StartReplica(b, flags));
  RegisterNodes(*a.stub, "node-", 4, 8);

  // Clients that only know the old leader: nothing they send once it is
  // frozen may commit.
  Clients pinned({a.stub}, absl::Seconds(5));
  pinned.Start(8);
  ASSERT_TRUE(pinned.AwaitAcks(100, absl::Seconds(30)));
  ASSERT_EQ(kill(a.process->pid(), SIGSTOP), 0);
  ASSERT_TRUE(AwaitServing(b).has_value()) << b.process->output();
  // What the new leader loaded: everything the old one committed.
  const std::map<std::string, v1::Allocation> at_takeover =
      AllAllocations(*b.stub);
  v1::Allocation by_b;
  ASSERT_TRUE(
      CallOn(*b.stub, &Stub::Allocate, AllocateReq("by-b", kModel), &by_b)
          .ok());
  // The database itself, not only the new leader's memory: a commit of the
  // old leader's would show here and nowhere else.
  constexpr char kRows[] =
      "SELECT id || ' ' || state || ' ' || ended_at_unix_ns FROM allocations "
      "ORDER BY id";
  ASSERT_OK_AND_ASSIGN(const std::string rows_at_takeover, pg_->Psql(kRows));

  ASSERT_EQ(kill(a.process->pid(), SIGCONT), 0);
  // It finds out, refuses, and exits 1 to be restarted as a follower.
  EXPECT_TRUE(
      a.process->WaitForOutput("lost the leadership", absl::Seconds(10)));
  v1::Allocation refused;
  grpc::Status s = CallOn(*a.stub, &Stub::Allocate,
                          AllocateReq("after-thaw", kModel), &refused);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(
      a.process->WaitForOutput("accelschedd: stopped", absl::Seconds(15)));
  EXPECT_EQ(a.process->Stop(0), 1);
  pinned.Stop();

  ASSERT_OK_AND_ASSIGN(const std::string rows_now, pg_->Psql(kRows));
  EXPECT_EQ(rows_now, rows_at_takeover)
      << "the database changed after the takeover, other than by the new "
         "leader's one write";
  std::map<std::string, v1::Allocation> now = AllAllocations(*b.stub);
  ASSERT_EQ(now.erase(by_b.id()), 1u);
  // Not one allocation created, released or changed by the old leader since.
  ASSERT_EQ(now.size(), at_takeover.size());
  for (const auto& [id, a] : at_takeover) {
    ASSERT_TRUE(now.count(id)) << id;
    EXPECT_EQ(now[id].state(), a.state()) << id;
    EXPECT_EQ(now[id].request_id(), a.request_id()) << id;
  }
  v1::GetAllocationRequest get;
  get.set_request_id("after-thaw");
  v1::Allocation none;
  EXPECT_EQ(CallOn(*b.stub, &Stub::GetAllocation, get, &none).error_code(),
            grpc::StatusCode::NOT_FOUND);
  // And what the old leader acknowledged is all there. (An allocation whose
  // release was sent but not acknowledged may be either.)
  for (const auto& [id, ack] : pinned.acked()) {
    ASSERT_TRUE(now.count(id)) << id << " acknowledged, not stored";
    if (ack.released) {
      EXPECT_EQ(now[id].state(), v1::RELEASED) << id;
    }
  }
  EXPECT_THAT(pinned.failures(), testing::Not(testing::IsEmpty()))
      << "the pinned clients' calls after the freeze should have failed";
  EXPECT_THAT(DoublyBooked(*b.stub), testing::IsEmpty());
}

TEST_F(HaTest, TheDatabaseRestartedUnderTheServerLosesNothingAcknowledged) {
  Replica a;
  ASSERT_TRUE(StartReplica(a));
  ASSERT_TRUE(AwaitServing(a).has_value());
  RegisterNodes(*a.stub, "node-", 1, 8);
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    v1::Allocation out;
    ASSERT_TRUE(CallOn(*a.stub, &Stub::Allocate,
                       AllocateReq(absl::StrCat("before-", i), kModel), &out)
                    .ok());
    ids.push_back(out.id());
  }
  v1::ReleaseRequest rel;
  rel.set_allocation_id(ids[0]);
  v1::Allocation released;
  ASSERT_TRUE(CallOn(*a.stub, &Stub::Release, rel, &released).ok());

  ASSERT_OK(pg_->Stop());
  v1::Allocation out;
  grpc::Status s =
      CallOn(*a.stub, &Stub::Allocate, AllocateReq("while-down", kModel), &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  ASSERT_OK(pg_->Start());

  // It reconnects by itself; a client retrying the same request gets in.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  do {
    s = CallOn(*a.stub, &Stub::Allocate, AllocateReq("after", kModel), &out);
    if (s.ok()) break;
    EXPECT_TRUE(Retryable(s)) << s.error_message();
    absl::SleepFor(absl::Milliseconds(100));
  } while (absl::Now() < deadline);
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << a.process->output();
  EXPECT_TRUE(Serving(a.channel));

  const std::map<std::string, v1::Allocation> stored = AllAllocations(*a.stub);
  EXPECT_EQ(stored.at(ids[0]).state(), v1::RELEASED);
  for (size_t i = 1; i < ids.size(); ++i) {
    EXPECT_EQ(stored.at(ids[i]).state(), v1::ACTIVE) << ids[i];
  }
  EXPECT_THAT(DoublyBooked(*a.stub), testing::IsEmpty());
}

// A replica whose clock runs a minute ahead takes over. The leases it
// inherits still end when their holders were told, not a minute early, and
// what it writes is on the database's clock too. (Its clock is faked by
// libfaketime for what it reads; the kernel's timed waits stay on the true
// clock, as after a step of the wall clock back: its election must still
// renew on time.)
TEST_F(HaTest, ALeaderWhoseClockRunsAheadEndsNoLeaseEarly) {
  const std::vector<std::string> flags = {"--leader_lease=2s",
                                          "--leader_retry_period=200ms"};
  Replica a, b;
  ASSERT_TRUE(StartReplica(a, flags));
  ASSERT_TRUE(AwaitServing(a).has_value());
  ASSERT_TRUE(std::filesystem::exists(kLibFaketime)) << kLibFaketime;
  ASSERT_TRUE(StartReplica(b, flags, ClockOffsetEnvironment(absl::Minutes(1))));
  RegisterNodes(*a.stub, "node-", 1, 1);
  v1::AllocateRequest req = AllocateReq("held", kModel);
  req.mutable_lease()->set_seconds(45);
  v1::Allocation held;
  ASSERT_TRUE(CallOn(*a.stub, &Stub::Allocate, req, &held).ok());

  EXPECT_EQ(a.process->Stop(SIGKILL), 128 + SIGKILL);
  ASSERT_TRUE(AwaitServing(b).has_value()) << b.process->output();
  // It keeps serving: its renewals come on time.
  const absl::Time serving_since = absl::Now();
  // The one GPU is still held: Allocate expires what is due before it
  // matches, so a lease ended early would free it here.
  v1::Allocation out;
  grpc::Status s =
      CallOn(*b.stub, &Stub::Allocate, AllocateReq("next", kModel), &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  v1::GetAllocationRequest get;
  get.set_request_id("held");
  v1::Allocation got;
  ASSERT_TRUE(CallOn(*b.stub, &Stub::GetAllocation, get, &got).ok());
  EXPECT_EQ(got.state(), v1::ACTIVE);
  EXPECT_EQ(got.expires_at().seconds(), held.expires_at().seconds());
  // What it writes is on the database's clock, not a minute ahead.
  v1::RenewLeaseRequest renew;
  renew.set_allocation_id(held.id());
  renew.mutable_lease()->set_seconds(45);
  v1::Allocation renewed;
  const absl::Time sent = absl::Now();
  ASSERT_TRUE(CallOn(*b.stub, &Stub::RenewLease, renew, &renewed).ok());
  EXPECT_LT(
      absl::AbsDuration(absl::FromUnixSeconds(renewed.expires_at().seconds()) -
                        (sent + absl::Seconds(45))),
      absl::Seconds(5));
  // Several renew deadlines later, still the leader.
  while (absl::Now() - serving_since < absl::Seconds(3)) {
    ASSERT_TRUE(Serving(b.channel)) << b.process->output();
    absl::SleepFor(absl::Milliseconds(100));
  }

  // A commit that fails while the database is down leaves the state to be
  // reloaded by the next sweep (every second, on the monotonic clock too):
  // the leader serves again soon after the database is back.
  ASSERT_OK(pg_->Crash());
  EXPECT_FALSE(CallOn(*b.stub, &Stub::RenewLease, renew, &renewed).ok());
  ASSERT_OK(pg_->Start());
  const absl::Time back = absl::Now();
  v1::ReleaseRequest rel;
  rel.set_allocation_id(held.id());
  v1::Allocation released;
  do {
    s = CallOn(*b.stub, &Stub::Release, rel, &released, absl::Seconds(1));
    if (s.ok()) break;
    absl::SleepFor(absl::Milliseconds(50));
  } while (absl::Now() - back < absl::Seconds(10));
  EXPECT_TRUE(s.ok()) << s.error_message() << "\n" << b.process->output();
  EXPECT_EQ(released.state(), v1::RELEASED);
}

TEST_F(HaTest, WrongCredentialsOrNoDatabaseExitOneWithAClearMessage) {
  std::string output;
  EXPECT_EQ(ServerProcess::RunToExit(
                {"--db=" + pg_->UriWithWrongPassword(), "--listen=127.0.0.1:0",
                 "--metrics_listen=127.0.0.1:0"},
                &output),
            1);
  EXPECT_THAT(output,
              HasSubstr(absl::StrCat("cannot connect to PostgreSQL at "
                                     "postgresql://accelsched@127.0.0.1:",
                                     pg_->port(), "/accelsched")));
  EXPECT_THAT(output, HasSubstr("password authentication failed"));
  EXPECT_THAT(output, Not(HasSubstr(PostgresInstance::kPassword)));

  ASSERT_OK(pg_->Stop());
  EXPECT_EQ(
      ServerProcess::RunToExit({"--db=" + pg_->Uri(), "--listen=127.0.0.1:0",
                                "--metrics_listen=127.0.0.1:0"},
                               &output),
      1);
  EXPECT_THAT(output, HasSubstr("cannot connect to PostgreSQL at"));
  EXPECT_THAT(output, HasSubstr("Connection refused"));
}

}  // namespace
}  // namespace accelsched
