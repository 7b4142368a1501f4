// Requests that name no model, or several: which model and node they get,
// what a retry is, what Explain says. Through the scheduler on the fake store;
// the SQLite round trip is in scheduler_restart_test and the e2e tests.
#include <string>
#include <vector>

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

class SchedulerModelChoiceTest : public testing::Test {
 protected:
  void Register(Node n) { ASSERT_OK(s_.RegisterNode(std::move(n))); }

  // Allocates and returns the chosen node and model as "node/model".
  std::string Choice(const AllocationRequest& r) {
    absl::StatusOr<Allocation> a = s_.Allocate(r);
    if (!a.ok()) return std::string(a.status().ToString());
    return a->node + "/" + a->model;
  }

  FakeStore store_;
  FakeClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  BlockingScheduler s_{&store_, &clock_, BuiltinAcceleratorTypes(),
                       Scheduler::Options()};
};

AllocationRequest AnyOf(std::string request_id, std::vector<std::string> models,
                        int count = 1) {
  AllocationRequest r = Want(std::move(request_id), "", count);
  r.alternative_devices = std::move(models);
  return r;
}

TEST_F(SchedulerModelChoiceTest, NoModelTakesAnyWholeGpuButNoMigOne) {
  Register(MakeNode("a-mig", {MigA100("M", 0)}));
  Register(MakeNode("b-t4", {Gpu("T", "T4", 0)},
                    {{"kubernetes.io/hostname", "host-b"}}));
  absl::StatusOr<Allocation> a = s_.Allocate(Want("plain", ""));
  ASSERT_OK(a);
  EXPECT_EQ(a->node, "b-t4");
  EXPECT_EQ(a->model, "nvidia-tesla-t4");
  EXPECT_THAT(a->requested_models, IsEmpty());
  EXPECT_EQ(store_.allocations().at(a->id).allocation, *a);
  // What propeller puts on a plain `gpu: 1` pod, plus the pin.
  const Placement p = BuildPlacement(*a, PlacementOptions());
  EXPECT_THAT(p.node_selector,
              ElementsAre(Pair("kubernetes.io/hostname", "host-b")));
  EXPECT_EQ(p.resource_name, "nvidia.com/gpu");
  EXPECT_EQ(p.resource_count, 1);

  // The MIG-enabled A100 is not a whole device.
  EXPECT_THAT(s_.Allocate(Want("plain-2", "")),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("0/2 nodes available: 1 no free "
                                 "nvidia-tesla-t4 device, 1 no whole "
                                 "NVIDIA_GPU device")));
  EXPECT_THAT(s_.Allocate(Want("plain-3", "", 2)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("at most 1 whole NVIDIA_GPU device on one "
                                 "node")));
}

TEST_F(SchedulerModelChoiceTest, DeviceClassAloneStaysInItsClass) {
  Register(MakeNode("a", {Gpu("T", "T4", 0)}));
  AllocationRequest amd = Want("amd", "");
  amd.device_class = DeviceClass::kAmdGpu;
  EXPECT_THAT(s_.Allocate(amd),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("no node has any whole AMD_GPU device")));
  Register(MakeNode("b", {Gpu("X", "MI300X", 0)}));
  absl::StatusOr<Allocation> a = s_.Allocate(amd);
  ASSERT_OK(a);
  EXPECT_EQ(a->model, "amd-mi300x");
  EXPECT_EQ(BuildPlacement(*a, PlacementOptions()).resource_name,
            "amd.com/gpu");
}

TEST_F(SchedulerModelChoiceTest, BestFitAcrossModelsThenTheMostFreeModel) {
  // Two A100 40GB on one node, four A100 80GB on another: two GPUs fit
  // exactly on the first.
  Register(MakeNode("a40", {Gpu("a40-0", "A100", 0), Gpu("a40-1", "A100", 1)}));
  Register(MakeNode(
      "a80", {Gpu("a80-0", "A100 80G", 0), Gpu("a80-1", "A100 80G", 1),
              Gpu("a80-2", "A100 80G", 2), Gpu("a80-3", "A100 80G", 3)}));
  EXPECT_EQ(Choice(AnyOf("r1", {"nvidia-a100-80gb", "A100"}, 2)),
            "a40/nvidia-tesla-a100");
  // One L4 and two single-T4 nodes: every pair leaves 0 free, so the model
  // with the most free units (T4: 2 against 1) is taken, on the first node.
  Register(MakeNode("l4", {Gpu("l4-0", "L4", 0)}));
  Register(MakeNode("t4-a", {Gpu("t4-a0", "T4", 0)}));
  Register(MakeNode("t4-b", {Gpu("t4-b0", "T4", 0)}));
  EXPECT_EQ(Choice(AnyOf("r2", {"L4", "T4"})), "t4-a/nvidia-tesla-t4");
  // Now one each: the tie goes to the model's name.
  EXPECT_EQ(Choice(AnyOf("r3", {"T4", "L4"})), "l4/nvidia-l4");
  EXPECT_EQ(Choice(AnyOf("r4", {"T4", "L4"})), "t4-b/nvidia-tesla-t4");
  // A model the cluster does not have is no obstacle while another fits.
  EXPECT_EQ(Choice(AnyOf("r5", {"H100", "nvidia-a100-80gb"})),
            "a80/nvidia-a100-80gb");
}

TEST_F(SchedulerModelChoiceTest, AlternativesKeepTheMigProfile) {
  Register(MakeNode("a100", {MigA100("M", 0)}));
  AllocationRequest r = Want("mig", "nvidia-a100-80gb", 1, "1g.10gb");
  r.alternative_devices = {"A100"};
  // 1g.10gb exists on both models; this node's A100 is cut into 1g.5gb only.
  EXPECT_THAT(s_.Allocate(r), StatusIs(absl::StatusCode::kFailedPrecondition,
                                       HasSubstr("no node has any "
                                                 "nvidia-a100-80gb or "
                                                 "nvidia-tesla-a100 1g.10gb "
                                                 "slice")));
  r.partition_size = "1g.5gb";
  EXPECT_THAT(s_.Allocate(r),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not a MIG profile of nvidia-a100-80gb")));
  r.device = "A100";
  r.alternative_devices = {"nvidia-tesla-a100"};
  absl::StatusOr<Allocation> a = s_.Allocate(r);
  ASSERT_OK(a);
  EXPECT_EQ(a->devices[0].profile, "1g.5gb");
  const Placement p = BuildPlacement(*a, PlacementOptions());
  EXPECT_EQ(p.node_selector.at("k8s.amazonaws.com/gpu-partition-size"),
            "1g.5gb");
}

TEST_F(SchedulerModelChoiceTest, RetryIsTheSameResolvedRequest) {
  Register(MakeNode("n", {Gpu("t", "T4", 0), Gpu("l", "L4", 1)}));
  AllocationRequest first = Want("job", "T4");
  first.alternative_devices = {"L4"};
  absl::StatusOr<Allocation> a = s_.Allocate(first);
  ASSERT_OK(a);
  EXPECT_THAT(a->requested_models, ElementsAre("nvidia-l4", "nvidia-tesla-t4"));
  // The same two models, spelled otherwise, in another order, one twice.
  AllocationRequest again = Want("job", "nvidia-l4");
  again.alternative_devices = {"Tesla T4", "NVIDIA L4"};
  absl::StatusOr<Allocation> b = s_.Allocate(again);
  ASSERT_OK(b);
  EXPECT_EQ(*b, *a);
  EXPECT_EQ(*s_.Allocate(AnyOf("job", {"L4", "T4"})), *a);
  // A subset, a superset or no model at all is another request.
  for (const AllocationRequest& other :
       {Want("job", "T4"), AnyOf("job", {"L4", "T4", "H100"}),
        Want("job", "")}) {
    EXPECT_THAT(s_.Allocate(other),
                StatusIs(absl::StatusCode::kAlreadyExists,
                         HasSubstr("for 1 x nvidia-l4 or nvidia-tesla-t4 "
                                   "device")));
  }

  absl::StatusOr<Allocation> any = s_.Allocate(Want("plain", ""));
  ASSERT_OK(any);
  EXPECT_EQ(*s_.Allocate(Want("plain", "")), *any);
  AllocationRequest amd = Want("plain", "");
  amd.device_class = DeviceClass::kAmdGpu;
  EXPECT_THAT(s_.Allocate(amd), StatusIs(absl::StatusCode::kAlreadyExists,
                                         HasSubstr("whole NVIDIA_GPU device")));
}

TEST_F(SchedulerModelChoiceTest, ExplainGivesEachModelsReason) {
  Register(MakeNode("x", {Gpu("x0", "T4", 0), Gpu("x1", "T4", 1)}));
  Register(MakeNode("y", {Gpu("y0", "L4", 0)}));
  Register(MakeNode("z", {MigA100("M", 0)}));
  ASSERT_OK(s_.Allocate(Want("busy", "T4", 2)));
  absl::StatusOr<ExplainResult> e = s_.Explain(AnyOf("r", {"T4", "L4"}, 2));
  ASSERT_OK(e);
  EXPECT_FALSE(e->feasible);
  ASSERT_EQ(e->explanation.nodes.size(), 3u);
  EXPECT_THAT(
      e->explanation.nodes[0].reasons,
      ElementsAre("no free nvidia-tesla-t4 device", "no nvidia-l4 device"));
  EXPECT_THAT(e->explanation.nodes[1].reasons,
              ElementsAre("too few free nvidia-l4 devices (1 free, 2 "
                          "requested)",
                          "no nvidia-tesla-t4 device"));
  EXPECT_THAT(e->explanation.nodes[2].reasons,
              ElementsAre("no nvidia-l4 or nvidia-tesla-t4 device"));
  EXPECT_EQ(e->explanation.summary,
            "0/3 nodes available: 1 no free nvidia-tesla-t4 device, 1 no "
            "nvidia-l4 or nvidia-tesla-t4 device, 1 too few free nvidia-l4 "
            "devices");
  // A model no node has is named too, in model order.
  e = s_.Explain(AnyOf("r", {"T4", "H100", "L4"}, 2));
  ASSERT_OK(e);
  EXPECT_THAT(
      e->explanation.nodes[1].reasons,
      ElementsAre("too few free nvidia-l4 devices (1 free, 2 "
                  "requested)",
                  "no nvidia-h100 device", "no nvidia-tesla-t4 device"));

  // Any model: only the models a node has are worth a word.
  e = s_.Explain(Want("r", ""));
  ASSERT_OK(e);
  EXPECT_TRUE(e->feasible);
  EXPECT_EQ(e->would_allocate.model, "nvidia-l4");
  ASSERT_EQ(e->explanation.nodes.size(), 2u);
  EXPECT_THAT(e->explanation.nodes[0].reasons,
              ElementsAre("no free nvidia-tesla-t4 device"));
  EXPECT_THAT(e->explanation.nodes[1].reasons,
              ElementsAre("no whole NVIDIA_GPU device"));
}

// Explain's pick is Allocate's pick: one rule, one function.
TEST_F(SchedulerModelChoiceTest, ExplainPicksWhatAllocateTakes) {
  for (int n = 0; n < 6; ++n) {
    std::vector<Device> devices;
    const char* model = n % 3 == 0 ? "T4" : n % 3 == 1 ? "L4" : "A10G";
    for (int i = 0; i <= n % 4; ++i) {
      devices.push_back(Gpu(absl::StrCat("g", n, "-", i), model, i));
    }
    Register(MakeNode(absl::StrCat("n", n), devices));
  }
  const AllocationRequest kRequests[] = {
      Want("a", ""),           AnyOf("b", {"T4", "A10G"}),
      Want("c", "", 2),        AnyOf("d", {"L4"}, 2),
      Want("e", ""),           Want("f", "", 3),
      AnyOf("g", {"T4", "L4"})};
  for (const AllocationRequest& r : kRequests) {
    absl::StatusOr<ExplainResult> e = s_.Explain(r);
    ASSERT_OK(e);
    absl::StatusOr<Allocation> a = s_.Allocate(r);
    ASSERT_EQ(e->feasible, a.ok()) << r.request_id;
    if (!a.ok()) continue;
    EXPECT_EQ(e->would_allocate.devices, a->devices) << r.request_id;
    EXPECT_EQ(e->would_allocate.model, a->model) << r.request_id;
  }
}

}  // namespace
}  // namespace accelsched
