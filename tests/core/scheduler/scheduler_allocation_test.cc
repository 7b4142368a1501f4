#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/matching/allocation_request.h"
#include "core/placement/placement.h"
#include "core/scheduler/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/blocking_scheduler.h"
#include "tests/support/fake_store.h"
#include "tests/support/scheduler_test_util.h"
#include "tests/support/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

// The scheduler with a packing policy: the default (kFragmentation), or
// best fit for the tests of its rule.
template <Packing kPacking>
class SchedulerWithPackingTest : public testing::Test {
 protected:
  static Scheduler::Options Opts() {
    Scheduler::Options o;
    o.packing = kPacking;
    o.default_lease = absl::Hours(1);
    o.heartbeat_timeout = absl::Minutes(5);
    o.retention = absl::Hours(1);
    return o;
  }

  void Register(Node n) { ASSERT_OK(s_.RegisterNode(std::move(n))); }

  std::vector<std::string> DeviceIds(const Allocation& a) {
    std::vector<std::string> ids;
    for (const AllocatedDevice& d : a.devices) {
      ids.push_back(d.mig_slice_id.empty() ? d.device_id : d.mig_slice_id);
    }
    return ids;
  }

  CapacityEntry Cap(absl::string_view model, absl::string_view partition) {
    for (const CapacityEntry& e : s_.GetCapacity()) {
      if (e.model == model && e.partition == partition) return e;
    }
    ADD_FAILURE() << "no capacity entry " << model << " " << partition;
    return {};
  }

  FakeStore store_;
  FakeClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  BlockingScheduler s_{&store_, &clock_, BuiltinAcceleratorTypes(), Opts()};
};
using SchedulerAllocationTest =
    SchedulerWithPackingTest<Packing::kFragmentation>;
using SchedulerBestFitTest = SchedulerWithPackingTest<Packing::kBestFit>;

TEST_F(SchedulerAllocationTest, WholeGpusAreAllocatedDurablyWithPlacement) {
  Register(MakeNode(
      "n1",
      {Gpu("GPU-a", "T4", 0), Gpu("GPU-b", "T4", 1), Gpu("GPU-c", "T4", 2)},
      {{"kubernetes.io/hostname", "host-1"}}));
  AllocationRequest r = Want("task-1", "nvidia-tesla-t4", 2);
  r.tenant = "proj/dev";
  absl::StatusOr<Allocation> a = s_.Allocate(r);
  ASSERT_OK(a);
  EXPECT_EQ(a->state, AllocationState::kActive);
  EXPECT_EQ(a->node, "n1");
  EXPECT_THAT(DeviceIds(*a), ElementsAre("GPU-a", "GPU-b"));
  EXPECT_EQ(a->expires_at, clock_.Now() + absl::Hours(1));
  EXPECT_EQ(store_.allocations().at(a->id).allocation, *a);

  // The placement's input, taken from the node and the registry.
  EXPECT_THAT(a->targets, ElementsAre(PlacementTarget{"n1", "host-1",
                                                      "nvidia-tesla-t4", ""}));
  const Placement p = BuildPlacement(*a, PlacementOptions());
  EXPECT_EQ(p.resource_name, "nvidia.com/gpu");
  EXPECT_EQ(p.resource_count, 2);
  EXPECT_THAT(p.node_selector,
              UnorderedElementsAre(
                  Pair("kubernetes.io/hostname", "host-1"),
                  Pair("k8s.amazonaws.com/accelerator", "nvidia-tesla-t4")));
  EXPECT_THAT(p.env, IsEmpty());
  EXPECT_THAT(p.tolerations,
              ElementsAre(Toleration{"k8s.amazonaws.com/accelerator", "Equal",
                                     "nvidia-tesla-t4", "NoSchedule"}));
  EXPECT_THAT(BuildPlacement(*a, {.nvidia_visible_devices = true}).env,
              ElementsAre(Pair("NVIDIA_VISIBLE_DEVICES", "GPU-a,GPU-b")));

  EXPECT_EQ(Cap("nvidia-tesla-t4", ""),
            (CapacityEntry{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", "", 3, 2,
                           1, 0}));
  EXPECT_THAT(s_.Stats().active_by_tenant, ElementsAre(Pair("proj/dev", 1)));
}

TEST_F(SchedulerAllocationTest,
       RetryWithTheSameRequestIdReturnsTheSameAllocation) {
  Register(MakeNode("n1", {Gpu("GPU-a", "T4", 0), Gpu("GPU-b", "T4", 1)}));
  absl::StatusOr<Allocation> first = s_.Allocate(Want("task-1", "T4"));
  ASSERT_OK(first);
  // Any spelling of the same model is the same request.
  absl::StatusOr<Allocation> again = s_.Allocate(Want("task-1", "Tesla T4"));
  ASSERT_OK(again);
  EXPECT_EQ(*again, *first);
  EXPECT_EQ(Cap("nvidia-tesla-t4", "").allocated, 1);

  EXPECT_THAT(s_.Allocate(Want("task-1", "T4", 2)),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       HasSubstr("request_id \"task-1\" already holds")));
  EXPECT_THAT(s_.Allocate(Want("task-1", "L4")),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr(first->id)));

  // Once released, the request id may allocate again.
  ASSERT_OK(s_.Release({first->id, ""}));
  absl::StatusOr<Allocation> next = s_.Allocate(Want("task-1", "T4", 2));
  ASSERT_OK(next);
  EXPECT_NE(next->id, first->id);
  EXPECT_EQ(s_.GetAllocation({"", "task-1"})->id, next->id);
}

TEST_F(SchedulerBestFitTest, BestFitPrefersTheNodeWithFewestFreeDevices) {
  Register(MakeNode("a", {Gpu("a0", "T4", 0), Gpu("a1", "T4", 1),
                          Gpu("a2", "T4", 2), Gpu("a3", "T4", 3)}));
  Register(MakeNode("b", {Gpu("b0", "T4", 0), Gpu("b1", "T4", 1)}));
  // Both fit one device; b (2 free) strands less than a (4 free).
  EXPECT_EQ(s_.Allocate(Want("r1", "T4"))->node, "b");
  // Three fit only on a.
  EXPECT_EQ(s_.Allocate(Want("r2", "T4", 3))->node, "a");
  // a has 1 free, b has 1 free: the tie goes to the smaller name.
  EXPECT_EQ(s_.Allocate(Want("r3", "T4"))->node, "a");
  EXPECT_EQ(s_.Allocate(Want("r4", "T4"))->node, "b");
  EXPECT_THAT(
      s_.Allocate(Want("r5", "T4")),
      StatusIs(
          absl::StatusCode::kResourceExhausted,
          HasSubstr("0/2 nodes available: 2 no free nvidia-tesla-t4 device")));
}

TEST_F(SchedulerBestFitTest, MigRequestGoesToTheHalfUsedGpu) {
  // One node with two MIG A100s: fill half of the first, then ask for one more
  // slice.
  Register(MakeNode("n1", {MigA100("GPU-1", 0), MigA100("GPU-2", 1)}));
  absl::StatusOr<Allocation> half =
      s_.Allocate(Want("half", "A100", 4, "1g.5gb"));
  ASSERT_OK(half);
  for (const AllocatedDevice& d : half->devices)
    EXPECT_EQ(d.device_id, "GPU-1");
  absl::StatusOr<Allocation> one =
      s_.Allocate(Want("one", "A100", 1, "1g.5gb"));
  ASSERT_OK(one);
  EXPECT_EQ(one->devices[0].device_id, "GPU-1");
  EXPECT_EQ(one->devices[0].profile, "1g.5gb");

  // The same across nodes: the half-used GPU's node wins over the empty one.
  Register(MakeNode("x", {MigA100("GPU-x", 0)}));
  Register(MakeNode("y", {MigA100("GPU-y", 0)}));
  EXPECT_EQ(s_.Allocate(Want("x-half", "A100", 3, "1g.5gb"))->node,
            "x");  // a tie
  // x has 4 free, y 7, n1 9 (2 + 7).
  EXPECT_EQ(s_.Allocate(Want("next", "A100", 1, "1g.5gb"))->node, "x");
  // Four slices fit on x (3 free) no more: y, with 7, strands less than n1
  // with 9.
  EXPECT_EQ(s_.Allocate(Want("four", "A100", 4, "1g.5gb"))->node, "y");
}

TEST_F(SchedulerAllocationTest, PartitionSelectsWholeGpusOrMigSlices) {
  Device mig = Gpu("GPU-m", "A100", 0);
  mig.mig_enabled = true;
  mig.mig_slices = {{"MIG-a", "3g.20gb", 0}, {"MIG-b", "3g.20gb", 4}};
  Register(MakeNode("n1", {mig, Gpu("GPU-w", "NVIDIA A100-SXM4-40GB", 1)}));

  AllocationRequest whole = Want("w", "nvidia-tesla-a100");
  whole.partition_kind = PartitionKind::kUnpartitioned;
  absl::StatusOr<Allocation> w = s_.Allocate(whole);
  ASSERT_OK(w);
  EXPECT_THAT(DeviceIds(*w), ElementsAre("GPU-w"));  // never the MIG GPU
  EXPECT_THAT(s_.Allocate(Want("w2", "A100")),
              StatusIs(absl::StatusCode::kResourceExhausted, testing::_));
  EXPECT_THAT(
      s_.Allocate(Want("w3", "A100", 2)),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr("at most 1 nvidia-tesla-a100 device on one node")));

  absl::StatusOr<Allocation> m = s_.Allocate(Want("m", "A100", 1, "3g.20gb"));
  ASSERT_OK(m);
  EXPECT_THAT(DeviceIds(*m), ElementsAre("MIG-a"));
  // The node has no nvidia.com/mig.strategy label: the single strategy, as
  // propeller asks.
  const Placement p = BuildPlacement(*m, {.nvidia_visible_devices = true});
  EXPECT_EQ(p.resource_name, "nvidia.com/gpu");
  EXPECT_EQ(p.env.at("NVIDIA_VISIBLE_DEVICES"), "MIG-a");
  EXPECT_EQ(p.node_selector.at("k8s.amazonaws.com/gpu-partition-size"),
            "3g.20gb");

  EXPECT_THAT(
      s_.Allocate(Want("bad", "nvidia-h100", 1, "1g.5gb")),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("accelerator.partition_size \"1g.5gb\" is not a MIG "
                         "profile of nvidia-h100 (valid: 1g.10gb")));
  EXPECT_THAT(s_.Allocate(Want("bad", "T4", 1, "1g.5gb")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no MIG support")));
  EXPECT_THAT(s_.Allocate(Want("bad", "A100", 1, "1g.10gb")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("no node has any 1g.10gb slice")));
}

TEST_F(SchedulerAllocationTest, TpuSliceIsTakenWholeAcrossItsHosts) {
  std::vector<Device> a, b;
  for (int i = 0; i < 4; ++i) {
    a.push_back(Chip(absl::StrCat("a", i), "s1", "2x2x2", i));
    b.push_back(Chip(absl::StrCat("b", i), "s1", "2x2x2", i));
  }
  Register(MakeNode("host-a", a));
  Register(MakeNode("host-b", b));
  absl::StatusOr<Allocation> t = s_.Allocate(Want("tpu", "V5P", 1, "2x2x2"));
  ASSERT_OK(t);
  EXPECT_EQ(t->node, "host-a");
  EXPECT_EQ(t->devices.size(), 8u);
  std::set<std::string> hosts;
  for (const AllocatedDevice& d : t->devices) hosts.insert(d.node);
  EXPECT_THAT(hosts, ElementsAre("host-a", "host-b"));
  const Placement p = BuildPlacement(*t, PlacementOptions());
  EXPECT_EQ(p.resource_name, "google.com/tpu");
  EXPECT_EQ(p.resource_count, 4);
  EXPECT_FALSE(p.node_selector.contains("kubernetes.io/hostname"));
  EXPECT_EQ(p.node_selector.at("cloud.google.com/gke-tpu-topology"), "2x2x2");
  EXPECT_EQ(p.node_selector.at("cloud.google.com/gke-tpu-accelerator"),
            "tpu-v5p-slice");
  // One pod per host, each pinned to its host and asking for its 4 chips.
  const std::vector<Placement> per_host =
      BuildNodePlacements(*t, PlacementOptions());
  ASSERT_EQ(per_host.size(), 2u);
  EXPECT_EQ(per_host[0].node_selector.at("kubernetes.io/hostname"), "host-a");
  EXPECT_EQ(per_host[1].node_selector.at("kubernetes.io/hostname"), "host-b");
  EXPECT_EQ(per_host[1].resource_count, 4);
  EXPECT_EQ(per_host[1].devices.front().device_id, "b0");

  EXPECT_THAT(s_.Allocate(Want("tpu2", "tpu-v5p-slice", 1, "2x2x2")),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("2 no free tpu-v5p-slice 2x2x2 slice")));
  ASSERT_OK(s_.Release({t->id, ""}));
  // Gang: one cordoned host makes the whole slice unavailable.
  ASSERT_OK(s_.SetNodeSchedulable("host-b", false));
  EXPECT_THAT(
      s_.Allocate(Want("tpu3", "V5P", 1, "2x2x2")),
      StatusIs(absl::StatusCode::kResourceExhausted,
               HasSubstr("0/2 nodes available: 1 cordoned, 1 no free")));
  EXPECT_THAT(s_.Allocate(Want("tpu4", "V5P", 1, "2x2x1")),
              StatusIs(absl::StatusCode::kFailedPrecondition, testing::_));
  EXPECT_THAT(s_.Allocate(Want("tpu5", "V5P", 1)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("accelerator.partition_size is required")));
  EXPECT_THAT(
      s_.Allocate(Want("tpu6", "V5P", 2, "2x2x2")),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("count 2")));
}

// Propeller writes the request's own spelling of the model (mapped or
// unchanged), so a node carries one of several values: the node's own label
// wins, the value of the request's spelling stands in for a node without it.
TEST_F(SchedulerAllocationTest, PlacementTargetsTakeTheNodesOwnLabels) {
  Register(MakeNode("labelled", {Gpu("GPU-l", "H100", 0)},
                    {{"k8s.amazonaws.com/accelerator", "nvidia-h100-80gb"},
                     {"kubernetes.io/hostname", "host-l"}}));
  AllocationRequest r = Want("l", "H100 80G");
  r.partition_kind = PartitionKind::kUnpartitioned;
  r.container_name = "trainer";
  absl::StatusOr<Allocation> l = s_.Allocate(r);
  ASSERT_OK(l);
  EXPECT_THAT(l->targets, ElementsAre(PlacementTarget{"labelled", "host-l",
                                                      "nvidia-h100-80gb", ""}));
  EXPECT_TRUE(l->unpartitioned);
  EXPECT_EQ(l->container_name, "trainer");
  // A retry names the same request: unpartitioned counts (it changes the
  // placement), the container does not.
  AllocationRequest retry = r;
  retry.container_name = "other";
  absl::StatusOr<Allocation> again = s_.Allocate(retry);
  ASSERT_OK(again);
  EXPECT_EQ(*again, *l);
  retry.partition_kind = PartitionKind::kUnset;
  EXPECT_THAT(s_.Allocate(retry),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("\"l\"")));
  EXPECT_THAT(
      BuildPlacement(*l, PlacementOptions()).node_affinity,
      ElementsAre(
          NodeSelectorRequirement{
              "k8s.amazonaws.com/accelerator", "In", {"nvidia-h100-80gb"}},
          NodeSelectorRequirement{
              "k8s.amazonaws.com/gpu-partition-size", "DoesNotExist", {}},
          NodeSelectorRequirement{"kubernetes.io/hostname", "In", {"host-l"}}));

  Register(MakeNode("plain", {Gpu("GPU-p", "H100", 0)}));
  absl::StatusOr<Allocation> p = s_.Allocate(Want("p", "H100 80G"));
  ASSERT_OK(p);
  EXPECT_THAT(p->targets, ElementsAre(PlacementTarget{"plain", "plain",
                                                      "nvidia-h100-80gb", ""}));
  EXPECT_FALSE(p->unpartitioned);

  // GPU Feature Discovery's label: the device plugin's mixed strategy.
  Register(MakeNode("mixed", {MigA100("GPU-m", 0)},
                    {{"nvidia.com/mig.strategy", "mixed"}}));
  absl::StatusOr<Allocation> m = s_.Allocate(Want("m", "A100", 2, "1g.5gb"));
  ASSERT_OK(m);
  EXPECT_EQ(m->targets.at(0).mig_strategy, "mixed");
  const Placement mp = BuildPlacement(*m, PlacementOptions());
  EXPECT_EQ(mp.resource_name, "nvidia.com/mig-1g.5gb");
  EXPECT_EQ(mp.resource_count, 2);
  EXPECT_FALSE(
      mp.node_selector.contains("k8s.amazonaws.com/gpu-partition-size"));
  EXPECT_THAT(mp.tolerations,
              ElementsAre(Toleration{"k8s.amazonaws.com/accelerator", "Equal",
                                     "nvidia-tesla-a100", "NoSchedule"}));
  // What was stored is what the placement is derived from after a restart.
  EXPECT_EQ(store_.allocations().at(m->id).allocation, *m);
}

// On a node without the device label, the value propeller writes for the
// request's own spelling of the model it got (flytek8s/utils.go:101-110):
// propeller's map entry for it, else the spelling unchanged, else (no label
// value) the registry's. Kept with the allocation: a retry spelled otherwise
// is the same request and changes nothing.
TEST_F(SchedulerAllocationTest,
       UnlabelledNodeGetsTheValueOfTheRequestsSpelling) {
  struct Case {
    const char* request_id;
    const char* device;
    std::vector<std::string> alternatives;
    const char* label;
  };
  const Case cases[] = {
      {"mapped", "H100 80G", {}, "nvidia-h100-80gb"},
      {"upper-cased", "h100 80g", {}, "nvidia-h100-80gb"},
      {"unchanged", "nvidia-h100-80gb", {}, "nvidia-h100-80gb"},
      {"flytekit", "nvidia-h100", {}, "nvidia-h100"},
      {"nvml", "NVIDIA H100 80GB HBM3", {}, "nvidia-h100"},
      // No T4 anywhere: the alternative's spelling is the one of the model.
      {"alternative", "T4", {"L4", "H100 80G"}, "nvidia-h100-80gb"},
  };
  for (size_t i = 0; i <= std::size(cases); ++i) {
    Register(MakeNode(absl::StrCat("h", i), {Gpu(absl::StrCat("GPU-", i),
                                                 "NVIDIA H100 80GB HBM3", 0)}));
  }
  std::map<std::string, Allocation> made;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.request_id);
    AllocationRequest r = Want(c.request_id, c.device);
    r.alternative_devices = c.alternatives;
    absl::StatusOr<Allocation> a = s_.Allocate(r);
    ASSERT_OK(a);
    ASSERT_EQ(a->targets.size(), 1u);
    EXPECT_EQ(a->targets[0].device_label, c.label);
    const Placement p = BuildPlacement(*a, PlacementOptions());
    EXPECT_EQ(p.node_affinity.front(),
              (NodeSelectorRequirement{
                  "k8s.amazonaws.com/accelerator", "In", {c.label}}));
    EXPECT_THAT(p.tolerations,
                ElementsAre(Toleration{"k8s.amazonaws.com/accelerator", "Equal",
                                       c.label, "NoSchedule"}));
    std::vector<std::string> spellings = {c.device};
    spellings.insert(spellings.end(), c.alternatives.begin(),
                     c.alternatives.end());
    EXPECT_EQ(a->device_spellings, spellings);
    EXPECT_EQ(store_.allocations().at(a->id).allocation, *a);
    made[c.request_id] = *a;
  }
  // A retry in another spelling gets the allocation as it was made.
  absl::StatusOr<Allocation> retry = s_.Allocate(Want("mapped", "nvidia-h100"));
  ASSERT_OK(retry);
  EXPECT_EQ(*retry, made["mapped"]);
  EXPECT_EQ(store_.allocations().at(retry->id).allocation, made["mapped"]);
  // Explain previews the same value.
  absl::StatusOr<ExplainResult> e = s_.Explain(Want("preview", "H100 80G"));
  ASSERT_OK(e);
  ASSERT_TRUE(e->feasible);
  EXPECT_EQ(e->would_allocate.targets.at(0).device_label, "nvidia-h100-80gb");
  // A request naming no model: no device label at all, as propeller's
  // `gpu: 1`.
  absl::StatusOr<Allocation> any = s_.Allocate(Want("any", ""));
  ASSERT_OK(any);
  EXPECT_THAT(any->device_spellings, IsEmpty());
  for (const NodeSelectorRequirement& r :
       BuildPlacement(*any, PlacementOptions()).node_affinity) {
    EXPECT_NE(r.key, "k8s.amazonaws.com/accelerator");
  }
}

TEST_F(SchedulerAllocationTest, IneligibleNodesGetNothing) {
  Register(MakeNode("sel", {Gpu("g1", "L4", 0)}, {{"pool", "a"}}));
  AllocationRequest want_b = Want("r1", "L4");
  want_b.node_selector = {{"pool", "b"}};
  EXPECT_THAT(s_.Allocate(want_b),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("1 node_selector mismatch")));
  want_b.node_selector = {{"pool", "a"}};
  ASSERT_OK(s_.Allocate(want_b));

  Register(MakeNode("cordoned", {Gpu("g2", "L4", 0)}));
  ASSERT_OK(s_.SetNodeSchedulable("cordoned", false));
  EXPECT_THAT(
      s_.Allocate(Want("r2", "L4")),
      StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("1 cordoned")));
  ASSERT_OK(s_.SetNodeSchedulable("cordoned", true));

  // Silent for longer than the timeout: stale until the next heartbeat.
  clock_.Advance(absl::Minutes(6));
  EXPECT_THAT(s_.Allocate(Want("r3", "L4")),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("0/2 nodes available: 2 stale heartbeat")));
  ASSERT_OK(s_.Heartbeat("cordoned", {"g2"}));
  EXPECT_THAT(
      s_.Allocate(Want("r4", "L4")),
      StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("no free")));
  ASSERT_OK(s_.Heartbeat("cordoned", {}));
  EXPECT_EQ(s_.Allocate(Want("r5", "L4"))->node, "cordoned");
}

TEST_F(SchedulerAllocationTest, ExplainCountsEachNodesFirstReason) {
  for (int i = 0; i < 3; ++i) {
    Register(MakeNode(absl::StrCat("full-", i),
                      {MigA100(absl::StrCat("G", i), 0)}, {{"pool", "train"}}));
    ASSERT_OK(s_.Allocate(Want(absl::StrCat("fill-", i), "A100", 7, "1g.5gb")));
  }
  for (int i = 0; i < 2; ++i) {
    Register(MakeNode(absl::StrCat("other-", i),
                      {MigA100(absl::StrCat("O", i), 0)}, {{"pool", "serve"}}));
  }
  AllocationRequest r = Want("e", "A100", 1, "1g.5gb");
  r.node_selector = {{"pool", "train"}};
  absl::StatusOr<ExplainResult> e = s_.Explain(r);
  ASSERT_OK(e);
  EXPECT_FALSE(e->feasible);
  EXPECT_EQ(
      e->explanation.summary,
      "0/5 nodes available: 3 no free 1g.5gb slice, 2 node_selector mismatch");
  ASSERT_EQ(e->explanation.nodes.size(), 5u);
  EXPECT_EQ(e->explanation.nodes[0].node, "full-0");
  EXPECT_THAT(e->explanation.nodes[0].reasons,
              ElementsAre("no free 1g.5gb slice"));
  EXPECT_THAT(s_.Allocate(r), StatusIs(absl::StatusCode::kResourceExhausted,
                                       e->explanation.summary));

  r.node_selector.clear();
  e = s_.Explain(r);
  ASSERT_OK(e);
  EXPECT_TRUE(e->feasible);
  EXPECT_EQ(e->would_allocate.node, "other-0");
  EXPECT_EQ(e->explanation.summary,
            "2/5 nodes available: 3 no free 1g.5gb slice");
  // Explain allocates nothing.
  EXPECT_EQ(Cap("nvidia-tesla-a100", "1g.5gb").free, 14);
}

// The default policy weighs fragmentation and leases; Explain shows the
// candidates it weighed, best first, and what each would strand.
TEST_F(SchedulerAllocationTest, ExplainShowsTheFragmentationPolicysScores) {
  EXPECT_EQ(Scheduler::Options().packing, Packing::kFragmentation);
  Register(MakeNode("a", {Gpu("a0", "T4", 0), Gpu("a1", "T4", 1),
                          Gpu("a2", "T4", 2), Gpu("a3", "T4", 3)}));
  Register(MakeNode("b", {Gpu("b0", "T4", 0), Gpu("b1", "T4", 1),
                          Gpu("b2", "T4", 2), Gpu("b3", "T4", 3)}));
  AllocationRequest long_job = Want("long", "T4", 2);
  long_job.lease = absl::Hours(72);
  ASSERT_EQ(s_.Allocate(long_job)->node, "a");  // a tie: the name
  AllocationRequest next = Want("next", "T4", 2);
  next.lease = absl::Hours(70);
  absl::StatusOr<ExplainResult> e = s_.Explain(next);
  ASSERT_OK(e);
  ASSERT_TRUE(e->feasible);
  EXPECT_EQ(e->would_allocate.node, "a");
  ASSERT_EQ(e->scores.size(), 2u);
  // On a, its 2 GPUs wait 2 h of 72 for the long job's; b would be taken
  // half for 70 h (2 GPUs).
  EXPECT_EQ(e->scores[0].node, "a");
  EXPECT_DOUBLE_EQ(e->scores[0].score.total, 2 * 2.0 / 72);
  EXPECT_EQ(DescribeScore(e->scores[0].score),
            "strands 0.00 of 0 free units (was 0.00 of 2); lease mismatch "
            "0.06");
  EXPECT_EQ(e->scores[1].node, "b");
  EXPECT_DOUBLE_EQ(e->scores[1].score.total, 2);
  EXPECT_EQ(s_.Allocate(next)->node, "a");
}

// A Flyte task's lease is a renewal period: with every lease 10 minutes, the
// lease term weighs the tasks' expected_duration instead. "short" (no
// expected duration: its lease) holds half of a, "long" (72 h expected)
// half of b; "next", expected to run 70 h, goes with long on b. Weighing the
// leases, a and b would come free together and the name would choose a.
TEST_F(SchedulerAllocationTest, TheLeaseTermWeighsTheExpectedDuration) {
  for (const char* n : {"a", "b"}) {
    const std::string name = n;
    Register(
        MakeNode(name, {Gpu(name + "0", "T4", 0), Gpu(name + "1", "T4", 1),
                        Gpu(name + "2", "T4", 2), Gpu(name + "3", "T4", 3)}));
  }
  AllocationRequest short_job = Want("short", "T4", 2);
  short_job.lease = absl::Minutes(10);
  ASSERT_EQ(s_.Allocate(short_job)->node, "a");
  ASSERT_OK(s_.SetNodeSchedulable("a", false));
  AllocationRequest long_job = Want("long", "T4", 2);
  long_job.lease = absl::Minutes(10);
  long_job.expected_duration = absl::Hours(72);
  ASSERT_EQ(s_.Allocate(long_job)->node, "b");
  ASSERT_OK(s_.SetNodeSchedulable("a", true));

  AllocationRequest next = Want("next", "T4", 2);
  next.lease = absl::Minutes(10);
  next.expected_duration = absl::Hours(70);
  absl::StatusOr<ExplainResult> e = s_.Explain(next);
  ASSERT_OK(e);
  ASSERT_TRUE(e->feasible);
  EXPECT_EQ(e->would_allocate.node, "b");
  EXPECT_EQ(e->expected,
            (DurationEstimate{absl::Hours(70), DurationSource::kGiven, 0}));
  ASSERT_EQ(e->scores.size(), 2u);
  EXPECT_EQ(e->scores[0].node, "b");
  // On b its 2 GPUs wait 2 h of 72 for long's; on a the node's other 2 stay
  // taken 70 h - 10 min longer than short's.
  EXPECT_DOUBLE_EQ(e->scores[0].score.lease, 2 * 2.0 / 72);
  EXPECT_NEAR(e->scores[1].score.lease, 2 * (70 * 60 - 10) / (70 * 60.0), 1e-9);
  EXPECT_EQ(s_.Allocate(next)->node, "b");

  // Without one, a request is weighed by its lease, and Explain says so.
  AllocationRequest plain = Want("plain", "T4", 1);
  plain.lease = absl::Minutes(10);
  e = s_.Explain(plain);
  ASSERT_OK(e);
  EXPECT_EQ(e->expected,
            (DurationEstimate{absl::Minutes(10), DurationSource::kLease, 0}));
}

TEST_F(SchedulerAllocationTest, ExpectedDurationIsCheckedAndNamed) {
  Register(MakeNode("a", {Gpu("a0", "T4", 0)}));
  AllocationRequest r = Want("job", "T4");
  r.expected_duration = -absl::Seconds(1);
  EXPECT_THAT(s_.Allocate(r), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("expected_duration")));
  r.expected_duration = kMaxExpectedDuration + absl::Seconds(1);
  EXPECT_THAT(s_.Allocate(r), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("expected_duration")));
  EXPECT_EQ(Cap("nvidia-tesla-t4", "").free, 1);
  // A hint, not part of what a retry must repeat.
  r.expected_duration = absl::Hours(2);
  ASSERT_OK_AND_ASSIGN(Allocation first, s_.Allocate(r));
  EXPECT_EQ(first.expected_duration, absl::Hours(2));
  r.expected_duration = absl::Hours(3);
  ASSERT_OK_AND_ASSIGN(Allocation retry, s_.Allocate(r));
  EXPECT_EQ(retry.id, first.id);
}

// Allocate counts the request in the mix before it matches; Explain's
// preview does the same, so both name one node.
TEST_F(SchedulerAllocationTest, ExplainPreviewsTheNodeAllocateTakes) {
  Register(MakeNode(
      "a", {Gpu("a0", "T4", 0), Gpu("a1", "T4", 1), Gpu("a2", "T4", 2)}));
  Register(MakeNode("b", {Gpu("b0", "T4", 0), Gpu("b1", "T4", 1),
                          Gpu("b2", "T4", 2), Gpu("b3", "T4", 3)}));
  absl::StatusOr<ExplainResult> e = s_.Explain(Want("two", "T4", 2));
  ASSERT_OK(e);
  ASSERT_TRUE(e->feasible);
  // Under a mix of 2s, a would be left with one GPU none of them can use.
  EXPECT_EQ(e->would_allocate.node, "b");
  EXPECT_EQ(s_.Allocate(Want("two", "T4", 2))->node, "b");
}

TEST_F(SchedulerBestFitTest, ExplainShowsNoScoresForOtherPolicies) {
  Register(MakeNode("a", {Gpu("a0", "T4", 0)}));
  absl::StatusOr<ExplainResult> e = s_.Explain(Want("x", "T4"));
  ASSERT_OK(e);
  EXPECT_TRUE(e->feasible);
  EXPECT_TRUE(e->scores.empty());
}

TEST_F(SchedulerAllocationTest, LeasesExpireRenewAndRelease) {
  Register(MakeNode("n1", {Gpu("g1", "H100", 0)}));
  AllocationRequest r = Want("job", "H100");
  r.lease = absl::Minutes(10);
  absl::StatusOr<Allocation> a = s_.Allocate(r);
  ASSERT_OK(a);
  EXPECT_EQ(a->expires_at, clock_.Now() + absl::Minutes(10));

  clock_.Advance(absl::Minutes(9));
  absl::StatusOr<Allocation> renewed = s_.RenewLease(a->id, absl::Minutes(10));
  ASSERT_OK(renewed);
  EXPECT_EQ(renewed->expires_at, clock_.Now() + absl::Minutes(10));
  clock_.Advance(absl::Minutes(9));
  EXPECT_EQ(*s_.Sweep(), 0);

  std::shared_ptr<EventHub::Watcher> watcher = s_.events().Subscribe();
  clock_.Advance(absl::Minutes(2));
  EXPECT_EQ(*s_.Sweep(), 1);
  absl::StatusOr<Allocation> expired = s_.GetAllocation({a->id, ""});
  ASSERT_OK(expired);
  EXPECT_EQ(expired->state, AllocationState::kExpired);
  EXPECT_EQ(expired->end_reason, "expired");
  EXPECT_EQ(store_.allocations().at(a->id).allocation.state,
            AllocationState::kExpired);
  EXPECT_EQ(Cap("nvidia-h100", "").free, 1);
  absl::StatusOr<std::optional<Event>> event = watcher->Next(absl::Seconds(5));
  ASSERT_OK(event);
  ASSERT_TRUE(event->has_value());
  EXPECT_EQ((*event)->type, Event::Type::kExpired);
  EXPECT_EQ((*event)->allocation.id, a->id);

  EXPECT_THAT(
      s_.RenewLease(a->id, absl::ZeroDuration()),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("is EXPIRED")));
  // Releasing an ended allocation returns it as it is.
  EXPECT_EQ(s_.Release({a->id, ""})->state, AllocationState::kExpired);

  ASSERT_OK(s_.Heartbeat("n1", {}));  // 20 minutes went by
  absl::StatusOr<Allocation> b = s_.Allocate(Want("job2", "H100"));
  ASSERT_OK(b);
  EXPECT_EQ(s_.Release({"", "job2"})->state, AllocationState::kReleased);
  EXPECT_EQ(s_.Release({b->id, ""})->state, AllocationState::kReleased);
  EXPECT_THAT(
      s_.RenewLease(b->id, absl::Minutes(1)),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("RELEASED")));
  EXPECT_THAT(s_.Release({"a-nope", ""}),
              StatusIs(absl::StatusCode::kNotFound, testing::_));

  // Ended allocations are forgotten after the retention period.
  clock_.Advance(absl::Hours(2));
  ASSERT_OK(s_.Sweep());
  EXPECT_THAT(s_.GetAllocation({b->id, ""}),
              StatusIs(absl::StatusCode::kNotFound, testing::_));
  EXPECT_TRUE(store_.allocations().empty());
}

// A lease found expired by Allocate, Release or RenewLease is queued before
// the call's own write, and with no commit running its waiter leads: the call
// must wait in queue order. Waiting on its own write first blocked for ever
// (seen as a rare hang of SchedulerConcurrencyTest; here it is certain).
TEST_F(SchedulerAllocationTest, AnExpiryFoundOnTheWayIsCommittedWithTheCall) {
  Register(MakeNode("n1", {Gpu("g1", "H100", 0), Gpu("g2", "H100", 1),
                           Gpu("g3", "H100", 2)}));
  AllocationRequest shortlived = Want("short-1", "H100");
  shortlived.lease = absl::Seconds(1);
  ASSERT_OK(s_.Allocate(shortlived));
  absl::StatusOr<Allocation> keep = s_.Allocate(Want("keep", "H100"));
  ASSERT_OK(keep);
  clock_.Advance(absl::Seconds(2));
  ASSERT_OK(s_.Allocate(Want("after-expiry", "H100", 2)));  // g1 is free again

  shortlived.request_id = "short-2";
  ASSERT_OK(s_.Release({"", "after-expiry"}));
  ASSERT_OK(s_.Allocate(shortlived));
  clock_.Advance(absl::Seconds(2));
  ASSERT_OK(s_.RenewLease(keep->id, absl::Minutes(5)));

  shortlived.request_id = "short-3";
  ASSERT_OK(s_.Allocate(shortlived));
  clock_.Advance(absl::Seconds(2));
  ASSERT_OK(s_.Release({keep->id, ""}));
  EXPECT_EQ(Cap("nvidia-h100", "").free, 3);
  EXPECT_EQ(s_.GetAllocation({"", "short-3"})->state,
            AllocationState::kExpired);
}

TEST_F(SchedulerAllocationTest, RemoveNodeNeedsForceWhileAllocated) {
  Register(MakeNode("n1", {Gpu("g1", "T4", 0)}));
  absl::StatusOr<Allocation> a = s_.Allocate(Want("job", "T4"));
  ASSERT_OK(a);
  EXPECT_THAT(s_.RemoveNode("n1", false),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("holds 1 live allocation (" + a->id + ")")));
  ASSERT_OK(s_.RemoveNode("n1", true));
  absl::StatusOr<Allocation> after = s_.GetAllocation({a->id, ""});
  ASSERT_OK(after);
  EXPECT_EQ(after->state, AllocationState::kReleased);
  EXPECT_EQ(after->end_reason, "node_removed");
  EXPECT_TRUE(s_.GetCapacity().empty());
}

TEST_F(SchedulerAllocationTest, DroppedDeviceIsKeptUnhealthyUntilReleased) {
  Register(MakeNode("n1", {Gpu("g1", "T4", 0), Gpu("g2", "T4", 1)}));
  absl::StatusOr<Allocation> a = s_.Allocate(Want("job", "T4", 2));
  ASSERT_OK(a);
  // g2 disappears from the inventory while allocated.
  Register(MakeNode("n1", {Gpu("g1", "T4", 0)}));
  Node n = *s_.GetNode("n1");
  ASSERT_EQ(n.devices.size(), 2u);
  EXPECT_EQ(n.devices[1].id, "g2");
  EXPECT_FALSE(n.devices[1].healthy);
  EXPECT_EQ(Cap("nvidia-tesla-t4", "").allocated, 2);
  // Changing an allocated device in place is refused.
  EXPECT_THAT(s_.RegisterNode(MakeNode("n1", {Gpu("g1", "L4", 0)})),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("device \"g1\" is in live allocation")));
  ASSERT_OK(s_.Release({a->id, ""}));
  n = *s_.GetNode("n1");
  ASSERT_EQ(n.devices.size(), 1u);
  EXPECT_EQ(Cap("nvidia-tesla-t4", ""),
            (CapacityEntry{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", "", 1, 0,
                           1, 0}));
  EXPECT_EQ(store_.nodes().at("n1").devices.size(), 1u);
}

TEST_F(SchedulerAllocationTest,
       UnhealthyDeviceStaysAllocatedButGetsNothingNew) {
  Register(MakeNode("n1", {Gpu("g1", "T4", 0), Gpu("g2", "T4", 1)}));
  absl::StatusOr<Allocation> a = s_.Allocate(Want("job", "T4"));
  ASSERT_OK(a);
  ASSERT_OK(s_.Heartbeat("n1", {"g1", "g2"}));
  EXPECT_EQ(s_.GetAllocation({a->id, ""})->state, AllocationState::kActive);
  EXPECT_EQ(Cap("nvidia-tesla-t4", ""),
            (CapacityEntry{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", "", 2, 1,
                           0, 1}));
  EXPECT_THAT(s_.Allocate(Want("job2", "T4")),
              StatusIs(absl::StatusCode::kResourceExhausted, testing::_));
  ASSERT_OK(s_.Release({a->id, ""}));
  EXPECT_EQ(Cap("nvidia-tesla-t4", "").unhealthy, 2);
}

TEST_F(SchedulerAllocationTest, RestartKeepsActiveAllocations) {
  Register(MakeNode("n1", {MigA100("G", 0), Gpu("w", "A100", 1)}));
  absl::StatusOr<Allocation> a = s_.Allocate(Want("mig", "A100", 3, "1g.5gb"));
  absl::StatusOr<Allocation> b = s_.Allocate(Want("whole", "A100"));
  ASSERT_OK(a);
  ASSERT_OK(b);
  ASSERT_OK(s_.Release({b->id, ""}));
  BlockingScheduler restarted(&store_, &clock_, BuiltinAcceleratorTypes(),
                              Opts());
  ASSERT_OK(restarted.Load());
  EXPECT_EQ(*restarted.GetAllocation({a->id, ""}), *a);
  EXPECT_EQ(restarted.GetAllocation({b->id, ""})->state,
            AllocationState::kReleased);
  EXPECT_EQ(restarted.GetCapacity(), s_.GetCapacity());
  EXPECT_EQ(*restarted.Allocate(Want("mig", "A100", 3, "1g.5gb")), *a);
}

TEST_F(SchedulerAllocationTest, FailedCommitChangesNothing) {
  Register(MakeNode("n1", {Gpu("g1", "T4", 0)}));
  const std::vector<CapacityEntry> before = s_.GetCapacity();
  store_.FailWrites(absl::ResourceExhaustedError("database or disk is full"));
  EXPECT_THAT(s_.Allocate(Want("job", "T4")),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("disk is full")));
  EXPECT_EQ(s_.GetCapacity(), before);
  EXPECT_THAT(s_.GetAllocation({"", "job"}),
              StatusIs(absl::StatusCode::kNotFound, testing::_));
  store_.FailWrites(absl::OkStatus());
  EXPECT_OK(s_.Allocate(Want("job", "T4")));
}

// A commit fails and so does the reload after it (the database went away):
// memory may no longer be what the store holds, so nothing is served from it
// until a sweep has reloaded.
TEST_F(SchedulerAllocationTest,
       AStoreLostForReloadsIsNotServedFromUntilASweep) {
  Register(MakeNode("n1", {Gpu("g1", "T4", 0), Gpu("g2", "T4", 1)}));
  ASSERT_OK(s_.Allocate(Want("kept", "T4")));
  EXPECT_OK(s_.Ready());
  const absl::Status gone = absl::UnavailableError("connection refused");
  store_.FailWrites(gone);
  store_.FailLoads(gone);
  EXPECT_THAT(s_.Allocate(Want("lost", "T4")),
              StatusIs(absl::StatusCode::kUnavailable, testing::_));
  EXPECT_THAT(s_.Ready(), StatusIs(absl::StatusCode::kUnavailable,
                                   HasSubstr("connection refused")));
  EXPECT_THAT(s_.Sweep(), StatusIs(absl::StatusCode::kUnavailable, testing::_));
  EXPECT_THAT(s_.Ready(), StatusIs(absl::StatusCode::kUnavailable, testing::_));
  // Back: the next sweep reloads, and memory is what the store holds.
  store_.FailWrites(absl::OkStatus());
  store_.FailLoads(absl::OkStatus());
  EXPECT_THAT(s_.Ready(), StatusIs(absl::StatusCode::kUnavailable, testing::_));
  EXPECT_OK(s_.Sweep());
  EXPECT_OK(s_.Ready());
  EXPECT_OK(s_.GetAllocation({"", "kept"}));
  EXPECT_THAT(s_.GetAllocation({"", "lost"}),
              StatusIs(absl::StatusCode::kNotFound, testing::_));
  EXPECT_OK(s_.Allocate(Want("lost", "T4")));
}

// A commit whose answer was lost committed after all: the reload brings back
// what it wrote, its events' numbers included, so the next events are not
// numbered again.
TEST_F(SchedulerAllocationTest,
       ACommitWhoseAnswerWasLostIsReloadedWithItsNumbering) {
  Register(MakeNode("n1", {Gpu("g1", "T4", 0), Gpu("g2", "T4", 1)}));
  const uint64_t before = *store_.LoadEventSequence();
  store_.LoseNextReply(absl::UnavailableError("connection lost at COMMIT"));
  EXPECT_THAT(s_.Allocate(Want("maybe", "T4")),
              StatusIs(absl::StatusCode::kUnavailable, testing::_));
  const uint64_t committed = *store_.LoadEventSequence();
  ASSERT_GT(committed, before);
  EXPECT_OK(s_.Ready());
  EXPECT_OK(s_.GetAllocation({"", "maybe"}));  // the retry would find it
  ASSERT_OK(s_.Allocate(Want("next", "T4")));
  EXPECT_GT(*store_.LoadEventSequence(), committed);
}

TEST_F(SchedulerAllocationTest, ListAllocationsFiltersAndPages) {
  Register(MakeNode(
      "n1", {Gpu("g1", "T4", 0), Gpu("g2", "T4", 1), Gpu("g3", "T4", 2)}));
  Register(MakeNode("n2", {Gpu("h1", "T4", 0)}));
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    AllocationRequest r = Want(absl::StrCat("r", i), "T4");
    r.tenant = i % 2 == 0 ? "even" : "odd";
    ids.push_back(s_.Allocate(r)->id);
  }
  ASSERT_OK(s_.Release({ids[0], ""}));
  absl::StatusOr<AllocationPage> page = s_.ListAllocations({}, 3, "");
  ASSERT_OK(page);
  ASSERT_EQ(page->allocations.size(), 3u);
  EXPECT_EQ(page->allocations[0].id, ids[0]);  // creation order
  absl::StatusOr<AllocationPage> rest =
      s_.ListAllocations({}, 3, page->next_page_token);
  ASSERT_OK(rest);
  ASSERT_EQ(rest->allocations.size(), 1u);
  EXPECT_EQ(rest->allocations[0].id, ids[3]);
  EXPECT_TRUE(rest->next_page_token.empty());
  EXPECT_EQ(s_.ListAllocations({AllocationState::kActive, "", "even"}, 0, "")
                ->allocations.size(),
            1u);
  EXPECT_EQ(s_.ListAllocations({AllocationState::kUnspecified, "n2", ""}, 0, "")
                ->allocations.size(),
            1u);
  EXPECT_THAT(
      s_.ListAllocations({}, 0, "%%"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("page_token")));
}

TEST_F(SchedulerAllocationTest, InvalidRequestsNameTheField) {
  Register(MakeNode("n1", {Gpu("g1", "T4", 0)}));
  const std::pair<AllocationRequest, const char*> kCases[] = {
      {Want("", "T4"), "request_id is required"},
      {Want("r", "", 1, "1g.5gb"),
       "accelerator.partition_size \"1g.5gb\" needs accelerator.device"},
      {[] {
         AllocationRequest r = Want("r", "");
         r.device_class = DeviceClass::kGoogleTpu;
         return r;
       }(),
       "accelerator.device is required for GOOGLE_TPU"},
      {[] {
         AllocationRequest r = Want("r", "T4");
         r.alternative_devices = {"L4", "nvidia-z9000"};
         return r;
       }(),
       "alternative_devices[1] \"nvidia-z9000\" is not a known accelerator"},
      {[] {
         AllocationRequest r = Want("r", "");
         r.device_class = static_cast<DeviceClass>(7);
         return r;
       }(),
       "accelerator.device_class 7 is not a DeviceClass"},
      {[] {
         AllocationRequest r = Want("r", "T4");
         r.alternative_devices = {""};
         return r;
       }(),
       "alternative_devices[0] is empty"},
      {[] {
         AllocationRequest r = Want("r", "");
         r.alternative_devices = {"T4", "V5E"};
         return r;
       }(),
       "alternative_devices[1] tpu-v5-lite-podslice is GOOGLE_TPU, but "
       "nvidia-tesla-t4 (alternative_devices[0]) is NVIDIA_GPU"},
      {[] {
         AllocationRequest r = Want("r", "");
         r.device_class = DeviceClass::kAmdGpu;
         r.alternative_devices = {"T4"};
         return r;
       }(),
       "accelerator.device_class AMD_GPU does not match nvidia-tesla-t4"},
      {[] {
         AllocationRequest r = Want("r", "A100", 1, "1g.5gb");
         r.alternative_devices = {"H100"};
         return r;
       }(),
       "accelerator.partition_size \"1g.5gb\" is not a MIG profile of "
       "nvidia-h100 (alternative_devices[0])"},
      {[] {
         AllocationRequest r = Want("r", "T4");
         r.alternative_devices.assign(kMaxAlternatives + 1, "L4");
         return r;
       }(),
       "alternative_devices has 33 entries; at most 32"},
      {Want("r", "nvidia-z9000"), "accelerator.device \"nvidia-z9000\""},
      {Want("r", "T4", -1), "count -1"},
      {[] {
         AllocationRequest r = Want("r", "T4");
         r.device_class = DeviceClass::kGoogleTpu;
         return r;
       }(),
       "accelerator.device_class GOOGLE_TPU does not match"},
      {[] {
         AllocationRequest r = Want("r", "V5E");
         r.partition_kind = PartitionKind::kUnpartitioned;
         return r;
       }(),
       "accelerator.unpartitioned does not apply"},
      {Want("r", "V5E", 1, "2x2x1"),
       "\"2x2x1\" is not a topology of tpu-v5-lite-podslice"},
      {[] {
         AllocationRequest r = Want("r", "T4");
         r.node_selector = {{"bad key", "v"}};
         return r;
       }(),
       "node_selector"},
      {[] {
         AllocationRequest r = Want("r", "T4");
         r.lease = absl::Seconds(-1);
         return r;
       }(),
       "lease -1s"},
      {[] {
         AllocationRequest r = Want("r", "T4");
         r.tenant = std::string(200, 't');
         return r;
       }(),
       "tenant is 200 characters"},
  };
  for (const auto& [request, message] : kCases) {
    EXPECT_THAT(
        s_.Allocate(request),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)))
        << message;
  }
  EXPECT_EQ(Cap("nvidia-tesla-t4", "").allocated, 0);
}

// Many threads allocating and releasing at once: every call is answered, no
// unit is in two live allocations, the counts add up, and commits were batched.
TEST_F(SchedulerAllocationTest, ConcurrentCallersNeverShareAUnit) {
  // A commit that takes as long as an fsync, so that concurrent writes queue
  // behind it.
  store_.set_commit_delay(absl::Microseconds(500));
  std::vector<Device> devices;
  for (int i = 0; i < 8; ++i)
    devices.push_back(Gpu(absl::StrCat("g", i), "T4", i));
  Register(MakeNode("n1", devices));
  Register(MakeNode("n2", {MigA100("M", 0)}));
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        AllocationRequest r =
            t % 2 == 0
                ? Want(absl::StrCat(t, "-", i), "T4", 1 + i % 3)
                : Want(absl::StrCat(t, "-", i), "A100", 1 + i % 2, "1g.5gb");
        absl::StatusOr<Allocation> a = s_.Allocate(r);
        if (a.ok()) {
          ++ok;
          if (i % 4 != 0) {
            EXPECT_OK(s_.Release({a->id, ""}));
          }
        } else {
          EXPECT_EQ(a.status().code(), absl::StatusCode::kResourceExhausted)
              << a.status();
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_GT(ok.load(), 0);
  std::map<std::string, std::string> holder;
  int64_t live_units = 0;
  absl::StatusOr<AllocationPage> all =
      s_.ListAllocations({AllocationState::kActive, "", ""}, kMaxPageSize, "");
  ASSERT_OK(all);
  for (const Allocation& a : all->allocations) {
    for (const AllocatedDevice& d : a.devices) {
      const std::string unit =
          d.mig_slice_id.empty() ? d.device_id : d.mig_slice_id;
      EXPECT_TRUE(holder.emplace(unit, a.id).second)
          << unit << " is in two allocations";
      ++live_units;
    }
  }
  int64_t allocated = 0;
  for (const CapacityEntry& e : s_.GetCapacity()) {
    EXPECT_EQ(e.free + e.allocated + e.unhealthy, e.total);
    allocated += e.allocated;
  }
  EXPECT_EQ(allocated, live_units);
  const GroupCommitter::Stats stats = s_.committer().stats();
  EXPECT_LT(stats.commits,
            stats.writes);  // some commits carried several writes
  EXPECT_EQ(stats.failures, 0u);
}

}  // namespace
}  // namespace accelsched
