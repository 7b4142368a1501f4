// Issue 30: a pinned pod must fit its node's CPU, memory and pods. Through
// the scheduler on every store: matching skips nodes short of them, Explain
// names the resource, what is held survives a restart, a lowered allocatable
// keeps what is held, and preemption frees CPU as well as devices.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/scheduler/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/blocking_scheduler.h"
#include "tests/support/scheduler_test_util.h"
#include "tests/support/status_matchers.h"
#include "tests/support/store_factories.h"
#include "tests/support/store_scheduler_fixture.h"

namespace accelsched {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

constexpr int64_t kGiB = int64_t{1} << 30;

Node T4Node(std::string name, int gpus, int64_t cpu_milli,
            int64_t memory_bytes = 64 * kGiB, int64_t pods = 0) {
  std::vector<Device> devices;
  for (int i = 0; i < gpus; ++i) {
    devices.push_back(Gpu(absl::StrCat(name, "-GPU-", i), "T4", i));
  }
  Node n = MakeNode(std::move(name), std::move(devices));
  n.allocatable = NodeResources{cpu_milli, memory_bytes, pods};
  return n;
}

AllocationRequest WantPod(std::string id, int count, int64_t cpu_milli,
                          int64_t memory_bytes = kGiB) {
  AllocationRequest r = Want(std::move(id), "T4", count);
  r.pod_resources = NodeResources{cpu_milli, memory_bytes, 0};
  return r;
}

template <typename Factory>
class SchedulerNodeResourcesTest : public StoreSchedulerTest<Factory> {
 protected:
  NodeResources Available(const std::string& node) {
    absl::StatusOr<Node> n = this->s().GetNode(node);
    EXPECT_OK(n);
    if (!n.ok() || !n->available.has_value()) return NodeResources{-1, -1, -1};
    return *n->available;
  }
};

TYPED_TEST_SUITE(SchedulerNodeResourcesTest, StoreFactories, StoreFactoryNames);

// Best fit alone would put the second pod on n1 (one free T4 left); n1's
// CPU is gone, so it goes to n2, and every pinned pod fits its node.
TYPED_TEST(SchedulerNodeResourcesTest, ANodeShortOfCpuIsSkipped) {
  ASSERT_OK(this->s().RegisterNode(T4Node("n1", 2, 4000)));
  ASSERT_OK(this->s().RegisterNode(T4Node("n2", 4, 16000)));
  absl::StatusOr<Allocation> first = this->s().Allocate(WantPod("a", 1, 3000));
  ASSERT_OK(first);
  EXPECT_EQ(first->node, "n1");  // fewest free T4s that fit
  absl::StatusOr<Allocation> second = this->s().Allocate(WantPod("b", 1, 3000));
  ASSERT_OK(second);
  EXPECT_EQ(second->node, "n2");
  ASSERT_TRUE(second->pod_resources.has_value());
  EXPECT_EQ(second->pod_resources->pods, 1);  // 0 means one pod
  EXPECT_EQ(this->Available("n1"), (NodeResources{1000, 63 * kGiB, 0}));
  EXPECT_EQ(this->Available("n2").cpu_milli, 13000);

  // A request without pod_resources is accounted as before: n1's last T4.
  absl::StatusOr<Allocation> plain = this->s().Allocate(Want("c", "T4", 1));
  ASSERT_OK(plain);
  EXPECT_EQ(plain->node, "n1");
}

TYPED_TEST(SchedulerNodeResourcesTest, ExplainNamesTheResourceAndFigures) {
  ASSERT_OK(this->s().RegisterNode(T4Node("n1", 2, 8000)));
  ASSERT_OK(this->s().Allocate(WantPod("a", 1, 6500)));
  absl::StatusOr<ExplainResult> r = this->s().Explain(WantPod("b", 1, 4000));
  ASSERT_OK(r);
  EXPECT_FALSE(r->feasible);
  ASSERT_EQ(r->explanation.nodes.size(), 1u);
  EXPECT_THAT(r->explanation.nodes[0].reasons,
              Contains("insufficient cpu_milli (1500 of 8000 cpu_milli free, "
                       "the request needs 4000)"));
  EXPECT_THAT(r->explanation.summary, HasSubstr("1 insufficient cpu_milli"));
  EXPECT_THAT(this->s().Allocate(WantPod("b", 1, 4000)).status(),
              StatusIs(absl::StatusCode::kResourceExhausted, testing::_));

  absl::StatusOr<ExplainResult> mem =
      this->s().Explain(WantPod("m", 1, 100, 64 * kGiB));
  ASSERT_OK(mem);
  EXPECT_THAT(mem->explanation.nodes[0].reasons,
              Contains(HasSubstr("insufficient memory_bytes")));
}

// A queued request kept waiting by CPU says so, not only that units lack.
TYPED_TEST(SchedulerNodeResourcesTest, PendingReasonNamesThePodsNeeds) {
  ASSERT_OK(this->s().RegisterNode(T4Node("n1", 2, 8000)));
  ASSERT_OK(this->s().Allocate(WantPod("a", 1, 6000)));
  AllocationRequest queued = WantPod("b", 1, 4000);
  queued.queue = true;
  absl::StatusOr<Allocation> b = this->s().Allocate(queued);
  ASSERT_OK(b);
  EXPECT_EQ(b->state, AllocationState::kPending);
  EXPECT_THAT(b->pending_reason,
              HasSubstr("and room for the pod (4000 cpu_milli, 1073741824 "
                        "memory_bytes) (1 free of 2)"));
  ASSERT_OK(this->s().Release({"", "a"}));
  absl::StatusOr<Allocation> admitted = this->s().GetAllocation({"", "b"});
  ASSERT_OK(admitted);
  EXPECT_EQ(admitted->state, AllocationState::kActive);
}

TYPED_TEST(SchedulerNodeResourcesTest, PodSlotsAreCountedWhenLimited) {
  ASSERT_OK(this->s().RegisterNode(T4Node("n1", 4, 64000, 64 * kGiB, 1)));
  ASSERT_OK(this->s().Allocate(WantPod("a", 1, 100)));
  EXPECT_THAT(this->s().Allocate(WantPod("b", 1, 100)).status(),
              StatusIs(absl::StatusCode::kResourceExhausted, testing::_));
}

TYPED_TEST(SchedulerNodeResourcesTest, WhatIsHeldSurvivesARestart) {
  ASSERT_OK(this->s().RegisterNode(T4Node("n1", 2, 8000)));
  ASSERT_OK(this->s().Allocate(WantPod("a", 1, 6000, 10 * kGiB)));
  ASSERT_NO_FATAL_FAILURE(this->Restart());
  EXPECT_EQ(this->Available("n1"), (NodeResources{2000, 54 * kGiB, 0}));
  absl::StatusOr<Allocation> a = this->s().GetAllocation({"", "a"});
  ASSERT_OK(a);
  EXPECT_EQ(a->pod_resources, (NodeResources{6000, 10 * kGiB, 1}));
  // Still held: the second T4 is free but the CPU is not.
  EXPECT_THAT(this->s().Allocate(WantPod("b", 1, 4000)).status(),
              StatusIs(absl::StatusCode::kResourceExhausted, testing::_));
  ASSERT_OK(this->s().Release({"", "a"}));
  EXPECT_EQ(this->Available("n1").cpu_milli, 8000);
  ASSERT_OK(this->s().Allocate(WantPod("b", 1, 4000)));
}

TYPED_TEST(SchedulerNodeResourcesTest, LoweredAllocatableKeepsWhatIsHeld) {
  ASSERT_OK(this->s().RegisterNode(T4Node("n1", 4, 16000)));
  ASSERT_OK(this->s().Allocate(WantPod("a", 1, 12000)));
  ASSERT_OK(this->s().RegisterNode(T4Node("n1", 4, 8000)));
  absl::StatusOr<Allocation> a = this->s().GetAllocation({"", "a"});
  ASSERT_OK(a);
  EXPECT_EQ(a->state, AllocationState::kActive);
  EXPECT_EQ(this->Available("n1").cpu_milli, -4000);
  EXPECT_EQ(OvercommitNote(this->Available("n1"), NodeResources{8000}),
            "live allocations hold 12000 cpu_milli of 8000 allocatable");
  EXPECT_THAT(this->s().Allocate(WantPod("b", 1, 1)).status(),
              StatusIs(absl::StatusCode::kResourceExhausted, testing::_));
  ASSERT_NO_FATAL_FAILURE(this->Restart());
  EXPECT_EQ(this->Available("n1").cpu_milli, -4000);
  // Without allocatable the node is not accounted: anything fits again.
  Node unaccounted = T4Node("n1", 4, 0);
  unaccounted.allocatable.reset();
  ASSERT_OK(this->s().RegisterNode(unaccounted));
  ASSERT_OK(this->s().Allocate(WantPod("b", 1, 1)));
}

TYPED_TEST(SchedulerNodeResourcesTest, BadValuesNameTheField) {
  EXPECT_THAT(this->s().Allocate(WantPod("a", 1, -1)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("pod_resources.cpu_milli")));
  EXPECT_THAT(this->s().Allocate(WantPod("a", 1, 1, int64_t{1} << 60)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("pod_resources.memory_bytes")));
  Node absurd = T4Node("n1", 1, kMaxCpuMilli + 1);
  EXPECT_THAT(this->s().RegisterNode(absurd).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node.allocatable.cpu_milli")));
  ASSERT_OK(this->s().RegisterNode(T4Node("n1", 1, 1000)));
  Node negative = T4Node("n1", 1, 1000, -5);
  EXPECT_THAT(this->s().RegisterNode(negative).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node.allocatable.memory_bytes")));
  // Nothing stored changed.
  EXPECT_EQ(this->Available("n1"), (NodeResources{1000, 64 * kGiB, 0}));
}

// A pod no node could ever hold is refused at once, naming the field and the
// most a node offers, rather than left waiting; a node that is not accounted,
// or a raised allocatable, makes it possible again.
TYPED_TEST(SchedulerNodeResourcesTest, APodNoNodeCouldEverHoldIsRefused) {
  ASSERT_OK(this->s().RegisterNode(T4Node("n1", 2, 8000, 64 * kGiB)));
  ASSERT_OK(this->s().RegisterNode(T4Node("n2", 2, 16000, 32 * kGiB)));
  EXPECT_THAT(
      this->s().Allocate(WantPod("cpu", 1, 20000)).status(),
      StatusIs(
          absl::StatusCode::kFailedPrecondition,
          HasSubstr("pod_resources.cpu_milli 20000 is more than any node "
                    "with a nvidia-tesla-t4 device offers: at most 16000")));
  EXPECT_THAT(this->s().Allocate(WantPod("mem", 1, 1000, 128 * kGiB)).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("pod_resources.memory_bytes")));
  // Each resource on some node, both on none.
  EXPECT_THAT(this->s().Allocate(WantPod("both", 1, 12000, 48 * kGiB)).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("offers both")));
  absl::StatusOr<ExplainResult> why =
      this->s().Explain(WantPod("cpu", 1, 20000));
  ASSERT_OK(why);
  EXPECT_FALSE(why->feasible);
  EXPECT_THAT(why->explanation.summary, HasSubstr("pod_resources.cpu_milli"));
  // Nothing was stored.
  EXPECT_EQ(this->Available("n1"), (NodeResources{8000, 64 * kGiB, 0}));
  EXPECT_EQ(this->Available("n2"), (NodeResources{16000, 32 * kGiB, 0}));

  // n1 re-registered with more: the same request is placed there.
  ASSERT_OK(this->s().RegisterNode(T4Node("n1", 2, 32000, 64 * kGiB)));
  absl::StatusOr<Allocation> placed =
      this->s().Allocate(WantPod("cpu", 1, 20000));
  ASSERT_OK(placed);
  EXPECT_EQ(placed->node, "n1");
  // A node that is not accounted may hold anything.
  Node open = T4Node("n3", 1, 0);
  open.allocatable.reset();
  ASSERT_OK(this->s().RegisterNode(open));
  absl::StatusOr<Allocation> huge =
      this->s().Allocate(WantPod("huge", 1, 90000));
  ASSERT_OK(huge);
  EXPECT_EQ(huge->node, "n3");
}

// A retry asking for other pod resources is another request.
TYPED_TEST(SchedulerNodeResourcesTest, PodResourcesAreWhatMakesARequest) {
  ASSERT_OK(this->s().RegisterNode(T4Node("n1", 2, 8000)));
  ASSERT_OK(this->s().Allocate(WantPod("a", 1, 1000)));
  ASSERT_OK(this->s().Allocate(WantPod("a", 1, 1000)));
  EXPECT_EQ(this->Available("n1").cpu_milli, 7000);  // held once
  EXPECT_THAT(
      this->s().Allocate(WantPod("a", 1, 2000)).status(),
      StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("pod_resources")));
}

}  // namespace
}  // namespace accelsched
