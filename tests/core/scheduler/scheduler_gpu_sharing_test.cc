// GPU sharing (issue 31) through the scheduler on every store: GPUs that take
// shares are registered, validated, stored and counted in GetCapacity; shares
// go best fit per GPU within its compute and memory, keep whole requests off
// their GPU, survive a restart, end with their lease and are explained; bad
// shares are refused naming the field; the shares on one GPU are of one
// group; shares wait in the queue, and whole requests waiting behind them
// reserve their GPUs, and preempt every share on a GPU to free it; a share
// preempts shares of lower priority; quotas, fair share and reclaims count
// them as their fraction of a GPU.
#include <memory>
#include <string>
#include <vector>

#include "config/tenants_file.h"
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

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kGiB = int64_t{1} << 30;

Device SharedGpu(std::string id, const char* model, int index,
                 GpuSharing sharing, uint64_t memory) {
  Device d = Gpu(std::move(id), model, index);
  d.sharing = sharing;
  d.memory_bytes = memory;
  return d;
}

AllocationRequest WantShare(std::string id, std::string device,
                            int64_t compute_milli, int64_t memory_bytes = 0,
                            std::string group = "") {
  AllocationRequest r = Want(std::move(id), std::move(device), 0);
  r.share = GpuShare{compute_milli, memory_bytes, std::move(group)};
  return r;
}

AllocationRequest Queued(AllocationRequest r,
                         absl::Duration lease = absl::ZeroDuration()) {
  r.queue = true;
  r.lease = lease;
  return r;
}

template <typename Factory>
class SchedulerGpuSharingTest : public StoreSchedulerTest<Factory> {
 protected:
  CapacityEntry Capacity(const std::string& model) {
    for (const CapacityEntry& e : this->s().GetCapacity()) {
      if (e.model == model && e.partition.empty()) return e;
    }
    ADD_FAILURE() << "no capacity entry for " << model;
    return CapacityEntry{};
  }

  // Explain's reasons for the one node there is.
  std::vector<std::string> ReasonsFor(const AllocationRequest& request) {
    absl::StatusOr<ExplainResult> e = this->s().Explain(request);
    EXPECT_OK(e);
    if (!e.ok() || e->explanation.nodes.size() != 1) return {};
    return e->explanation.nodes[0].reasons;
  }
};

TYPED_TEST_SUITE(SchedulerGpuSharingTest, StoreFactories, StoreFactoryNames);

TYPED_TEST(SchedulerGpuSharingTest, SharingIsStoredAndCounted) {
  ASSERT_OK(this->s().RegisterNode(MakeNode(
      "n1", {SharedGpu("GPU-0", "T4", 0, GpuSharing::kMps, 16 * kGiB),
             SharedGpu("GPU-1", "T4", 1, GpuSharing::kTimeSlicing, 16 * kGiB),
             SharedGpu("GPU-2", "T4", 2, GpuSharing::kNone, 16 * kGiB)})));
  CapacityEntry t4 = this->Capacity("nvidia-tesla-t4");
  EXPECT_EQ(t4.free, 3);
  EXPECT_EQ(t4.free_compute_milli, 2000);  // the two sharing GPUs
  EXPECT_EQ(t4.free_memory_bytes, 32 * kGiB);

  // A whole-device allocation of a sharing GPU leaves it no free share;
  // best fit takes GPUs in index order here, so GPU-0 goes first.
  absl::StatusOr<Allocation> whole = this->s().Allocate(Want("w", "T4", 1));
  ASSERT_OK(whole);
  ASSERT_EQ(whole->devices.size(), 1u);
  EXPECT_EQ(whole->devices[0].device_id, "GPU-0");
  EXPECT_FALSE(whole->devices[0].share.has_value());
  EXPECT_EQ(this->Capacity("nvidia-tesla-t4").free_compute_milli, 1000);

  ASSERT_NO_FATAL_FAILURE(this->Restart());
  absl::StatusOr<Node> n = this->s().GetNode("n1");
  ASSERT_OK(n);
  ASSERT_EQ(n->devices.size(), 3u);
  EXPECT_EQ(n->devices[0].sharing, GpuSharing::kMps);
  EXPECT_EQ(n->devices[1].sharing, GpuSharing::kTimeSlicing);
  EXPECT_EQ(n->devices[2].sharing, GpuSharing::kNone);
  t4 = this->Capacity("nvidia-tesla-t4");
  EXPECT_EQ(t4.free_compute_milli, 1000);
  EXPECT_EQ(t4.free_memory_bytes, 16 * kGiB);

  // An unhealthy sharing GPU has nothing free either.
  ASSERT_OK(this->s().Heartbeat("n1", {"GPU-1"}));
  EXPECT_EQ(this->Capacity("nvidia-tesla-t4").free_compute_milli, 0);
  ASSERT_OK(this->s().Release({"", "w"}));
  EXPECT_EQ(this->Capacity("nvidia-tesla-t4").free_compute_milli, 1000);
}

TYPED_TEST(SchedulerGpuSharingTest, SharingOnlyOnWholeNvidiaGpus) {
  ASSERT_OK(this->s().RegisterNode(MakeNode(
      "n1", {SharedGpu("GPU-0", "T4", 0, GpuSharing::kMps, 16 * kGiB)})));
  Device mig = MigA100("GPU-M", 0);
  mig.sharing = GpuSharing::kTimeSlicing;
  EXPECT_THAT(this->s().RegisterNode(MakeNode("n1", {mig})).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("devices[0].sharing")));
  EXPECT_THAT(this->s()
                  .RegisterNode(MakeNode(
                      "n1", {SharedGpu("GPU-0", "T4", 0, GpuSharing::kMps, 0)}))
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("devices[0].memory_bytes")));
  Device chip = Chip("chip-0", "slice-a", "2x2x1", 0);
  chip.sharing = GpuSharing::kMps;
  EXPECT_THAT(this->s().RegisterNode(MakeNode("t1", {chip})).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("devices[0].sharing")));
  // Nothing stored changed.
  absl::StatusOr<Node> n = this->s().GetNode("n1");
  ASSERT_OK(n);
  ASSERT_EQ(n->devices.size(), 1u);
  EXPECT_EQ(n->devices[0].id, "GPU-0");
  EXPECT_EQ(n->devices[0].sharing, GpuSharing::kMps);
  EXPECT_THAT(this->s().GetNode("t1").status(),
              StatusIs(absl::StatusCode::kNotFound, testing::_));
}

TYPED_TEST(SchedulerGpuSharingTest, BadSharesNameTheField) {
  ASSERT_OK(this->s().RegisterNode(MakeNode(
      "n1", {SharedGpu("GPU-0", "T4", 0, GpuSharing::kMps, 16 * kGiB)})));
  struct Case {
    AllocationRequest request;
    const char* field;
  };
  std::vector<Case> cases;
  cases.push_back({WantShare("a", "T4", 0), "share.compute_milli"});
  cases.push_back({WantShare("a", "T4", 1001), "share.compute_milli"});
  cases.push_back({WantShare("a", "T4", 500, -1), "share.memory_bytes"});
  cases.push_back(
      {WantShare("a", "T4", 500, int64_t{1} << 53), "share.memory_bytes"});
  // More than the A100-40GB the registry states.
  cases.push_back({WantShare("a", "nvidia-tesla-a100", 500, 41 * kGiB),
                   "share.memory_bytes"});
  AllocationRequest two = WantShare("a", "T4", 500);
  two.count = 2;
  cases.push_back({two, "count"});
  AllocationRequest gang = WantShare("a", "T4", 500);
  gang.replicas = 2;
  cases.push_back({gang, "replicas"});
  AllocationRequest domain = WantShare("a", "T4", 500);
  domain.topology_key = "zone";
  cases.push_back({domain, "topology_key"});
  cases.push_back({WantShare("a", "T4", 500, 0, "Team A"), "share.group"});
  AllocationRequest slice = WantShare("a", "nvidia-tesla-a100", 500);
  slice.partition_kind = PartitionKind::kPartitionSize;
  slice.partition_size = "1g.5gb";
  cases.push_back({slice, "accelerator.partition_size"});
  AllocationRequest tpu = WantShare("a", "tpu-v5p-slice", 500);
  tpu.partition_kind = PartitionKind::kPartitionSize;
  tpu.partition_size = "2x2x1";
  cases.push_back({tpu, "share"});
  for (const Case& c : cases) {
    EXPECT_THAT(
        this->s().Allocate(c.request).status(),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.field)))
        << c.field;
  }
  EXPECT_EQ(this->Capacity("nvidia-tesla-t4").free_compute_milli, 1000);
  EXPECT_THAT(this->s().GetAllocation({"", "a"}).status(),
              StatusIs(absl::StatusCode::kNotFound, testing::_));
}

Node TwoMpsT4s(std::string name = "n1") {
  return MakeNode(
      name, {SharedGpu(name + "-GPU-0", "T4", 0, GpuSharing::kMps, 16 * kGiB),
             SharedGpu(name + "-GPU-1", "T4", 1, GpuSharing::kMps, 16 * kGiB)});
}

// Best fit per GPU: each share goes to the GPU left with the least free
// compute that holds it, so shares fill one GPU before the next.
TYPED_TEST(SchedulerGpuSharingTest, SharesGoBestFitPerGpu) {
  ASSERT_OK(this->s().RegisterNode(TwoMpsT4s()));
  auto gpu_of = [&](const char* id, int64_t milli) -> std::string {
    absl::StatusOr<Allocation> a =
        this->s().Allocate(WantShare(id, "T4", milli));
    if (!a.ok()) return std::string(a.status().message());
    EXPECT_EQ(a->devices.size(), 1u);
    EXPECT_TRUE(a->devices[0].share.has_value());
    return a->devices[0].device_id;
  };
  EXPECT_EQ(gpu_of("a", 300), "n1-GPU-0");  // equal: the first by key
  EXPECT_EQ(gpu_of("b", 500), "n1-GPU-0");  // 700 free there, 1000 on GPU-1
  EXPECT_EQ(gpu_of("c", 400), "n1-GPU-1");  // GPU-0 has 200 left
  EXPECT_EQ(gpu_of("d", 200), "n1-GPU-0");  // exactly fills GPU-0
  CapacityEntry t4 = this->Capacity("nvidia-tesla-t4");
  EXPECT_EQ(t4.free_compute_milli, 600);
  EXPECT_EQ(t4.allocated_compute_milli, 1400);
  EXPECT_EQ(t4.allocated, 2);  // no whole request may have either GPU
  EXPECT_EQ(t4.free, 0);
  // The share's memory is its fraction of the GPU's when not given.
  absl::StatusOr<Allocation> a = this->s().GetAllocation({"", "b"});
  ASSERT_OK(a);
  EXPECT_EQ(a->devices[0].share, (GpuShare{500, 8 * kGiB}));
  ASSERT_TRUE(a->share.has_value());
  EXPECT_EQ(*a->share, (GpuShare{500, 0}));

  EXPECT_THAT(this->s().Allocate(Want("whole", "T4", 1)).status(),
              StatusIs(absl::StatusCode::kResourceExhausted, testing::_));
  EXPECT_THAT(this->s().Allocate(WantShare("e", "T4", 700)).status(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("1 no nvidia-tesla-t4 device with the share "
                                 "free")));
  EXPECT_THAT(this->ReasonsFor(WantShare("e", "T4", 700)),
              ElementsAre("no nvidia-tesla-t4 device with the share free "
                          "(n1-GPU-1 has 600 of 1000 milli free, the request "
                          "needs 700)"));
  // Once its last share goes, a GPU is whole again.
  ASSERT_OK(this->s().Release({"", "c"}));
  absl::StatusOr<Allocation> whole = this->s().Allocate(Want("whole", "T4", 1));
  ASSERT_OK(whole);
  EXPECT_EQ(whole->devices[0].device_id, "n1-GPU-1");
  EXPECT_FALSE(whole->devices[0].share.has_value());
  // A GPU held whole takes no share.
  ASSERT_OK(this->s().Release({"", "a"}));
  ASSERT_OK(this->s().Release({"", "b"}));
  ASSERT_OK(this->s().Release({"", "d"}));
  ASSERT_OK(this->s().Allocate(Want("whole-2", "T4", 1)));
  EXPECT_THAT(this->s().Allocate(WantShare("f", "T4", 1)).status(),
              StatusIs(absl::StatusCode::kResourceExhausted, testing::_));
  EXPECT_THAT(this->ReasonsFor(WantShare("f", "T4", 1)),
              ElementsAre("no nvidia-tesla-t4 device with the share free "
                          "(held whole or unhealthy)"));
}

TYPED_TEST(SchedulerGpuSharingTest, GpuMemoryBoundsShares) {
  ASSERT_OK(this->s().RegisterNode(TwoMpsT4s()));
  absl::StatusOr<Allocation> a =
      this->s().Allocate(WantShare("a", "T4", 100, 10 * kGiB));
  ASSERT_OK(a);
  EXPECT_EQ(a->devices[0].device_id, "n1-GPU-0");
  EXPECT_EQ(a->devices[0].share, (GpuShare{100, 10 * kGiB}));
  // Compute is left on GPU-0 but not 10 GiB of memory.
  absl::StatusOr<Allocation> b =
      this->s().Allocate(WantShare("b", "T4", 100, 10 * kGiB));
  ASSERT_OK(b);
  EXPECT_EQ(b->devices[0].device_id, "n1-GPU-1");
  // Half the compute takes half of the 16 GiB when memory is not given:
  // neither GPU has 8 GiB left.
  EXPECT_THAT(this->s().Allocate(WantShare("c", "T4", 500)).status(),
              StatusIs(absl::StatusCode::kResourceExhausted, testing::_));
  EXPECT_THAT(this->ReasonsFor(WantShare("c", "T4", 500)),
              ElementsAre("no nvidia-tesla-t4 device with the share free "
                          "(n1-GPU-0 has 6442450944 bytes of GPU memory free, "
                          "the share needs 8589934592)"));
  ASSERT_OK(this->s().Allocate(WantShare("c", "T4", 300)));  // 4.8 GiB
  EXPECT_EQ(this->Capacity("nvidia-tesla-t4").free_memory_bytes,
            32 * kGiB - 20 * kGiB - ShareMemory({300, 0}, 16 * kGiB));
}

TYPED_TEST(SchedulerGpuSharingTest, OnlySharingGpusTakeShares) {
  ASSERT_OK(this->s().RegisterNode(MakeNode(
      "n1", {SharedGpu("GPU-0", "T4", 0, GpuSharing::kNone, 16 * kGiB)})));
  // Not a matter of waiting: no GPU of the model takes shares.
  AllocationRequest queued = WantShare("a", "T4", 100);
  queued.queue = true;
  absl::Status refused = this->s().Allocate(queued).status();
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kFailedPrecondition,
                                HasSubstr("share: no nvidia-tesla-t4 device "
                                          "takes shares")));
  absl::StatusOr<ExplainResult> e =
      this->s().Explain(WantShare("a", "T4", 100));
  ASSERT_OK(e);
  EXPECT_FALSE(e->feasible);
  // Re-registered as time-sliced, the same GPU takes it.
  ASSERT_OK(this->s().RegisterNode(MakeNode(
      "n1",
      {SharedGpu("GPU-0", "T4", 0, GpuSharing::kTimeSlicing, 16 * kGiB)})));
  e = this->s().Explain(WantShare("a", "T4", 100));
  ASSERT_OK(e);
  EXPECT_TRUE(e->feasible);
  ASSERT_EQ(e->would_allocate.devices.size(), 1u);
  EXPECT_EQ(e->would_allocate.devices[0].share,
            (GpuShare{100, ShareMemory({100, 0}, 16 * kGiB)}));
  ASSERT_OK(this->s().Allocate(WantShare("a", "T4", 100)));
  // Nor when no GPU that takes shares has the memory asked.
  queued = WantShare("b", "T4", 100, 16 * kGiB + 1);
  queued.queue = true;
  EXPECT_THAT(this->s().Allocate(queued).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("share.memory_bytes 17179869185 is more than "
                                 "any nvidia-tesla-t4 device that takes "
                                 "shares has: at most 17179869184 bytes")));
}

TYPED_TEST(SchedulerGpuSharingTest, SharesSurviveARestartAndEndWithTheirLease) {
  ASSERT_OK(this->s().RegisterNode(TwoMpsT4s()));
  AllocationRequest shortLived = WantShare("a", "T4", 600);
  shortLived.lease = absl::Minutes(5);
  ASSERT_OK(this->s().Allocate(shortLived));
  ASSERT_OK(this->s().Allocate(WantShare("b", "T4", 300, 2 * kGiB)));
  ASSERT_NO_FATAL_FAILURE(this->Restart());
  CapacityEntry t4 = this->Capacity("nvidia-tesla-t4");
  EXPECT_EQ(t4.free_compute_milli, 1100);
  EXPECT_EQ(t4.free_memory_bytes,
            32 * kGiB - ShareMemory({600, 0}, 16 * kGiB) - 2 * kGiB);
  // Both went to GPU-0, which still has 100 milli: best fit continues there.
  absl::StatusOr<Allocation> c = this->s().Allocate(WantShare("c", "T4", 100));
  ASSERT_OK(c);
  EXPECT_EQ(c->devices[0].device_id, "n1-GPU-0");
  // A retry is the same allocation; another share under its id is not.
  absl::StatusOr<Allocation> retry =
      this->s().Allocate(WantShare("c", "T4", 100));
  ASSERT_OK(retry);
  EXPECT_EQ(retry->id, c->id);
  EXPECT_THAT(this->s().Allocate(WantShare("c", "T4", 200)).status(),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("share")));
  // The node cannot drop a GPU that holds shares: it is kept, removed.
  ASSERT_OK(this->s().RegisterNode(MakeNode(
      "n1", {SharedGpu("n1-GPU-1", "T4", 1, GpuSharing::kMps, 16 * kGiB)})));
  absl::StatusOr<Node> n = this->s().GetNode("n1");
  ASSERT_OK(n);
  ASSERT_EQ(n->devices.size(), 2u);
  this->clock_.Advance(absl::Minutes(6));
  ASSERT_OK(this->s().Sweep());
  absl::StatusOr<Allocation> a = this->s().GetAllocation({"", "a"});
  ASSERT_OK(a);
  EXPECT_EQ(a->state, AllocationState::kExpired);
  ASSERT_OK(this->s().Release({"", "b"}));
  ASSERT_OK(this->s().Release({"", "c"}));  // the last: GPU-0 goes
  n = this->s().GetNode("n1");
  ASSERT_OK(n);
  ASSERT_EQ(n->devices.size(), 1u);
  EXPECT_EQ(this->Capacity("nvidia-tesla-t4").free_compute_milli, 1000);
}

// The shares on one GPU are of one group (a DRA claim serves one namespace):
// a share goes best fit among the GPUs its group shares and those nobody
// shares, after a restart too, and a GPU whose last share ends takes any
// group again.
TYPED_TEST(SchedulerGpuSharingTest, SharesOfOneGpuAreOfOneGroup) {
  ASSERT_OK(this->s().RegisterNode(TwoMpsT4s()));
  auto gpu_of = [&](const char* id, int64_t milli,
                    const char* group) -> std::string {
    absl::StatusOr<Allocation> a =
        this->s().Allocate(WantShare(id, "T4", milli, 0, group));
    EXPECT_OK(a);
    if (!a.ok()) return "";
    EXPECT_EQ(a->devices[0].share->group, group);
    return a->devices[0].device_id;
  };
  EXPECT_EQ(gpu_of("a", 300, "ns-a"), "n1-GPU-0");
  EXPECT_EQ(gpu_of("b", 300, "ns-b"), "n1-GPU-1");
  EXPECT_EQ(gpu_of("c", 200, "ns-a"), "n1-GPU-0");
  // Compute is left on both GPUs, but neither for a share of no group.
  EXPECT_THAT(this->s().Allocate(WantShare("d", "T4", 100)).status(),
              StatusIs(absl::StatusCode::kResourceExhausted, testing::_));
  EXPECT_THAT(this->ReasonsFor(WantShare("d", "T4", 100)),
              ElementsAre("no nvidia-tesla-t4 device with the share free "
                          "(n1-GPU-0 holds shares of group \"ns-a\", the "
                          "request is of no group)"));
  absl::StatusOr<Allocation> waits =
      this->s().Allocate(Queued(WantShare("waits", "T4", 100)));
  ASSERT_OK(waits);
  EXPECT_THAT(waits->pending_reason,
              HasSubstr("(1200 milli free over the sharing devices, in all, "
                        "some on GPUs that shares of another group hold)"));
  ASSERT_OK(this->s().Release({"", "waits"}));
  ASSERT_NO_FATAL_FAILURE(this->Restart());
  absl::StatusOr<Allocation> b = this->s().GetAllocation({"", "b"});
  ASSERT_OK(b);
  EXPECT_EQ(b->devices[0].share,
            (GpuShare{300, ShareMemory({300, 0}, 16 * kGiB), "ns-b"}));
  EXPECT_EQ(gpu_of("e", 700, "ns-b"), "n1-GPU-1");
  EXPECT_THAT(this->s().Allocate(WantShare("f", "T4", 100, 0, "ns-b")).status(),
              StatusIs(absl::StatusCode::kResourceExhausted, testing::_));
  ASSERT_OK(this->s().Release({"", "a"}));
  ASSERT_OK(this->s().Release({"", "c"}));
  EXPECT_EQ(gpu_of("d", 100, ""), "n1-GPU-0");
  // A queued share that its group keeps off every GPU holds back no share
  // of another group, of its size, behind it.
  EXPECT_EQ(gpu_of("d2", 900, ""), "n1-GPU-0");
  absl::StatusOr<Allocation> q1 =
      this->s().Allocate(Queued(WantShare("q1", "T4", 100, 0, "ns-c")));
  ASSERT_OK(q1);
  EXPECT_EQ(q1->state, AllocationState::kPending);
  absl::StatusOr<Allocation> q2 =
      this->s().Allocate(Queued(WantShare("q2", "T4", 100)));
  ASSERT_OK(q2);
  EXPECT_EQ(q2->state, AllocationState::kPending);
  ASSERT_OK(this->s().Release({"", "d"}));
  EXPECT_EQ(this->s().GetAllocation({"", "q1"})->state,
            AllocationState::kPending);
  q2 = this->s().GetAllocation({"", "q2"});
  ASSERT_OK(q2);
  EXPECT_EQ(q2->state, AllocationState::kActive) << q2->pending_reason;
  // A group is a label value, as a namespace's name is.
  EXPECT_THAT(
      this->s()
          .Allocate(WantShare("g", "T4", 100, 0, "Not a namespace"))
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("share.group")));
}

// A GPU's shares hold it as a whole allocation does: its node cannot be
// removed without force (force ends them), nor re-registered with another
// sharing mode or less memory than they hold.
TYPED_TEST(SchedulerGpuSharingTest, SharesHoldTheirGpuAndNode) {
  ASSERT_OK(this->s().RegisterNode(TwoMpsT4s()));
  ASSERT_OK(this->s().Allocate(WantShare("a", "T4", 500, 12 * kGiB)));
  Node less = TwoMpsT4s();
  less.devices[0].memory_bytes = 4 * kGiB;
  EXPECT_THAT(this->s().RegisterNode(less).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("holds shares")));
  Node unshared = TwoMpsT4s();
  unshared.devices[0].sharing = GpuSharing::kTimeSlicing;
  EXPECT_THAT(this->s().RegisterNode(unshared).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("holds shares")));
  // More memory is fine; GPU-1 holds nothing and may change.
  Node more = TwoMpsT4s();
  more.devices[0].memory_bytes = 24 * kGiB;
  more.devices[1].sharing = GpuSharing::kNone;
  ASSERT_OK(this->s().RegisterNode(more));
  EXPECT_EQ(this->Capacity("nvidia-tesla-t4").free_memory_bytes, 12 * kGiB);

  EXPECT_THAT(this->s().RemoveNode("n1", /*force=*/false),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("a-")));
  ASSERT_OK(this->s().RemoveNode("n1", /*force=*/true));
  absl::StatusOr<Allocation> a = this->s().GetAllocation({"", "a"});
  ASSERT_OK(a);
  EXPECT_EQ(a->state, AllocationState::kReleased);
  EXPECT_EQ(a->end_reason, kReasonNodeRemoved);
  // Back, the GPU is whole again.
  ASSERT_OK(this->s().RegisterNode(TwoMpsT4s()));
  EXPECT_EQ(this->Capacity("nvidia-tesla-t4").free_compute_milli, 2000);
  ASSERT_OK(this->s().Allocate(Want("whole", "T4", 2)));
}

// A share that does not fit waits in the queue and is admitted when room
// frees; a larger share that still does not fit holds back no smaller one.
TYPED_TEST(SchedulerGpuSharingTest, SharesWaitAndASmallerOneIsNotHeldBack) {
  ASSERT_OK(this->s().RegisterNode(TwoMpsT4s()));
  // GPU-0: 400 milli and 2 GiB left; GPU-1: 400 milli and 4 GiB left.
  ASSERT_OK(this->s().Allocate(WantShare("a", "T4", 600, 14 * kGiB)));
  ASSERT_OK(this->s().Allocate(WantShare("b", "T4", 500)));  // 8 GiB
  ASSERT_OK(this->s().Allocate(WantShare("f", "T4", 100, 4 * kGiB)));
  absl::StatusOr<Allocation> c =
      this->s().Allocate(Queued(WantShare("c", "T4", 700)));
  ASSERT_OK(c);
  EXPECT_EQ(c->state, AllocationState::kPending);
  EXPECT_THAT(c->pending_reason,
              HasSubstr("no nvidia-tesla-t4 device has 700 compute milli "
                        "free for the share (800 milli free"));
  absl::StatusOr<Allocation> d =
      this->s().Allocate(Queued(WantShare("d", "T4", 500)));
  ASSERT_OK(d);
  EXPECT_EQ(d->state, AllocationState::kPending);
  // GPU-1 has 500 milli and 8 GiB free: not enough for c, ahead in the
  // queue, but for d.
  ASSERT_OK(this->s().Release({"", "f"}));
  absl::StatusOr<Allocation> got = this->s().GetAllocation({"", "d"});
  ASSERT_OK(got);
  EXPECT_EQ(got->state, AllocationState::kActive);
  ASSERT_EQ(got->devices.size(), 1u);
  EXPECT_EQ(got->devices[0].device_id, "n1-GPU-1");
  EXPECT_EQ(got->devices[0].share, (GpuShare{500, 8 * kGiB}));
  EXPECT_EQ(this->s().GetAllocation({"", "c"})->state,
            AllocationState::kPending);
  // GPU-0 empties: c goes there.
  ASSERT_OK(this->s().Release({"", "a"}));
  got = this->s().GetAllocation({"", "c"});
  ASSERT_OK(got);
  EXPECT_EQ(got->state, AllocationState::kActive);
  EXPECT_EQ(got->devices[0].device_id, "n1-GPU-0");
  ASSERT_NO_FATAL_FAILURE(this->Restart());
  EXPECT_EQ(this->Capacity("nvidia-tesla-t4").free_compute_milli, 300);
}

// A whole request waiting for a GPU that holds shares reserves it from when
// its last share ends, so that shares arriving after it do not keep it
// whole-less for ever; a share that ends before then still backfills.
TYPED_TEST(SchedulerGpuSharingTest, AWholeRequestReservesAGpuItsSharesFree) {
  ASSERT_OK(this->s().RegisterNode(MakeNode(
      "n1", {SharedGpu("GPU-0", "T4", 0, GpuSharing::kMps, 16 * kGiB)})));
  AllocationRequest first = WantShare("s1", "T4", 300);
  first.lease = absl::Minutes(10);
  ASSERT_OK(this->s().Allocate(first));
  absl::StatusOr<Allocation> whole =
      this->s().Allocate(Queued(Want("w", "T4", 1), absl::Hours(1)));
  ASSERT_OK(whole);
  EXPECT_EQ(whole->state, AllocationState::kPending);
  EXPECT_THAT(whole->pending_reason, HasSubstr("holds n1 from"));
  AllocationRequest late = WantShare("s2", "T4", 300);
  late.lease = absl::Hours(1);
  EXPECT_THAT(this->s().Allocate(late).status(),
              StatusIs(absl::StatusCode::kResourceExhausted, testing::_));
  AllocationRequest backfill = WantShare("s3", "T4", 300);
  backfill.lease = absl::Minutes(5);
  ASSERT_OK(this->s().Allocate(backfill));
  // Polled (a retry renews a pending request's own lease) while it waits.
  // The node's heartbeats keep it eligible.
  this->clock_.Advance(absl::Minutes(5));
  ASSERT_OK(this->s().Heartbeat("n1", {}));
  ASSERT_OK(this->s().Allocate(Queued(Want("w", "T4", 1), absl::Hours(1))));
  this->clock_.Advance(absl::Minutes(6));
  ASSERT_OK(this->s().Heartbeat("n1", {}));
  ASSERT_OK(this->s().Sweep());
  absl::StatusOr<Allocation> got = this->s().GetAllocation({"", "w"});
  ASSERT_OK(got);
  EXPECT_EQ(got->state, AllocationState::kActive) << got->pending_reason;
  EXPECT_EQ(got->devices[0].device_id, "GPU-0");
  EXPECT_FALSE(got->devices[0].share.has_value());
}

// A whole request of higher priority frees a GPU held in shares by
// preempting every share on it, all of lower priority; a GPU with a share of
// its priority or higher is left alone.
TYPED_TEST(SchedulerGpuSharingTest, AWholeRequestPreemptsEverySharesOfOneGpu) {
  ASSERT_OK(this->s().RegisterNode(TwoMpsT4s()));
  auto at = [](AllocationRequest r, int priority) {
    r.priority = priority;
    return r;
  };
  auto gpu_of = [&](const char* id) -> std::string {
    absl::StatusOr<Allocation> a = this->s().GetAllocation({"", id});
    EXPECT_OK(a);
    return a.ok() && !a->devices.empty() ? a->devices[0].device_id : "";
  };
  ASSERT_OK(this->s().Allocate(at(WantShare("s1", "T4", 600), 0)));
  ASSERT_OK(this->s().Allocate(at(WantShare("s2", "T4", 300), 0)));
  ASSERT_OK(this->s().Allocate(at(WantShare("s3", "T4", 500), 5)));
  ASSERT_EQ(gpu_of("s1"), "n1-GPU-0");
  ASSERT_EQ(gpu_of("s2"), "n1-GPU-0");  // best fit
  ASSERT_EQ(gpu_of("s3"), "n1-GPU-1");

  absl::StatusOr<Allocation> w =
      this->s().Allocate(Queued(at(Want("w", "T4", 1), 3)));
  ASSERT_OK(w);
  EXPECT_EQ(w->state, AllocationState::kPending);
  EXPECT_THAT(this->s().GetAllocation({"", "w"})->pending_reason,
              HasSubstr("preempted 2 allocations"));
  EXPECT_EQ(this->s().GetAllocation({"", "s1"})->state,
            AllocationState::kPreempted);
  EXPECT_EQ(this->s().GetAllocation({"", "s2"})->preempted_by, w->id);
  EXPECT_EQ(this->s().GetAllocation({"", "s3"})->state,
            AllocationState::kActive);
  // The victims' node is held for w during their grace: a share of lower
  // priority does not slip onto the GPU they free (it would keep w out).
  EXPECT_THAT(this->s().Allocate(at(WantShare("late", "T4", 100), 0)).status(),
              StatusIs(absl::StatusCode::kResourceExhausted, testing::_));
  // The grace over, the GPU the shares held is the whole request's.
  this->clock_.Advance(absl::Seconds(31));
  ASSERT_OK(this->s().Heartbeat("n1", {}));
  ASSERT_OK(this->s().Sweep());
  absl::StatusOr<Allocation> admitted = this->s().GetAllocation({"", "w"});
  ASSERT_OK(admitted);
  EXPECT_EQ(admitted->state, AllocationState::kActive)
      << admitted->pending_reason;
  EXPECT_EQ(gpu_of("w"), "n1-GPU-0");
  EXPECT_FALSE(this->s().GetAllocation({"", "s1"})->live());
  EXPECT_EQ(this->Capacity("nvidia-tesla-t4").free_compute_milli, 500);
}

// A share of higher priority that fits nowhere takes the fewest shares of
// lower priority on one GPU (on a GPU the lowest priority, then the most
// recently admitted first), and their node is held for it through their
// grace; a share of no higher priority takes nothing; a share of another
// group takes every share on a GPU or none.
TYPED_TEST(SchedulerGpuSharingTest, AShareOfHigherPriorityPreemptsShares) {
  ASSERT_OK(this->s().RegisterNode(TwoMpsT4s()));
  auto at = [](AllocationRequest r, int priority) {
    r.priority = priority;
    return r;
  };
  auto state_of = [&](const char* id) {
    absl::StatusOr<Allocation> a = this->s().GetAllocation({"", id});
    EXPECT_OK(a);
    return a.ok() ? a->state : AllocationState::kReleased;
  };
  ASSERT_OK(this->s().Allocate(at(WantShare("s1", "T4", 400), 0)));
  this->clock_.Advance(absl::Seconds(1));
  ASSERT_OK(this->s().Allocate(at(WantShare("s2", "T4", 500), 0)));
  ASSERT_OK(this->s().Allocate(at(WantShare("s3", "T4", 600), 5)));
  // GPU-0: s1 400 and s2 500, GPU-1: s3 600 (best fit).
  ASSERT_EQ(this->s().GetAllocation({"", "s3"})->devices[0].device_id,
            "n1-GPU-1");

  // Of no higher priority: it waits and takes nothing.
  absl::StatusOr<Allocation> equal =
      this->s().Allocate(Queued(at(WantShare("equal", "T4", 800), 0)));
  ASSERT_OK(equal);
  EXPECT_EQ(equal->state, AllocationState::kPending);
  for (const char* id : {"s1", "s2", "s3"}) {
    EXPECT_EQ(state_of(id), AllocationState::kActive) << id;
  }
  ASSERT_OK(this->s().Release({"", "equal"}));

  // 550 fits neither GPU: one victim either way, s2 (priority 0, the newer
  // of GPU-0's: the older s1 alone would not do) or s3 (priority 5): the
  // lower priority goes.
  absl::StatusOr<Allocation> h =
      this->s().Allocate(Queued(at(WantShare("h", "T4", 550), 9)));
  ASSERT_OK(h);
  EXPECT_EQ(h->state, AllocationState::kPending);
  EXPECT_THAT(this->s().GetAllocation({"", "h"})->pending_reason,
              HasSubstr("preempted 1 allocation"));
  EXPECT_EQ(state_of("s2"), AllocationState::kPreempted);
  EXPECT_EQ(this->s().GetAllocation({"", "s2"})->preempted_by, h->id);
  EXPECT_EQ(state_of("s1"), AllocationState::kActive);
  EXPECT_EQ(state_of("s3"), AllocationState::kActive);
  // Held through the grace: the node (GPU-0's free 100 beside the preempted
  // s2, which best fit would choose, and GPU-1's 400) takes no share of
  // lower priority meanwhile, which would leave h short again.
  EXPECT_THAT(this->s().Allocate(at(WantShare("late", "T4", 100), 0)).status(),
              StatusIs(absl::StatusCode::kResourceExhausted, testing::_));
  this->clock_.Advance(absl::Seconds(31));
  ASSERT_OK(this->s().Heartbeat("n1", {}));
  ASSERT_OK(this->s().Sweep());
  absl::StatusOr<Allocation> admitted = this->s().GetAllocation({"", "h"});
  ASSERT_OK(admitted);
  EXPECT_EQ(admitted->state, AllocationState::kActive)
      << admitted->pending_reason;
  EXPECT_EQ(admitted->devices[0].device_id, "n1-GPU-0");
  EXPECT_FALSE(this->s().GetAllocation({"", "s2"})->live());

  // Of group "ns-a": GPU-1 has the compute but a share of no group, which
  // goes; GPU-0's s1 could go but h, of priority 9, cannot.
  absl::StatusOr<Allocation> g =
      this->s().Allocate(Queued(at(WantShare("g", "T4", 300, 0, "ns-a"), 9)));
  ASSERT_OK(g);
  EXPECT_EQ(state_of("s3"), AllocationState::kPreempted);
  EXPECT_EQ(this->s().GetAllocation({"", "s3"})->preempted_by, g->id);
  EXPECT_EQ(state_of("s1"), AllocationState::kActive);
}

// Among victims of one priority on a node, the GPU of the fewest shares goes:
// one share of 800 rather than three newer ones of 300.
TYPED_TEST(SchedulerGpuSharingTest, APreemptorFreesTheGpuOfFewestShares) {
  ASSERT_OK(this->s().RegisterNode(TwoMpsT4s()));
  ASSERT_OK(this->s().Allocate(WantShare("big", "T4", 800)));
  for (const char* id : {"s1", "s2", "s3"}) {
    this->clock_.Advance(absl::Seconds(1));
    ASSERT_OK(this->s().Allocate(WantShare(id, "T4", 300)));
  }
  AllocationRequest w = Queued(Want("w", "T4", 1));
  w.priority = 3;
  ASSERT_OK(this->s().Allocate(w));
  EXPECT_EQ(this->s().GetAllocation({"", "big"})->state,
            AllocationState::kPreempted);
  for (const char* id : {"s1", "s2", "s3"}) {
    EXPECT_EQ(this->s().GetAllocation({"", id})->state,
              AllocationState::kActive)
        << id;
  }
}

// The queue's order (GetQueue, queue_position) projects a share as its
// fraction of a GPU, as admission's dominant shares count it: a tenant at
// 0.05 of the T4s goes twice with shares of 0.05 before one at 0.12.
TYPED_TEST(SchedulerGpuSharingTest, TheQueueOrderCountsSharesAsTheirFraction) {
  ASSERT_OK(this->s().RegisterNode(TwoMpsT4s()));
  auto of = [](AllocationRequest r, const char* tenant) {
    r.tenant = tenant;
    return r;
  };
  ASSERT_OK(this->s().Allocate(of(WantShare("a0", "T4", 100), "a")));
  ASSERT_OK(this->s().Allocate(of(WantShare("b0", "T4", 240), "b")));
  ASSERT_OK(this->s().Allocate(of(WantShare("c0", "T4", 1000), "c")));
  ASSERT_OK(this->s().Allocate(of(WantShare("c1", "T4", 660), "c")));
  ASSERT_EQ(this->Capacity("nvidia-tesla-t4").free_compute_milli, 0);
  for (const char* id : {"a1", "a2", "a3"}) {
    ASSERT_OK(this->s().Allocate(Queued(of(WantShare(id, "T4", 100), "a"))));
  }
  ASSERT_OK(this->s().Allocate(Queued(of(Want("b1", "T4", 1), "b"))));
  absl::StatusOr<QueuePage> q = this->s().GetQueue("", 0, "");
  ASSERT_OK(q);
  std::vector<std::string> order;
  for (const Allocation& a : q->pending) order.push_back(a.request_id);
  EXPECT_THAT(order, ElementsAre("a1", "a2", "b1", "a3"));
}

// Quotas and fair share count a share as its fraction of a GPU (thousandths
// of a unit), and a quota may be written in thousandths.
TYPED_TEST(SchedulerGpuSharingTest, SharesCountAgainstQuotasAsTheirFraction) {
  ASSERT_OK(this->s().RegisterNode(TwoMpsT4s()));
  absl::StatusOr<TenantPolicies> p =
      ParseTenantPolicies(R"pb(tenants {
                                 name: "t"
                                 quotas { model: "T4" nominal_milli: 1500 }
                               })pb",
                          "tenants.textproto", *this->s().accelerator_types());
  ASSERT_OK(p);
  ASSERT_OK(this->s().SetTenantPolicies(
      std::make_shared<const TenantPolicies>(*std::move(p))));
  auto of_t = [](AllocationRequest r) {
    r.tenant = "t";
    return r;
  };
  ASSERT_OK(this->s().Allocate(of_t(WantShare("a", "T4", 1000))));
  ASSERT_OK(this->s().Allocate(of_t(WantShare("b", "T4", 400))));
  // 1.4 of 1.5 used: a share of 0.2 more is over it, though a GPU has room.
  EXPECT_THAT(
      this->s().Allocate(of_t(WantShare("c", "T4", 200))).status(),
      StatusIs(absl::StatusCode::kResourceExhausted,
               HasSubstr("quota: tenant t at 1.4/1.5 nvidia-tesla-t4 devices, "
                         "asks 0.2 more")));
  absl::StatusOr<Allocation> queued =
      this->s().Allocate(Queued(of_t(WantShare("c", "T4", 200))));
  ASSERT_OK(queued);
  EXPECT_EQ(queued->state, AllocationState::kPending);
  EXPECT_THAT(queued->pending_reason, HasSubstr("at 1.4/1.5"));
  // Another tenant, without a quota, is not held back by t's.
  ASSERT_OK(this->s().Allocate(WantShare("other", "T4", 200)));

  std::vector<TenantStanding> t = this->s().TenantStandings("t");
  ASSERT_EQ(t.size(), 1u);
  ASSERT_EQ(t[0].pools.size(), 1u);
  EXPECT_EQ(t[0].pools[0].used_milli, 1400);
  EXPECT_EQ(t[0].pools[0].nominal_milli, 1500);
  EXPECT_EQ(t[0].pools[0].borrowed_milli, 0);
  EXPECT_DOUBLE_EQ(t[0].dominant_share, 0.7);  // 1.4 of 2 T4s

  // a's whole GPU of compute comes back: c is admitted, and t holds 0.6.
  ASSERT_OK(this->s().Release({"", "a"}));
  absl::StatusOr<Allocation> c = this->s().GetAllocation({"", "c"});
  ASSERT_OK(c);
  EXPECT_EQ(c->state, AllocationState::kActive) << c->pending_reason;
  // A whole T4 more would make 1.6: over, in the same units.
  EXPECT_THAT(this->s().Allocate(of_t(Want("w", "T4", 1))).status(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("quota: tenant t at 0.6/1.5 nvidia-tesla-t4 "
                                 "devices, asks 1 more")));
  EXPECT_EQ(this->s().TenantStandings("t")[0].pools[0].used_milli, 600);
}

// A tenant within its nominal quota takes back what a cohort member borrows
// through shares, as their fraction of a GPU: the borrower's most recent
// shares go until enough comes back, and no more; a share reclaims so too.
TYPED_TEST(SchedulerGpuSharingTest, AReclaimTakesBackSharesAsTheirFraction) {
  ASSERT_OK(this->s().RegisterNode(MakeNode(
      "n1", {SharedGpu("GPU-0", "T4", 0, GpuSharing::kMps, 16 * kGiB),
             SharedGpu("GPU-1", "T4", 1, GpuSharing::kMps, 16 * kGiB)})));
  ASSERT_OK(this->s().RegisterNode(MakeNode(
      "n2", {SharedGpu("GPU-2", "T4", 0, GpuSharing::kMps, 16 * kGiB)})));
  absl::StatusOr<TenantPolicies> p = ParseTenantPolicies(
      R"pb(tenants {
             name: "team-a"
             cohort: "ab"
             quotas { model: "T4" nominal: 1 }
           }
           tenants {
             name: "team-b"
             cohort: "ab"
             quotas { model: "T4" nominal: 1 }
           })pb",
      "tenants.textproto", *this->s().accelerator_types());
  ASSERT_OK(p);
  ASSERT_OK(this->s().SetTenantPolicies(
      std::make_shared<const TenantPolicies>(*std::move(p))));
  auto of = [](const char* tenant, AllocationRequest r) {
    r.tenant = tenant;
    return r;
  };
  // team-a: 0.8 + 0.8 + 0.4 = the cohort's 2 GPUs, 1 of them borrowed.
  for (auto [id, milli] : {std::pair{"a1", 800}, {"a2", 800}, {"a3", 400}}) {
    this->clock_.Advance(absl::Seconds(1));
    ASSERT_OK(this->s().Allocate(of("team-a", WantShare(id, "T4", milli))));
  }
  // team-b's 0.5 fits GPU-2 but not the cohort: 0.5 comes back from a3
  // (0.4, the newest) and a2, and a1 stays.
  absl::StatusOr<Allocation> b =
      this->s().Allocate(Queued(of("team-b", WantShare("b", "T4", 500))));
  ASSERT_OK(b);
  EXPECT_EQ(b->state, AllocationState::kPending);
  EXPECT_THAT(this->s().GetAllocation({"", "b"})->pending_reason,
              HasSubstr("preempted 2 borrowing allocations"));
  for (const char* id : {"a2", "a3"}) {
    absl::StatusOr<Allocation> a = this->s().GetAllocation({"", id});
    ASSERT_OK(a);
    EXPECT_EQ(a->state, AllocationState::kPreempted) << id;
    EXPECT_EQ(a->preempted_by, b->id) << id;
  }
  EXPECT_EQ(this->s().GetAllocation({"", "a1"})->state,
            AllocationState::kActive);
  // Through the grace b holds n2, where it fits (GPU-2: a3's 400 and 600
  // free), against requests of its priority; not n1, where a2 frees quota
  // but b's room is not; in the pass that preempted and in the passes after.
  for (int pass = 0; pass < 2; ++pass) {
    if (pass > 0) ASSERT_OK(this->s().Sweep());
    EXPECT_THAT(this->s().Allocate(WantShare("on-n2", "T4", 300)).status(),
                StatusIs(absl::StatusCode::kResourceExhausted, testing::_))
        << pass;
  }
  absl::StatusOr<Allocation> on_n1 =
      this->s().Allocate(WantShare("on-n1", "T4", 100));
  ASSERT_OK(on_n1);
  EXPECT_EQ(on_n1->node, "n1");
  this->clock_.Advance(absl::Seconds(31));
  ASSERT_OK(this->s().Heartbeat("n1", {}));
  ASSERT_OK(this->s().Heartbeat("n2", {}));
  ASSERT_OK(this->s().Sweep());
  absl::StatusOr<Allocation> got = this->s().GetAllocation({"", "b"});
  ASSERT_OK(got);
  EXPECT_EQ(got->state, AllocationState::kActive) << got->pending_reason;
  std::vector<TenantStanding> a = this->s().TenantStandings("team-a");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].pools[0].used_milli, 800);
}

}  // namespace
}  // namespace accelsched
