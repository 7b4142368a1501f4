// Queueing end to end against the real server and a real SQLite file:
// pending requests admitted on release (GetAllocation polling and
// WatchEvents), fair shares over 1,000 admissions, backfill behind a
// reservation, quotas and a cohort from --tenants with reclaim by
// preemption, gangs, and kill -9 in the middle of it all.
#include <google/protobuf/util/time_util.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/e2e_fixture.h"
#include "tests/support/http_client.h"

namespace accelsched {
namespace {

using ::google::protobuf::util::TimeUtil;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Stub = v1::AcceleratorScheduler::Stub;

v1::Node T4Node(const std::string& name, int gpus,
                const std::string& rack = "") {
  v1::Node n;
  n.set_name(name);
  (*n.mutable_labels())["host"] = name;
  if (!rack.empty()) (*n.mutable_labels())["rack"] = rack;
  for (int i = 0; i < gpus; ++i) {
    AddGpu(&n, absl::StrCat(name, "-gpu", i), "nvidia-tesla-t4", i);
  }
  return n;
}

v1::AllocateRequest Queued(const std::string& id, int count = 1,
                           const std::string& tenant = "", int priority = 0,
                           absl::Duration lease = absl::ZeroDuration()) {
  v1::AllocateRequest r = AllocateReq(id, "nvidia-tesla-t4", count);
  r.set_queue(true);
  r.set_tenant(tenant);
  r.set_priority(priority);
  if (lease > absl::ZeroDuration()) {
    r.mutable_lease()->set_seconds(absl::ToInt64Seconds(lease));
  }
  return r;
}

class E2eQueueTest : public E2eTest {
 protected:
  v1::Allocation Get(const std::string& request_id) {
    v1::GetAllocationRequest req;
    req.set_request_id(request_id);
    v1::Allocation a;
    grpc::Status s = Call(&Stub::GetAllocation, req, &a);
    EXPECT_TRUE(s.ok()) << request_id << ": " << s.error_message();
    return a;
  }
  v1::Allocation Must(const v1::AllocateRequest& req) {
    v1::Allocation a;
    grpc::Status s = Allocate(req, &a);
    EXPECT_TRUE(s.ok()) << req.request_id() << ": " << s.error_message();
    return a;
  }
  void Release(const std::string& request_id) {
    v1::ReleaseRequest req;
    req.set_request_id(request_id);
    v1::Allocation a;
    grpc::Status s = Call(&Stub::Release, req, &a);
    EXPECT_TRUE(s.ok()) << request_id << ": " << s.error_message();
  }
  v1::GetQueueResponse Queue(const std::string& tenant = "") {
    v1::GetQueueRequest req;
    req.set_tenant(tenant);
    v1::GetQueueResponse resp;
    grpc::Status s = Call(&Stub::GetQueue, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }
  std::vector<v1::Allocation> InState(v1::AllocationState state) {
    std::vector<v1::Allocation> out;
    v1::ListAllocationsRequest req;
    req.set_state(state);
    req.set_page_size(1000);
    for (;;) {
      v1::ListAllocationsResponse resp;
      EXPECT_TRUE(Call(&Stub::ListAllocations, req, &resp).ok());
      out.insert(out.end(), resp.allocations().begin(),
                 resp.allocations().end());
      if (resp.next_page_token().empty()) return out;
      req.set_page_token(resp.next_page_token());
    }
  }
  // No device in two allocations that hold devices (ACTIVE, or PREEMPTED in
  // its grace).
  void ExpectNoDeviceTwice() {
    std::set<std::string> held;
    for (auto state : {v1::ACTIVE, v1::PREEMPTED}) {
      for (const v1::Allocation& a : InState(state)) {
        if (a.placements().empty()) continue;  // ended: holds nothing
        for (const v1::AllocatedDevice& d : a.devices()) {
          EXPECT_TRUE(held.insert(d.device_id()).second)
              << d.device_id() << " is in two allocations";
        }
      }
    }
  }
  std::string WriteTenants(const std::string& text) {
    const std::string path = dir_.File("tenants.textproto");
    std::ofstream(path) << text;
    return path;
  }
  // Releases the oldest running allocation `rounds` times while each tenant
  // keeps two requests waiting; returns admissions per tenant.
  std::map<std::string, int> AdmissionsUnderLoad(
      const std::vector<std::string>& tenants, int rounds) {
    std::map<std::string, int> admitted, pending, next;
    std::deque<std::string> running;
    std::set<std::string> seen;
    auto top_up = [&] {
      for (bool more = true; more;) {
        more = false;
        for (const std::string& t : tenants) {
          if (pending[t] >= 2) continue;
          more = true;
          const std::string id = absl::StrCat(t, "-", next[t]++);
          const v1::Allocation a = Must(Queued(id, 1, t));
          if (a.state() == v1::ACTIVE) {
            running.push_back(id);
            seen.insert(id);
          } else {
            ++pending[t];
          }
        }
      }
    };
    top_up();
    for (int round = 0; round < rounds; ++round) {
      Release(running.front());
      running.pop_front();
      for (const v1::Allocation& a : InState(v1::ACTIVE)) {
        if (seen.insert(a.request_id()).second) {
          running.push_back(a.request_id());
          ++admitted[a.tenant()];
          --pending[a.tenant()];
        }
      }
      top_up();
    }
    return admitted;
  }
};

TEST_F(E2eQueueTest, APendingRequestIsAdmittedOnReleaseAndAnnounced) {
  ASSERT_TRUE(StartServer());
  ASSERT_TRUE(Register(T4Node("n1", 1)).ok());
  ASSERT_TRUE(Allocate(AllocateReq("first", "nvidia-tesla-t4")).ok());
  // Not queued: RESOURCE_EXHAUSTED as before.
  EXPECT_EQ(Allocate(AllocateReq("plain", "nvidia-tesla-t4")).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  v1::WatchEventsRequest watch;
  watch.set_request_id("second");
  grpc::ClientContext watch_ctx;
  watch_ctx.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(30));
  auto reader = stub_->WatchEvents(&watch_ctx, watch);
  const v1::Allocation pending = Must(Queued("second", 1, "team"));
  EXPECT_EQ(pending.state(), v1::PENDING);
  EXPECT_EQ(pending.queue_position(), 1);
  EXPECT_THAT(pending.pending_reason(), HasSubstr("no node has 1 free"));
  EXPECT_TRUE(pending.placements().empty());
  const v1::GetQueueResponse queue = Queue();
  ASSERT_EQ(queue.pending_size(), 1);
  EXPECT_EQ(queue.pending(0).id(), pending.id());
  // The Explain of a pending request says where it stands.
  v1::ExplainResponse explain;
  ASSERT_TRUE(Call(&Stub::Explain, Queued("second", 1, "team"), &explain).ok());
  EXPECT_EQ(explain.queue_position(), 1);
  EXPECT_FALSE(explain.feasible());
  Release("first");
  v1::Event e;
  ASSERT_TRUE(reader->Read(&e));
  EXPECT_EQ(e.type(), v1::Event::ADMITTED);
  EXPECT_EQ(e.allocation().id(), pending.id());
  const v1::Allocation admitted = Get("second");
  EXPECT_EQ(admitted.state(), v1::ACTIVE);
  EXPECT_EQ(admitted.queue_position(), 0);
  ASSERT_EQ(admitted.placements_size(), 1);
  EXPECT_EQ(admitted.placement().resource_count(), 1);
  EXPECT_EQ(Queue().pending_size(), 0);
  watch_ctx.TryCancel();
}

// The steps of the cycle a request's Explain ran, as "plugin@point" strings.
std::vector<std::string> StepNames(const v1::ExplainResponse& explain) {
  std::vector<std::string> names;
  for (const v1::CycleStep& step : explain.steps()) {
    names.push_back(absl::StrCat(step.plugin(), "@", step.extension_point()));
  }
  return names;
}

// The step of `plugin` at `point`; fails the test when there is none.
v1::CycleStep StepOf(const v1::ExplainResponse& explain,
                     const std::string& plugin, const std::string& point) {
  for (const v1::CycleStep& step : explain.steps()) {
    if (step.plugin() == plugin && step.extension_point() == point) {
      return step;
    }
  }
  ADD_FAILURE() << "no step " << plugin << "@" << point << " in "
                << testing::PrintToString(StepNames(explain));
  return v1::CycleStep();
}

// ExplainResponse.steps is the record of the scheduling cycle, served over
// gRPC: each plugin, its extension point, the nodes it let through and what
// it decided; and what Explain says the cycle would do is what Allocate and
// the admission pass then do, as they run the same cycle.
TEST_F(E2eQueueTest, ExplainServesTheCycleStepsThatAllocateThenFollows) {
  ASSERT_TRUE(StartServer());
  ASSERT_TRUE(Register(T4Node("n1", 2)).ok());
  ASSERT_TRUE(Register(T4Node("n2", 1)).ok());
  // A node_selector that only n2 matches: label_selector lets one node
  // through, and the packing policy chooses it.
  v1::AllocateRequest only_n2 = AllocateReq("n2-only", "nvidia-tesla-t4", 1);
  (*only_n2.mutable_node_selector())["host"] = "n2";
  v1::ExplainResponse explain;
  ASSERT_TRUE(Call(&Stub::Explain, only_n2, &explain).ok());
  EXPECT_TRUE(explain.feasible());
  const std::vector<std::string> names = StepNames(explain);
  EXPECT_THAT(names, testing::IsSupersetOf(
                         {"accelerator_fit@PreFilter", "quota@PreFilter",
                          "label_selector@Filter", "schedulable@Filter",
                          "fragmentation@Score", "fair_share@Reserve"}));
  // In the order the cycle ran them: PreFilter, Filter, Score, Reserve.
  auto at = [&](const std::string& name) {
    return std::find(names.begin(), names.end(), name) - names.begin();
  };
  EXPECT_LT(at("quota@PreFilter"), at("label_selector@Filter"));
  EXPECT_LT(at("label_selector@Filter"), at("fragmentation@Score"));
  EXPECT_LT(at("fragmentation@Score"), at("fair_share@Reserve"));
  const v1::CycleStep selector = StepOf(explain, "label_selector", "Filter");
  EXPECT_EQ(selector.nodes_in(), 2);
  EXPECT_EQ(selector.nodes_out(), 1);
  const v1::CycleStep chose = StepOf(explain, "fragmentation", "Score");
  EXPECT_EQ(chose.nodes_out(), 1);
  EXPECT_THAT(chose.detail(), HasSubstr("chose n2"));
  // No PostFilter ran: it fits.
  for (const v1::CycleStep& step : explain.steps()) {
    EXPECT_NE(step.extension_point(), "PostFilter") << step.plugin();
  }
  v1::Allocation placed = Must(only_n2);
  EXPECT_EQ(placed.node(), "n2");

  // A low-priority request takes n1's two GPUs; a high-priority queued one
  // of two would preempt it: Explain says so, and the admission pass does.
  ASSERT_EQ(Must(Queued("low", 2, "", 0)).node(), "n1");
  const v1::AllocateRequest high = Queued("high", 2, "", 10);
  ASSERT_TRUE(Call(&Stub::Explain, high, &explain).ok());
  EXPECT_FALSE(explain.feasible());
  const v1::CycleStep preemption = StepOf(explain, "preemption", "PostFilter");
  EXPECT_EQ(preemption.detail(), "would preempt 1 allocation");
  // Nothing changed: low is still ACTIVE, high does not exist yet.
  EXPECT_EQ(Get("low").state(), v1::ACTIVE);
  const v1::Allocation pending = Must(high);
  EXPECT_EQ(pending.state(), v1::PENDING);
  EXPECT_THAT(pending.pending_reason(),
              HasSubstr("preempted 1 allocation, waiting for their grace"));
  EXPECT_EQ(Get("low").state(), v1::PREEMPTED);
}

TEST_F(E2eQueueTest, EqualTenantsShareWithinFivePercentOver1000Admissions) {
  ASSERT_TRUE(StartServer());
  ASSERT_TRUE(Register(T4Node("n1", 8)).ok());
  ASSERT_TRUE(Register(T4Node("n2", 8)).ok());
  std::map<std::string, int> admitted = AdmissionsUnderLoad({"a", "b"}, 1000);
  ASSERT_EQ(admitted["a"] + admitted["b"], 1000);
  const double share_a = admitted["a"] / 1000.0;
  EXPECT_NEAR(share_a, 0.5, 0.05);
  std::printf("equal weights: a %d, b %d of 1000 admissions\n", admitted["a"],
              admitted["b"]);
  ExpectNoDeviceTwice();
}

TEST_F(E2eQueueTest, WeightsThreeToOneGiveSeventyFiveTwentyFive) {
  const std::string tenants = WriteTenants(R"pb(
    tenants { name: "a" weight: 3 }
    tenants { name: "b" weight: 1 }
  )pb");
  ASSERT_TRUE(StartServer({"--tenants=" + tenants}));
  ASSERT_TRUE(Register(T4Node("n1", 8)).ok());
  ASSERT_TRUE(Register(T4Node("n2", 8)).ok());
  std::map<std::string, int> admitted = AdmissionsUnderLoad({"a", "b"}, 1000);
  ASSERT_EQ(admitted["a"] + admitted["b"], 1000);
  EXPECT_NEAR(admitted["a"] / 1000.0, 0.75, 0.05);
  std::printf("weights 3:1: a %d, b %d of 1000 admissions\n", admitted["a"],
              admitted["b"]);
  const v1::GetQueueResponse queue = Queue();
  std::map<std::string, double> share;
  for (const v1::TenantUsage& t : queue.tenants()) {
    share[t.tenant()] = t.dominant_share();
  }
  EXPECT_NEAR(share["a"], share["b"], 0.07);  // 12/16/3 vs 4/16
}

// Eight 1-GPU jobs end 1..4 s from now (two per second); an 8-GPU request
// reserves the node for when the last ends. A stream of 60 s requests does
// not get ahead of it; a 1 s one is backfilled and ends before.
TEST_F(E2eQueueTest, ABigRequestIsAdmittedByItsReservation) {
  ASSERT_TRUE(StartServer({"--sweep_interval=50ms"}));
  ASSERT_TRUE(Register(T4Node("n1", 8)).ok());
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(Allocate(Queued(absl::StrCat("run-", i), 1, "", 0,
                                absl::Seconds(1 + i / 2)))
                    .ok());
  }
  const absl::Time last_end = absl::Now() + absl::Seconds(4);
  const v1::Allocation big = Must(Queued("big", 8));
  ASSERT_EQ(big.state(), v1::PENDING);
  EXPECT_THAT(big.pending_reason(), HasSubstr("holds n1 from"));
  // Its estimated start is when the last lease on n1 ends: in the reply,
  // GetAllocation, GetQueue and Explain alike.
  int64_t last_lease_end = 0;  // ns
  for (int i = 0; i < 8; ++i) {
    last_lease_end = std::max(last_lease_end,
                              TimeUtil::TimestampToNanoseconds(
                                  Get(absl::StrCat("run-", i)).expires_at()));
  }
  EXPECT_EQ(TimeUtil::TimestampToNanoseconds(big.estimated_start()),
            last_lease_end);
  EXPECT_EQ(TimeUtil::TimestampToNanoseconds(Get("big").estimated_start()),
            last_lease_end);
  const v1::GetQueueResponse queue = Queue();
  ASSERT_GE(queue.pending_size(), 1);
  EXPECT_EQ(queue.pending(0).request_id(), "big");
  EXPECT_EQ(
      TimeUtil::TimestampToNanoseconds(queue.pending(0).estimated_start()),
      last_lease_end);
  v1::ExplainResponse explained;
  ASSERT_TRUE(Call(&Stub::Explain, Queued("big", 8), &explained).ok());
  EXPECT_EQ(TimeUtil::TimestampToNanoseconds(explained.estimated_start()),
            last_lease_end);
  int stream = 0, backfilled = 0;
  std::set<std::string> admitted_before_big;
  while (Get("big").state() == v1::PENDING) {
    ASSERT_LT(absl::Now(), last_end + absl::Seconds(3)) << "big never started";
    const v1::Allocation s = Must(
        Queued(absl::StrCat("stream-", stream++), 1, "", 0, absl::Seconds(60)));
    if (s.state() == v1::ACTIVE) admitted_before_big.insert(s.request_id());
    v1::AllocateRequest quick =
        Queued(absl::StrCat("quick-", stream), 1, "", 0, absl::Seconds(1));
    quick.set_queue(false);
    v1::Allocation q;
    if (Allocate(quick, &q).ok()) ++backfilled;
    absl::SleepFor(absl::Milliseconds(100));
  }
  const v1::Allocation started = Get("big");
  EXPECT_EQ(started.devices_size(), 8);
  EXPECT_TRUE(admitted_before_big.empty())
      << *admitted_before_big.begin() << " got ahead of the reservation";
  EXPECT_GT(backfilled, 0);
  const absl::Time admitted_at =
      absl::FromUnixSeconds(started.admitted_at().seconds()) +
      absl::Nanoseconds(started.admitted_at().nanos());
  EXPECT_LT(admitted_at, last_end + absl::Seconds(1));
  std::printf(
      "big admitted %.2f s after the last 1-GPU job's lease; %d "
      "backfilled 1 s jobs, %d queued 60 s jobs kept waiting\n",
      absl::ToDoubleSeconds(admitted_at - last_end), backfilled, stream);
  ExpectNoDeviceTwice();
}

// Kueue's cohort example (site/content/en/docs/concepts/cluster_queue.md):
// team-a (nominal 9) and team-b (nominal 12) in one cohort.
TEST_F(E2eQueueTest, CohortQuotaIsBorrowedAndReclaimedByPreemption) {
  const std::string tenants = WriteTenants(R"pb(
    tenants {
      name: "team-a"
      cohort: "team-ab"
      quotas { model: "T4" nominal: 9 }
    }
    tenants {
      name: "team-b"
      cohort: "team-ab"
      quotas { model: "nvidia-tesla-t4" nominal: 12 }
    }
  )pb");
  ASSERT_TRUE(StartServer({"--tenants=" + tenants, "--preemption_grace=1s",
                           "--sweep_interval=50ms"}));
  for (int n = 0; n < 4; ++n) {
    ASSERT_TRUE(Register(T4Node(absl::StrCat("n", n), 8)).ok());
  }
  for (int i = 0; i < 21; ++i) {
    ASSERT_EQ(Must(Queued(absl::StrCat("a-", i), 1, "team-a")).state(),
              v1::ACTIVE);
  }
  const v1::Allocation over = Must(Queued("a-21", 1, "team-a"));
  EXPECT_EQ(over.state(), v1::PENDING);
  EXPECT_THAT(over.pending_reason(),
              HasSubstr("quota: cohort team-ab at 21/21"));
  v1::AllocateRequest plain = AllocateReq("a-plain", "nvidia-tesla-t4");
  plain.set_tenant("team-a");
  grpc::Status refused = Allocate(plain);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(), HasSubstr("quota: cohort team-ab"));
  const v1::Allocation b = Must(Queued("b-0", 4, "team-b"));
  EXPECT_EQ(b.state(), v1::PENDING);
  std::vector<std::string> preempted;
  for (const v1::Allocation& a : InState(v1::PREEMPTED)) {
    preempted.push_back(a.request_id());
    EXPECT_EQ(a.preempted_by(), b.id());
  }
  std::sort(preempted.begin(), preempted.end());
  EXPECT_THAT(preempted, ElementsAre("a-17", "a-18", "a-19", "a-20"));
  ExpectNoDeviceTwice();
  for (int tries = 0; Get("b-0").state() != v1::ACTIVE; ++tries) {
    ASSERT_LT(tries, 100) << "b-0 not admitted after the grace";
    absl::SleepFor(absl::Milliseconds(50));
  }
  const std::string metrics = *HttpGet(server_->metrics_port(), "/metrics");
  EXPECT_EQ(
      SampleValue(metrics, "accelsched_preemptions_total{tenant=\"team-a\"}"),
      4);
  EXPECT_EQ(
      SampleValue(metrics, "accelsched_allocations_pending{tenant=\"team-a\"}"),
      1);
  const v1::GetQueueResponse queue = Queue("team-a");
  ASSERT_EQ(queue.tenants_size(), 1);
  ASSERT_EQ(queue.tenants(0).usage_size(), 1);
  EXPECT_EQ(queue.tenants(0).usage(0).used(), 17);
  EXPECT_EQ(queue.tenants(0).usage(0).nominal_quota(), 9);
  EXPECT_EQ(queue.tenants(0).usage(0).borrowed(), 8);
  EXPECT_EQ(queue.tenants(0).usage(0).used_milli(), 17000);
  EXPECT_EQ(queue.tenants(0).usage(0).nominal_quota_milli(), 9000);
  EXPECT_EQ(queue.tenants(0).usage(0).borrowed_milli(), 8000);
  ExpectNoDeviceTwice();
}

TEST_F(E2eQueueTest, AGangOfFourTimesEightNeverHalfAdmits) {
  ASSERT_TRUE(StartServer());
  for (int n = 0; n < 5; ++n) {
    ASSERT_TRUE(
        Register(T4Node(absl::StrCat("n", n), 8, n < 3 ? "r1" : "r2")).ok());
  }
  // One GPU busy on each of two nodes: three wholly free nodes.
  for (const char* host : {"n0", "n3"}) {
    v1::AllocateRequest r =
        AllocateReq(absl::StrCat("busy-", host), "nvidia-tesla-t4");
    (*r.mutable_node_selector())["host"] = host;
    ASSERT_TRUE(Allocate(r).ok());
  }
  v1::AllocateRequest gang = Queued("gang", 8);
  gang.set_replicas(4);
  const v1::Allocation waiting = Must(gang);
  EXPECT_EQ(waiting.state(), v1::PENDING);
  EXPECT_THAT(waiting.pending_reason(), HasSubstr("no 4 nodes"));
  int64_t allocated = 0;
  const v1::GetCapacityResponse capacity = Capacity();
  for (const v1::CapacityEntry& e : capacity.entries()) {
    allocated += e.allocated();
  }
  EXPECT_EQ(allocated, 2);  // nothing of the gang
  Release("busy-n0");
  const v1::Allocation admitted = Get("gang");
  ASSERT_EQ(admitted.state(), v1::ACTIVE);
  EXPECT_EQ(admitted.devices_size(), 32);
  ASSERT_EQ(admitted.placements_size(), 4);
  std::set<std::string> hosts;
  for (const v1::Placement& p : admitted.placements()) {
    EXPECT_EQ(p.resource_count(), 8);
    hosts.insert(p.node_selector().at("kubernetes.io/hostname"));
  }
  EXPECT_EQ(hosts.size(), 4u);
  // A gang bound to one rack: r2 (two nodes) cannot hold three groups.
  v1::AllocateRequest racked = Queued("racked", 1);
  racked.set_replicas(3);
  racked.set_topology_key("rack");
  EXPECT_EQ(Must(racked).state(), v1::PENDING);
  v1::AllocateRequest bad = Queued("bad", 1);
  bad.set_replicas(-1);
  grpc::Status s = Allocate(bad);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("replicas"));
  bad.set_replicas(2);
  bad.set_topology_key("not a key!");
  s = Allocate(bad);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("topology_key"));
}

// kill -9 with requests pending and a preemption in its grace: after the
// restart the queue is in the same order, the victim keeps its devices
// until its grace ends, and only then does the preemptor start.
TEST_F(E2eQueueTest, KillNineMidQueueKeepsOrderAndPreemptions) {
  ASSERT_TRUE(StartServer({"--preemption_grace=3s"}));
  ASSERT_TRUE(Register(T4Node("n1", 2)).ok());
  ASSERT_TRUE(Allocate(AllocateReq("low", "nvidia-tesla-t4", 2)).ok());
  for (int i = 0; i < 6; ++i) {
    ASSERT_EQ(Must(Queued(absl::StrCat("p-", i), 1, absl::StrCat("t", i % 3)))
                  .state(),
              v1::PENDING);
  }
  const v1::Allocation urgent = Must(Queued("urgent", 2, "c", 9));
  ASSERT_EQ(urgent.state(), v1::PENDING);
  ASSERT_EQ(Get("low").state(), v1::PREEMPTED);
  const absl::Time grace_end =
      absl::FromUnixSeconds(Get("low").expires_at().seconds());
  std::vector<std::string> before;
  const v1::GetQueueResponse queued = Queue();
  for (const v1::Allocation& a : queued.pending()) before.push_back(a.id());
  ASSERT_EQ(server_->Stop(SIGKILL), 128 + SIGKILL);
  ASSERT_TRUE(StartServer({"--preemption_grace=3s"}));
  std::vector<std::string> after;
  const v1::GetQueueResponse requeued = Queue();
  for (const v1::Allocation& a : requeued.pending()) after.push_back(a.id());
  EXPECT_EQ(after, before);
  EXPECT_EQ(before.front(), urgent.id());
  ExpectNoDeviceTwice();
  while (Get("urgent").state() == v1::PENDING) {
    ASSERT_EQ(Get("low").state(), v1::PREEMPTED);
    ASSERT_LT(absl::Now(), grace_end + absl::Seconds(5));
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_GE(absl::Now(), grace_end);
  EXPECT_EQ(Get("urgent").state(), v1::ACTIVE);
  EXPECT_EQ(Get("low").placements_size(), 0);  // ended: holds nothing
  ExpectNoDeviceTwice();
}

TEST_F(E2eQueueTest, ABadTenantsFileStopsStartUpNamingTheLine) {
  const std::string tenants = WriteTenants(R"pb(
    tenants { name: "a" }
    tenants {
      name: "b"
      quotas { model: "no-such-gpu" nominal: 1 }
    }
  )pb");
  std::string output;
  EXPECT_EQ(ServerProcess::RunToExit(
                {"--db=" + db_, "--listen=127.0.0.1:0",
                 "--metrics_listen=127.0.0.1:0", "--tenants=" + tenants},
                &output),
            1);
  EXPECT_THAT(output, HasSubstr(absl::StrCat(tenants,
                                             ":3: tenants[1] (b): "
                                             "quotas[0].model")));
}

// Topology levels through the real server: the worked example of
// docs/concepts/topology.md. A gang of 4 that must stay in one block and
// prefers one rack takes r1 whole and r3, not r2; a rack could never hold it; a
// level the server was not given is refused by name; a bad --topology_levels
// stops start-up.
TEST_F(E2eQueueTest, AGangTakesTheFewestRacksOfOneBlock) {
  ASSERT_TRUE(StartServer({"--topology_levels=block,rack"}));
  for (const auto& [block, rack, n] :
       std::vector<std::tuple<std::string, std::string, int>>{
           {"b1", "r1", 3},
           {"b1", "r2", 2},
           {"b1", "r3", 1},
           {"b2", "r4", 3}}) {
    for (int i = 0; i < n; ++i) {
      v1::Node node = T4Node(absl::StrCat(rack, "-", i), 8, rack);
      (*node.mutable_labels())["block"] = block;
      ASSERT_TRUE(Register(node).ok());
    }
  }
  v1::AllocateRequest gang = Queued("train-1", 8);
  gang.set_replicas(4);
  gang.set_required_topology("block");
  gang.set_preferred_topology("rack");
  const v1::Allocation a = Must(gang);
  ASSERT_EQ(a.state(), v1::ACTIVE);
  std::set<std::string> hosts;
  for (const v1::AllocatedDevice& d : a.devices()) hosts.insert(d.node());
  EXPECT_THAT(hosts, ElementsAre("r1-0", "r1-1", "r1-2", "r3-0"));
  v1::AllocateRequest rack = gang;
  rack.set_request_id("train-2");
  rack.set_required_topology("rack");
  rack.clear_preferred_topology();
  v1::Allocation refused;
  grpc::Status s = Allocate(rack, &refused);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(),
              HasSubstr("no domain of topology level rack could ever hold 4 "
                        "groups of 8 nvidia-tesla-t4 devices: the largest, "
                        "rack=r1, has 3 nodes that could"));
  rack.set_required_topology("zone");
  s = Allocate(rack, &refused);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("required_topology \"zone\" is not one of the "
                        "server's --topology_levels (block,rack)"));
  std::string output;
  EXPECT_EQ(
      ServerProcess::RunToExit(
          {"--db=" + db_ + "-2", "--listen=127.0.0.1:0",
           "--metrics_listen=127.0.0.1:0", "--topology_levels=rack,Bad Label"},
          &output),
      1);
  EXPECT_THAT(output, HasSubstr("--topology_levels: \"Bad Label\" is not a "
                                "Kubernetes label key"));
}

}  // namespace
}  // namespace accelsched
