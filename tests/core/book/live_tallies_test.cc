// The book's parts on their own: the live tallies and the unit holdings.
#include "core/book/live_tallies.h"

#include <string>
#include <vector>

#include "core/book/unit_holdings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const PoolKey kT4{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", ""};

Allocation Live(std::string id, std::string tenant, int priority) {
  Allocation a;
  a.id = std::move(id);
  a.tenant = std::move(tenant);
  a.state = AllocationState::kActive;
  a.device_class = kT4.device_class;
  a.model = kT4.model;
  a.priority = priority;
  return a;
}

Allocation Share(std::string id, std::string gpu, int64_t compute_milli) {
  Allocation a = Live(std::move(id), "t", 0);
  a.share = GpuShare{compute_milli, 0, ""};
  AllocatedDevice d{"n1", std::move(gpu), "", ""};
  d.share = GpuShare{compute_milli, 1 << 20, ""};
  a.devices = {d};
  return a;
}

TEST(LiveTalliesTest, APreemptionMovesUsageAndPriorityUntilItEnds) {
  LiveTallies tallies;
  Allocation low = Live("a-1", "x", 1);
  Allocation high = Live("a-2", "y", 5);
  tallies.Hold(low, 2);
  tallies.Hold(high, 1);
  EXPECT_EQ(tallies.UsageMilli("x", kT4), 2000);
  EXPECT_EQ(tallies.LowestActivePriority(kT4), 1);

  low.state = AllocationState::kPreempted;
  low.preempted_by = "p-1";
  tallies.Preempt(low, 2);
  // Still held in its grace, but no longer ACTIVE: preemption skips it.
  EXPECT_EQ(tallies.UsageMilli("x", kT4), 2000);
  EXPECT_EQ(tallies.PreemptedUsageMilli("x", kT4), 2000);
  EXPECT_THAT(tallies.VictimsOf("p-1"), ElementsAre("a-1"));
  EXPECT_EQ(tallies.LowestActivePriority(kT4), 5);

  tallies.Free(low, 2);
  tallies.Free(high, 1);
  EXPECT_THAT(tallies.usage_milli(), IsEmpty());
  EXPECT_EQ(tallies.PreemptedUsageMilli("x", kT4), 0);
  EXPECT_THAT(tallies.VictimsOf("p-1"), IsEmpty());
  EXPECT_EQ(tallies.LowestActivePriority(kT4), std::nullopt);
}

TEST(LiveTalliesTest, AShareCountsItsFraction) {
  LiveTallies tallies;
  tallies.Hold(Share("s-1", "g0", 250), 0);
  EXPECT_EQ(tallies.UsageMilli("t", kT4), 250);
}

TEST(UnitHoldingsTest, SharesOnOneGpuAddUpAndLeaveNothingBehind) {
  CapacityIndex index;
  UnitHoldings holdings(&index);
  const Allocation a = Share("s-1", "g0", 250);
  const Allocation b = Share("s-2", "g0", 500);
  holdings.Hold(a, {}, /*mark_index=*/false);
  holdings.Hold(b, {}, /*mark_index=*/false);
  EXPECT_EQ(holdings.SharedOf("g0").compute_milli, 750);
  EXPECT_EQ(holdings.SharedOf("g0").memory_bytes, 2 << 20);
  EXPECT_THAT(holdings.ShareHoldersOf("g0"), ElementsAre("s-1", "s-2"));
  EXPECT_EQ(holdings.ShareHolderCount("g0"), 2);
  EXPECT_EQ(holdings.HolderOf("g0"), "");  // a share holds no unit
  holdings.Free(a, {});
  holdings.Free(b, {});
  EXPECT_EQ(holdings.SharedOf("g0"), GpuShare{});
  EXPECT_EQ(holdings.ShareHolderCount("g0"), 0);
}

TEST(UnitHoldingsTest, WholeUnitsHaveOneHolderUntilFreed) {
  CapacityIndex index;
  UnitHoldings holdings(&index);
  const Allocation a = Live("a-1", "x", 0);
  holdings.Hold(a, {"g0", "g1"}, /*mark_index=*/false);
  EXPECT_EQ(holdings.HolderOf("g1"), "a-1");
  holdings.Clear();
  EXPECT_EQ(holdings.HolderOf("g1"), "");
}

}  // namespace
}  // namespace accelsched
