// The request_mix plugin: a new request counted in the recent mix before it
// is placed (CountInMix), into the snapshot's count_into; it never refuses.
#include "core/plugins/request_mix/request_mix.h"

#include <memory>
#include <vector>

#include "core/catalog/capacity_index.h"
#include "core/framework/cycle_state.h"
#include "core/framework/framework.h"
#include "core/framework/holds.h"
#include "core/framework/session.h"
#include "core/framework/snapshot.h"
#include "core/framework/statement.h"
#include "core/matching/match_spec.h"
#include "core/plugins/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accelsched {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1000);
const PoolKey kT4{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", ""};
const PoolKey kL4{DeviceClass::kNvidiaGpu, "nvidia-l4", ""};

TEST(RequestMixTest, CountInMixWeighsModelsAndReplicas) {
  RequestMix mix;
  const absl::Time now = kNow;
  MatchSpec two_models;
  two_models.requested_models = {"nvidia-l4", "nvidia-tesla-t4"};
  two_models.count = 2;
  CountInMix(two_models, now, mix);  // 1/2 each
  MatchSpec gang = MatchSpec::ForPool(kT4, 4);
  gang.replicas = 3;
  CountInMix(gang, now, mix);  // 3 groups of 4
  MatchSpec share = MatchSpec::ForPool(kT4, 1);
  share.share = GpuShare{300, 0};
  CountInMix(share, now, mix);  // not counted
  std::vector<RequestShape> shapes = mix.ShapesFor(kT4, now);
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_EQ(shapes[0].count, 4);
  EXPECT_DOUBLE_EQ(shapes[0].weight, 3 / 3.5);
  EXPECT_EQ(shapes[1].count, 2);
  EXPECT_DOUBLE_EQ(shapes[1].weight, 0.5 / 3.5);
}

// A shape carries the pod's CPU and memory (rounded up to the mix's steps);
// a request for any model counts for every model of its class.
TEST(RequestMixTest, CountInMixKeepsThePodAndAnyModel) {
  RequestMix mix;
  MatchSpec pod = MatchSpec::ForPool(kT4, 1);
  pod.pod_resources = NodeResources{3500, RequestMix::kMemoryStep, 1};
  CountInMix(pod, kNow, mix);
  MatchSpec any;  // any NVIDIA GPU
  any.count = 2;
  CountInMix(any, kNow, mix);
  std::vector<RequestShape> t4 = mix.ShapesFor(kT4, kNow);
  ASSERT_EQ(t4.size(), 2u);
  // Equal weights: found by their counts, whatever their order.
  const RequestShape& one = t4[0].count == 1 ? t4[0] : t4[1];
  const RequestShape& two = t4[0].count == 1 ? t4[1] : t4[0];
  EXPECT_EQ(one.cpu_milli, 4000);
  EXPECT_EQ(one.memory_bytes, RequestMix::kMemoryStep);
  EXPECT_DOUBLE_EQ(one.weight, 0.5);
  EXPECT_EQ(two.count, 2);
  EXPECT_EQ(two.cpu_milli, 0);
  EXPECT_DOUBLE_EQ(two.weight, 0.5);
  // The L4s see the request for any model only.
  std::vector<RequestShape> l4 = mix.ShapesFor(kL4, kNow);
  ASSERT_EQ(l4.size(), 1u);
  EXPECT_EQ(l4[0].count, 2);
  EXPECT_DOUBLE_EQ(l4[0].weight, 1);
}

// The PreFilter counts the cycle's spec into the snapshot's count_into, and
// lets every request through; with no count_into (a pass) it counts
// nothing. It is asked of new requests only.
TEST(RequestMixTest, PreFilterCountsIntoTheSnapshotsMix) {
  CapacityIndex index;
  NodeMap nodes;
  absl::StatusOr<std::unique_ptr<Framework>> fw = Framework::Create(
      PluginRegistry(), DefaultProfile(ProfileOptions{}));
  ASSERT_TRUE(fw.ok()) << fw.status();
  Snapshot snapshot;
  snapshot.index = &index;
  snapshot.nodes = &nodes;
  snapshot.now = kNow;
  Holds holds(nullptr, nullptr, Holds::Standing::kReadOnly);
  DryStatement statement;
  Session session(**fw, snapshot, holds, statement);
  Allocation request;
  const MatchSpec spec = MatchSpec::ForPool(kT4, 3);
  RequestMixPlugin plugin;
  EXPECT_TRUE(plugin.ForNewRequests());

  {
    CycleState cycle(CycleMode::kAllocate, snapshot, spec, request, nullptr);
    const Verdict v = plugin.PreFilter(session, cycle);
    EXPECT_TRUE(v.ok());
    EXPECT_EQ(v.detail, "");
  }
  RequestMix mix;
  snapshot.count_into = &mix;
  {
    CycleState cycle(CycleMode::kAllocate, snapshot, spec, request, nullptr);
    EXPECT_TRUE(plugin.PreFilter(session, cycle).ok());
  }
  std::vector<RequestShape> shapes = mix.ShapesFor(kT4, kNow);
  ASSERT_EQ(shapes.size(), 1u);
  EXPECT_EQ(shapes[0].count, 3);
  EXPECT_DOUBLE_EQ(shapes[0].weight, 1);
  // A share is let through and not counted.
  MatchSpec share = MatchSpec::ForPool(kL4, 1);
  share.share = GpuShare{300, 0};
  {
    CycleState cycle(CycleMode::kAllocate, snapshot, share, request, nullptr);
    EXPECT_TRUE(plugin.PreFilter(session, cycle).ok());
  }
  EXPECT_TRUE(mix.ShapesFor(kL4, kNow).empty());
}

}  // namespace
}  // namespace accelsched
