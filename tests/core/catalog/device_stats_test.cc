#include "core/catalog/device_stats.h"

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Key;

TEST(ValidateDeviceStatsTest, ReadingsMustBeFiniteAndInRange) {
  EXPECT_OK(ValidateDeviceStats(DeviceStats{1, 0, -5, 0, {}}, "s"));
  struct Case {
    DeviceStats stats;
    const char* message;
  } cases[] = {
      {{1.5, 0, 0, 0, {}}, "s.utilization is 1.5; must be in [0, 1]"},
      {{-0.1, 0, 0, 0, {}}, "s.utilization is -0.1"},
      {{std::nan(""), 0, 0, 0, {}}, "s.utilization is nan"},
      {{0, -1, 0, 0, {}}, "s.memory_used_bytes is -1; must not be negative"},
      {{0, 0, -300, 0, {}}, "s.temperature_celsius is -300"},
      {{0, 0, std::numeric_limits<double>::infinity(), 0, {}},
       "s.temperature_celsius is inf"},
      {{0, 0, 0, -1, {}}, "s.power_watts is -1"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(
        ValidateDeviceStats(c.stats, "s"),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)));
  }
}

TEST(DeviceStatsTableTest, AReportReplacesTheNodesLastOne) {
  DeviceStatsTable table(absl::ZeroDuration());
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  table.Put("n1", {{"a", DeviceStats{0.5}}, {"b", DeviceStats{0.1}}}, t0);
  table.Put("n1", {{"b", DeviceStats{0.2}}}, t0);
  DeviceStatsMap got = table.Get("n1");
  EXPECT_THAT(got, ElementsAre(Key("b")));
  EXPECT_EQ(got.at("b").utilization, 0.2);
  EXPECT_THAT(table.Get("n2"), IsEmpty());
  table.Erase("n1");
  EXPECT_THAT(table.Get("n1"), IsEmpty());
}

TEST(DeviceStatsTableTest, FreshLeavesOutStaleReportsSortedByNode) {
  DeviceStatsTable table(absl::Seconds(30));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  table.Put("z", {{"a", DeviceStats{}}}, t0);
  table.Put("old", {{"a", DeviceStats{}}}, t0 - absl::Seconds(31));
  table.Put("b", {{"a", DeviceStats{}}}, t0 - absl::Seconds(30));
  auto fresh = table.Fresh(t0);
  ASSERT_EQ(fresh.size(), 2u);
  EXPECT_EQ(fresh[0].first, "b");
  EXPECT_EQ(fresh[1].first, "z");
  // Get still returns a stale report (GetNode shows its time).
  EXPECT_THAT(table.Get("old"), ElementsAre(Key("a")));
  // Zero keeps every report.
  DeviceStatsTable forever(absl::ZeroDuration());
  forever.Put("n", {}, absl::UnixEpoch());
  EXPECT_EQ(forever.Fresh(t0).size(), 1u);
}

// Heartbeats, GetNode and scrapes at once (ThreadSanitizer runs this).
TEST(DeviceStatsTableTest, ConcurrentReportsAndReads) {
  DeviceStatsTable table(absl::Minutes(1));
  const absl::Time now = absl::FromUnixSeconds(1000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const std::string node = absl::StrCat("n", t);
      for (int i = 0; i < 2000; ++i) {
        table.Put(node, {{"gpu", DeviceStats{i / 2000.0}}}, now);
        EXPECT_EQ(table.Get(node).size(), 1u);
        EXPECT_LE(table.Fresh(now).size(), 4u);
        if (i % 100 == 0) table.Erase(node);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(table.Fresh(now).size(), 4u);
}

}  // namespace
}  // namespace accelsched
