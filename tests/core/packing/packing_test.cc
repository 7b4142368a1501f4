// The packing layer: the request mix, the fragmentation measure, the lease
// term and the policy names.
#include "core/packing/packing_policy.h"
#include "core/packing/placement_score.h"
#include "core/packing/request_mix.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::HasSubstr;

const PoolKey kH100{DeviceClass::kNvidiaGpu, "nvidia-h100", ""};
const PoolKey kAnyGpu{DeviceClass::kNvidiaGpu, "", ""};
const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

TEST(PackingPolicyTest, NamesRoundTripAndUnknownNamesTheFlag) {
  for (Packing p : {Packing::kFragmentation, Packing::kBestFit,
                    Packing::kFirstFit, Packing::kSpread}) {
    ASSERT_OK_AND_ASSIGN(Packing parsed, ParsePacking(PackingName(p)));
    EXPECT_EQ(parsed, p);
  }
  EXPECT_THAT(ParsePacking("bestfit"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--packing: unknown policy \"bestfit\"")));
}

TEST(RequestMixTest, WeightsSumToOneAndAnyModelCountsForEveryModel) {
  RequestMix mix;
  mix.Add(kT0, kH100, 8, 0, 0);
  mix.Add(kT0, kH100, 1, 0, 0);
  mix.Add(kT0, kH100, 1, 0, 0);
  mix.Add(kT0, kAnyGpu, 2, 0, 0);
  std::vector<RequestShape> shapes = mix.ShapesFor(kH100, kT0);
  ASSERT_EQ(shapes.size(), 3u);
  EXPECT_EQ(shapes[0].count, 1);  // heaviest first
  EXPECT_DOUBLE_EQ(shapes[0].weight, 0.5);
  EXPECT_DOUBLE_EQ(shapes[1].weight + shapes[2].weight, 0.5);
  // Another model sees only the requests for any model.
  shapes = mix.ShapesFor({DeviceClass::kNvidiaGpu, "nvidia-l4", ""}, kT0);
  ASSERT_EQ(shapes.size(), 1u);
  EXPECT_EQ(shapes[0].count, 2);
  EXPECT_DOUBLE_EQ(shapes[0].weight, 1);
  EXPECT_TRUE(
      mix.ShapesFor({DeviceClass::kNvidiaGpu, "nvidia-l4", "1g.10gb"}, kT0)
          .empty());
}

TEST(RequestMixTest, OldRequestsWeighHalfAfterAHalfLifeAndCpuIsRoundedUp) {
  RequestMix mix(absl::Hours(1));
  mix.Add(kT0, kH100, 8, 0, 0);
  mix.Add(kT0 + absl::Hours(1), kH100, 1, 3500, 1);
  std::vector<RequestShape> shapes = mix.ShapesFor(kH100, kT0 + absl::Hours(1));
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_EQ(shapes[0].count, 1);
  EXPECT_NEAR(shapes[0].weight, 2.0 / 3, 1e-9);  // 1 against 0.5
  EXPECT_EQ(shapes[0].cpu_milli, 4000);
  EXPECT_EQ(shapes[0].memory_bytes, RequestMix::kMemoryStep);
  EXPECT_NEAR(shapes[1].weight, 1.0 / 3, 1e-9);
}

TEST(RequestMixTest, KeepsTheHeaviestShapes) {
  RequestMix mix;
  for (int i = 0; i < 3; ++i) mix.Add(kT0, kH100, 1, 0, 0);
  for (int count = 2; count < 2 + 2 * int{RequestMix::kMaxShapes}; ++count) {
    mix.Add(kT0, kH100, count, 0, 0);
  }
  std::vector<RequestShape> shapes = mix.ShapesFor(kH100, kT0);
  EXPECT_EQ(shapes.size(), RequestMix::kMaxShapes);
  EXPECT_EQ(shapes[0].count, 1);
}

// FGD's measure: the free units a drawn request could not use.
TEST(FragmentationTest, CountsTheFreeUnitsOfShapesThatDoNotFit) {
  const std::vector<RequestShape> mix = {
      {1, 0, 0, 0.25}, {2, 0, 0, 0.25}, {4, 0, 0, 0.25}, {8, 0, 0, 0.25}};
  EXPECT_DOUBLE_EQ(Fragmentation({8}, mix), 0);
  EXPECT_DOUBLE_EQ(Fragmentation({7}, mix), 7 * 0.25);
  EXPECT_DOUBLE_EQ(Fragmentation({3}, mix), 3 * 0.5);
  EXPECT_DOUBLE_EQ(Fragmentation({1}, mix), 1 * 0.75);
  EXPECT_DOUBLE_EQ(Fragmentation({0}, mix), 0);
  // A node whose CPU is gone strands every free unit for the shapes that
  // need more (FGD counts CPU as well).
  const std::vector<RequestShape> pods = {{1, 4000, 0, 0.5}, {1, 0, 0, 0.5}};
  EXPECT_DOUBLE_EQ(Fragmentation({4, 2000, kUnlimited}, pods), 4 * 0.5);
  EXPECT_DOUBLE_EQ(Fragmentation({4, kUnlimited, kUnlimited}, pods), 0);
  EXPECT_DOUBLE_EQ(Fragmentation({4}, {}), 0);
}

TEST(FragmentationTest, ScoreTakesFragmentsBeforeBreakingWholeNodes) {
  const std::vector<RequestShape> mix = {{1, 0, 0, 0.5}, {8, 0, 0, 0.5}};
  // A single GPU on an empty node strands 7 for the 8-GPU requests; on a
  // node with 3 free it uses a fragment.
  const PlacementScore whole =
      ScorePlacement({8}, 8, mix, 1, 0, 0, nullptr, kT0, kT0);
  const PlacementScore fragment =
      ScorePlacement({3}, 8, mix, 1, 0, 0, nullptr, kT0, kT0);
  EXPECT_DOUBLE_EQ(whole.total, 3.5);
  EXPECT_DOUBLE_EQ(fragment.total, -0.5);
  EXPECT_EQ(DescribeScore(fragment),
            "strands 1.00 of 2 free units (was 1.50 of 3); lease mismatch "
            "0.00");
}

// ChangeOfTaking's lower bound holds on every node of the free count,
// whatever its CPU and memory, over-committed ones included: the matcher
// prunes by it.
TEST(FragmentationTest, TheLowerBoundHoldsForAnyCpuAndMemory) {
  const std::vector<RequestShape> mix = {{1, 0, 0, 0.3},
                                         {2, 2000, 0, 0.3},
                                         {4, 0, int64_t{8} << 30, 0.2},
                                         {8, 16000, int64_t{1} << 30, 0.2}};
  for (int free = 1; free <= 8; ++free) {
    for (int count = 1; count <= free; ++count) {
      const FragmentationChange change = ChangeOfTaking(free, count, mix);
      EXPECT_LE(change.lower_bound, change.units_only);
      for (int64_t cpu : {int64_t{-1000}, int64_t{0}, int64_t{1500},
                          int64_t{3000}, int64_t{20000}, kUnlimited}) {
        for (int64_t memory : {int64_t{-1}, int64_t{0}, int64_t{4} << 30,
                               int64_t{16} << 30, kUnlimited}) {
          for (int64_t ask : {int64_t{0}, int64_t{1000}}) {
            const PlacementScore s = ScorePlacement(
                {free, cpu, memory}, 8, mix, count, ask, 0, nullptr, kT0, kT0);
            EXPECT_GE(s.total, change.lower_bound - 1e-9)
                << free << " " << count << " " << cpu << " " << memory;
          }
        }
      }
    }
  }
  // Over-committed, the node still takes the pods that ask nothing.
  EXPECT_DOUBLE_EQ(Fragmentation({2, -1000, -1}, {{1, 0, 0, 1}}), 0);
}

TEST(LeaseMismatchTest, NodesWhoseLeasesEndTogetherMatch) {
  const absl::Time end = kT0 + absl::Hours(10);
  // Held units ending with the request: nothing waits.
  EXPECT_DOUBLE_EQ(LeaseMismatch({4, end}, 8, 2, kT0, end), 0);
  // The request outlasts the node's others by 5 h of 10: the 6 other units
  // stay in a node partly taken for half the horizon.
  EXPECT_DOUBLE_EQ(LeaseMismatch({4, kT0 + absl::Hours(5)}, 8, 2, kT0, end),
                   6 * 0.5);
  // The node's others outlast the request by 10 h of 20: its 2 units wait.
  EXPECT_DOUBLE_EQ(LeaseMismatch({4, kT0 + absl::Hours(20)}, 8, 2, kT0, end),
                   2 * 0.5);
  // An empty node is one that comes free now.
  EXPECT_DOUBLE_EQ(LeaseMismatch({0, absl::InfinitePast()}, 8, 2, kT0, end), 6);
  // No lease known: no term.
  EXPECT_DOUBLE_EQ(LeaseMismatch({4, end}, 8, 2, kT0, absl::InfiniteFuture()),
                   0);
  const NodeLeases leases{4, kT0 + absl::Hours(5)};
  const PlacementScore s =
      ScorePlacement({4}, 8, {}, 2, 0, 0, &leases, kT0, end);
  EXPECT_DOUBLE_EQ(s.total, kLeaseWeight * 3);
}

}  // namespace
}  // namespace accelsched
