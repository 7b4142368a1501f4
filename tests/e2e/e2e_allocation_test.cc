// End-to-end allocation: the real accelschedd on a real SQLite file, real gRPC
// clients, restarts, SIGKILL in the middle of load.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/e2e_fixture.h"

namespace accelsched {
namespace {

using ::testing::HasSubstr;
using Stub = v1::AcceleratorScheduler::Stub;

// Four nodes: two with 8 T4s, one with two MIG A100s (7 x 1g.5gb each), one
// H100 node.
// Call as ASSERT_NO_FATAL_FAILURE(...): it asserts.
void RegisterCluster(E2eTest& t) {
  for (int n = 0; n < 2; ++n) {
    v1::Node node;
    node.set_name(absl::StrCat("t4-", n));
    (*node.mutable_labels())["pool"] = "t4";
    for (int i = 0; i < 8; ++i) {
      AddGpu(&node, absl::StrCat("GPU-t4-", n, "-", i), "nvidia-tesla-t4", i);
    }
    ASSERT_TRUE(t.Register(node).ok());
  }
  v1::Node mig =
      GpuNode();  // gpu-node-1: one whole A100 and one with 7 x 1g.5gb
  ASSERT_TRUE(t.Register(mig).ok());
  v1::Node h100;
  h100.set_name("h100-0");
  for (int i = 0; i < 2; ++i)
    AddGpu(&h100, absl::StrCat("GPU-h-", i), "H100", i);
  ASSERT_TRUE(t.Register(h100).ok());
}

std::set<std::string> Units(const v1::Allocation& a) {
  std::set<std::string> units;
  for (const auto& d : a.devices()) {
    units.insert(d.mig_slice_id().empty() ? d.device_id() : d.mig_slice_id());
  }
  return units;
}

// No unit in two ACTIVE allocations; every capacity entry adds up; allocated
// matches the units of ACTIVE allocations. Returns the ACTIVE allocations by
// id.
std::map<std::string, v1::Allocation> CheckInvariants(E2eTest& t) {
  std::map<std::string, v1::Allocation> active;
  std::map<std::string, std::string> holder;
  std::string token;
  do {
    v1::ListAllocationsRequest req;
    req.set_state(v1::ACTIVE);
    req.set_page_size(1000);
    req.set_page_token(token);
    v1::ListAllocationsResponse resp;
    grpc::Status s = t.Call(&Stub::ListAllocations, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    for (const v1::Allocation& a : resp.allocations()) {
      active[a.id()] = a;
      for (const std::string& unit : Units(a)) {
        auto [it, inserted] = holder.emplace(unit, a.id());
        EXPECT_TRUE(inserted)
            << unit << " is in " << it->second << " and " << a.id();
      }
    }
    token = resp.next_page_token();
  } while (!token.empty());
  int64_t allocated = 0;
  const v1::GetCapacityResponse capacity = t.Capacity();
  for (const v1::CapacityEntry& e : capacity.entries()) {
    EXPECT_EQ(e.free() + e.allocated() + e.unhealthy(), e.total())
        << e.DebugString();
    allocated += e.allocated();
  }
  EXPECT_EQ(allocated, static_cast<int64_t>(holder.size()));
  return active;
}

TEST_F(E2eTest, ApiScenarios) {
  ASSERT_TRUE(StartServer());
  ASSERT_NO_FATAL_FAILURE(RegisterCluster(*this));

  // WatchEvents sees the allocation once it is committed.
  grpc::ClientContext watch_ctx;
  auto watch = stub_->WatchEvents(&watch_ctx, v1::WatchEventsRequest());

  v1::AllocateRequest req =
      AllocateReq("task-1", "nvidia-tesla-a100", 1, "1g.5gb");
  req.set_tenant("flytesnacks/development");
  v1::Allocation a;
  grpc::Status s = Allocate(req, &a);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(a.state(), v1::ACTIVE);
  EXPECT_EQ(a.node(), "gpu-node-1");
  ASSERT_EQ(a.devices_size(), 1);
  EXPECT_EQ(a.devices(0).profile(), "1g.5gb");
  // The single MIG strategy (the node has no nvidia.com/mig.strategy label),
  // as propeller asks; e2e_placement_test.cc has the rest.
  EXPECT_EQ(a.placement().resource_name(), "nvidia.com/gpu");
  EXPECT_EQ(a.placement().resource_count(), 1);
  EXPECT_EQ(a.placement().node_selector().at("kubernetes.io/hostname"),
            "gpu-node-1");
  EXPECT_EQ(
      a.placement().node_selector().at("k8s.amazonaws.com/gpu-partition-size"),
      "1g.5gb");
  EXPECT_TRUE(a.placement().env().empty());
  EXPECT_GT(a.expires_at().seconds(),
            a.created_at().seconds() + 3000);  // 1h default

  v1::Event event;
  ASSERT_TRUE(watch->Read(&event));
  EXPECT_EQ(event.type(), v1::Event::ALLOCATED);
  EXPECT_EQ(event.allocation().id(), a.id());

  // Idempotent retry: same id and devices, nothing new allocated.
  v1::Allocation again;
  ASSERT_TRUE(Allocate(req, &again).ok());
  EXPECT_EQ(again.id(), a.id());
  EXPECT_EQ(Units(again), Units(a));
  req.set_count(2);
  s = Allocate(req);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_THAT(s.error_message(), HasSubstr(a.id()));

  // The whole A100 exists once; the MIG one never counts as whole.
  v1::AllocateRequest whole = AllocateReq("task-2", "A100");
  whole.mutable_accelerator()->set_unpartitioned(true);
  ASSERT_TRUE(Allocate(whole).ok());
  s = Allocate(AllocateReq("task-3", "A100"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(
      s.error_message(),
      HasSubstr("0/4 nodes available: 3 no nvidia-tesla-a100 device, 1 no free "
                "nvidia-tesla-a100 device"));
  s = Allocate(AllocateReq("task-4", "nvidia-tesla-t4", 9));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("at most 8"));
  s = Allocate(AllocateReq("task-5", "nvidia-h100", 1, "1g.5gb"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("accelerator.partition_size \"1g.5gb\""));
  // A MIG profile belongs to a model; without one it is a malformed request.
  s = Allocate(AllocateReq("x", "", 1, "1g.5gb"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("accelerator.partition_size \"1g.5gb\" needs "
                        "accelerator.device"));

  // Explain: a dry run.
  v1::ExplainResponse explain;
  ASSERT_TRUE(
      Call(&Stub::Explain, AllocateReq("task-6", "T4", 8), &explain).ok());
  EXPECT_TRUE(explain.feasible());
  EXPECT_EQ(explain.would_allocate().devices_size(), 8);
  EXPECT_EQ(explain.summary(),
            "2/4 nodes available: 2 no nvidia-tesla-t4 device");
  v1::Allocation missing;
  v1::GetAllocationRequest by_request;
  by_request.set_request_id("task-6");
  EXPECT_EQ(Call(&Stub::GetAllocation, by_request, &missing).error_code(),
            grpc::StatusCode::NOT_FOUND);

  // Read back, list, renew, release (twice), renew after release.
  by_request.set_request_id("task-1");
  v1::Allocation got;
  ASSERT_TRUE(Call(&Stub::GetAllocation, by_request, &got).ok());
  EXPECT_EQ(got.id(), a.id());
  v1::ListAllocationsRequest list;
  list.set_tenant("flytesnacks/development");
  v1::ListAllocationsResponse listed;
  ASSERT_TRUE(Call(&Stub::ListAllocations, list, &listed).ok());
  ASSERT_EQ(listed.allocations_size(), 1);
  v1::RenewLeaseRequest renew;
  renew.set_allocation_id(a.id());
  renew.mutable_lease()->set_seconds(7200);
  v1::Allocation renewed;
  ASSERT_TRUE(Call(&Stub::RenewLease, renew, &renewed).ok());
  EXPECT_GT(renewed.expires_at().seconds(), a.expires_at().seconds());
  v1::ReleaseRequest release;
  release.set_allocation_id(a.id());
  v1::Allocation released;
  ASSERT_TRUE(Call(&Stub::Release, release, &released).ok());
  EXPECT_EQ(released.state(), v1::RELEASED);
  ASSERT_TRUE(Call(&Stub::Release, release, &released).ok());
  EXPECT_EQ(released.state(), v1::RELEASED);
  s = Call(&Stub::RenewLease, renew, &renewed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  v1::ReleaseRequest empty_release;
  s = Call(&Stub::Release, empty_release, &released);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("allocation_id and request_id"));
  ASSERT_TRUE(watch->Read(&event));  // the A100 allocation
  ASSERT_TRUE(watch->Read(&event));
  EXPECT_EQ(event.type(), v1::Event::RELEASED);
  watch_ctx.TryCancel();
  CheckInvariants(*this);
}

TEST_F(E2eTest, LeasesExpireInTheServer) {
  ASSERT_TRUE(StartServer({"--default_lease=1s", "--sweep_interval=100ms"}));
  ASSERT_NO_FATAL_FAILURE(RegisterCluster(*this));
  v1::Allocation a;
  ASSERT_TRUE(Allocate(AllocateReq("short", "H100", 2), &a).ok());
  v1::GetAllocationRequest get;
  get.set_allocation_id(a.id());
  v1::Allocation got;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  do {
    absl::SleepFor(absl::Milliseconds(100));
    ASSERT_TRUE(Call(&Stub::GetAllocation, get, &got).ok());
  } while (got.state() == v1::ACTIVE && absl::Now() < deadline);
  EXPECT_EQ(got.state(), v1::EXPIRED);
  // Its devices are free again.
  EXPECT_TRUE(Allocate(AllocateReq("again", "H100", 2)).ok());
}

TEST_F(E2eTest, RestartKeepsEveryActiveAllocation) {
  ASSERT_TRUE(StartServer());
  ASSERT_NO_FATAL_FAILURE(RegisterCluster(*this));
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(
        Allocate(AllocateReq(absl::StrCat("r", i), "T4", 1 + i % 3)).ok());
  }
  ASSERT_TRUE(Allocate(AllocateReq("mig", "A100", 3, "1g.5gb")).ok());
  v1::ReleaseRequest release;
  release.set_request_id("r2");
  v1::Allocation released;
  ASSERT_TRUE(Call(&Stub::Release, release, &released).ok());
  const std::map<std::string, v1::Allocation> before = CheckInvariants(*this);
  ASSERT_EQ(before.size(), 6u);
  const v1::GetCapacityResponse capacity = Capacity();

  for (int signal : {SIGTERM, SIGKILL}) {
    server_->Stop(signal);
    ASSERT_TRUE(StartServer());
    const std::map<std::string, v1::Allocation> after = CheckInvariants(*this);
    ASSERT_EQ(after.size(), before.size());
    for (const auto& [id, a] : before) {
      EXPECT_EQ(Units(after.at(id)), Units(a)) << id;
    }
    EXPECT_EQ(Capacity().DebugString(), capacity.DebugString());
  }
}

// A server with node n1 holding two T4s (GPU-t4-0 and GPU-t4-1, indices 0 and
// 1), both in allocation `held` (request_id "job"). Call as
// ASSERT_NO_FATAL_FAILURE(...): it asserts.
void TwoT4sBothAllocated(E2eTest& t, v1::Allocation* held) {
  ASSERT_TRUE(t.StartServer());
  v1::Node both;
  both.set_name("n1");
  AddGpu(&both, "GPU-t4-0", "nvidia-tesla-t4", 0);
  AddGpu(&both, "GPU-t4-1", "nvidia-tesla-t4", 1);
  ASSERT_TRUE(t.Register(both).ok());
  ASSERT_TRUE(t.Allocate(AllocateReq("job", "T4", 2), held).ok());
}

// Issue 9 as a user found it: GPU 1 leaves the inventory while allocated, the
// server is killed and started again, the allocation is released and the node
// heartbeats. The node has one T4, and a request for two is refused; before the
// fix the dropped GPU came back free after the restart.
TEST_F(E2eTest, GpuDroppedWhileAllocatedStaysGoneAfterKillAndRestart) {
  v1::Allocation held;
  ASSERT_NO_FATAL_FAILURE(TwoT4sBothAllocated(*this, &held));
  v1::Node only_first;
  only_first.set_name("n1");
  AddGpu(&only_first, "GPU-t4-0", "nvidia-tesla-t4", 0);
  ASSERT_TRUE(Register(only_first).ok());
  ASSERT_EQ(server_->Stop(SIGKILL), 128 + SIGKILL);
  ASSERT_TRUE(StartServer());

  v1::ReleaseRequest release;
  release.set_allocation_id(held.id());
  v1::Allocation released;
  ASSERT_TRUE(Call(&Stub::Release, release, &released).ok());
  v1::HeartbeatRequest heartbeat;
  heartbeat.set_name("n1");
  v1::HeartbeatResponse beat;
  ASSERT_TRUE(Call(&Stub::Heartbeat, heartbeat, &beat).ok());

  const v1::GetCapacityResponse capacity = Capacity();
  ASSERT_EQ(capacity.entries_size(), 1);
  EXPECT_EQ(capacity.entries(0).model(), "nvidia-tesla-t4");
  EXPECT_EQ(capacity.entries(0).total(), 1);
  EXPECT_EQ(capacity.entries(0).free(), 1);
  v1::GetNodeRequest get;
  get.set_name("n1");
  v1::Node node;
  ASSERT_TRUE(Call(&Stub::GetNode, get, &node).ok());
  ASSERT_EQ(node.devices_size(), 1);
  EXPECT_EQ(node.devices(0).id(), "GPU-t4-0");
  EXPECT_EQ(Allocate(AllocateReq("again", "T4", 2)).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

// The same when the GPU that drops is the first: the other is renumbered to
// index 0 while the dropped one, still allocated, keeps index 0 too.
TEST_F(E2eTest, GpusRenumberedAfterADropSurviveKillAndRestart) {
  v1::Allocation held;
  ASSERT_NO_FATAL_FAILURE(TwoT4sBothAllocated(*this, &held));
  v1::Node renumbered;
  renumbered.set_name("n1");
  AddGpu(&renumbered, "GPU-t4-1", "nvidia-tesla-t4", 0);
  grpc::Status s = Register(renumbered);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(server_->Stop(SIGKILL), 128 + SIGKILL);
  ASSERT_TRUE(StartServer());
  v1::ReleaseRequest release;
  release.set_request_id("job");
  v1::Allocation released;
  ASSERT_TRUE(Call(&Stub::Release, release, &released).ok());
  const v1::GetCapacityResponse capacity = Capacity();
  ASSERT_EQ(capacity.entries_size(), 1);
  EXPECT_EQ(capacity.entries(0).total(), 1);
  EXPECT_EQ(capacity.entries(0).free(), 1);
}

// The load of the concurrency and crash tests: `threads` callers allocate and
// release at random until `stop`, recording what was acknowledged.
struct Ledger {
  std::mutex mu;
  std::map<std::string, std::set<std::string>>
      allocated;  // acknowledged, by id
  std::set<std::string> release_tried;
  std::set<std::string> released;  // acknowledged
  std::atomic<int> calls{0};
};

void RunLoad(E2eTest& t, int threads, const std::string& prefix,
             std::atomic<bool>& stop, Ledger& ledger) {
  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w) {
    workers.emplace_back([&, w] {
      auto channel = grpc::CreateChannel(t.server_->grpc_address(),
                                         grpc::InsecureChannelCredentials());
      auto stub = v1::AcceleratorScheduler::NewStub(channel);
      std::mt19937 rng(w);
      std::vector<std::string> mine;
      for (int i = 0; !stop.load(); ++i) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(5));
        if (!mine.empty() && (mine.size() > 3 || rng() % 2 == 0)) {
          const std::string id = mine.back();
          mine.pop_back();
          {
            std::lock_guard<std::mutex> lock(ledger.mu);
            ledger.release_tried.insert(id);
          }
          v1::ReleaseRequest req;
          req.set_allocation_id(id);
          v1::Allocation resp;
          if (stub->Release(&ctx, req, &resp).ok()) {
            std::lock_guard<std::mutex> lock(ledger.mu);
            ledger.released.insert(id);
          }
        } else {
          const bool mig = rng() % 3 == 0;
          v1::AllocateRequest req =
              mig ? AllocateReq(absl::StrCat(prefix, w, "-", i), "A100",
                                1 + static_cast<int>(rng() % 2), "1g.5gb")
                  : AllocateReq(absl::StrCat(prefix, w, "-", i), "T4",
                                1 + static_cast<int>(rng() % 3));
          v1::Allocation resp;
          grpc::Status s = stub->Allocate(&ctx, req, &resp);
          if (s.ok()) {
            mine.push_back(resp.id());
            std::lock_guard<std::mutex> lock(ledger.mu);
            ledger.allocated[resp.id()] = Units(resp);
          } else if (s.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED &&
                     s.error_code() != grpc::StatusCode::UNAVAILABLE &&
                     s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
            ADD_FAILURE() << s.error_code() << " " << s.error_message();
          }
        }
        ++ledger.calls;
      }
    });
  }
  for (std::thread& th : workers) th.join();
}

TEST_F(E2eTest, ThirtyTwoConcurrentClientsNeverDoubleBook) {
  ASSERT_TRUE(StartServer());
  ASSERT_NO_FATAL_FAILURE(RegisterCluster(*this));
  std::atomic<bool> stop{false};
  Ledger ledger;
  std::thread timer([&] {
    absl::SleepFor(absl::Seconds(3));
    stop = true;
  });
  RunLoad(*this, 32, "w", stop, ledger);
  timer.join();
  EXPECT_GT(ledger.calls.load(), 100);
  const std::map<std::string, v1::Allocation> active = CheckInvariants(*this);
  // Exactly the acknowledged allocations that were not released are ACTIVE.
  std::set<std::string> expected;
  for (const auto& [id, units] : ledger.allocated) {
    if (!ledger.released.contains(id)) expected.insert(id);
  }
  std::set<std::string> actual;
  for (const auto& [id, a] : active) actual.insert(id);
  EXPECT_EQ(actual, expected);
  std::printf(
      "load: %d calls, %zu acknowledged allocations, %zu acknowledged "
      "releases\n",
      ledger.calls.load(), ledger.allocated.size(), ledger.released.size());
}

TEST_F(E2eTest, KilledMidLoadKeepsEveryAcknowledgedChange) {
  ASSERT_TRUE(StartServer());
  ASSERT_NO_FATAL_FAILURE(RegisterCluster(*this));
  Ledger ledger;
  for (int round = 0; round < 3; ++round) {
    std::atomic<bool> stop{false};
    std::thread killer([&] {
      absl::SleepFor(absl::Milliseconds(700));
      server_->Stop(SIGKILL);
      stop = true;
    });
    RunLoad(*this, 16, absl::StrCat("round", round, "-w"), stop, ledger);
    killer.join();
    ASSERT_TRUE(StartServer());
    const std::map<std::string, v1::Allocation> active = CheckInvariants(*this);
    for (const auto& [id, units] : ledger.allocated) {
      v1::GetAllocationRequest get;
      get.set_allocation_id(id);
      v1::Allocation got;
      grpc::Status s = Call(&Stub::GetAllocation, get, &got);
      ASSERT_TRUE(s.ok()) << "acknowledged allocation " << id
                          << " lost: " << s.error_message();
      EXPECT_EQ(Units(got), units) << id;
      if (ledger.released.contains(id)) {
        EXPECT_EQ(got.state(), v1::RELEASED)
            << "acknowledged release of " << id << " lost";
      } else if (!ledger.release_tried.contains(id)) {
        EXPECT_EQ(got.state(), v1::ACTIVE) << id;
      }
    }
  }
  EXPECT_GT(ledger.allocated.size(), 10u);
  std::printf(
      "3 kills: %d calls, %zu acknowledged allocations, %zu acknowledged "
      "releases, all intact\n",
      ledger.calls.load(), ledger.allocated.size(), ledger.released.size());
}

}  // namespace
}  // namespace accelsched
