#include "core/model/gpu_share.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/model/node_resources.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::HasSubstr;

TEST(GpuShareTest, MemoryIsGivenOrTheComputeFractionRoundedDown) {
  EXPECT_EQ(ShareMemory(GpuShare{500, 7}, 1000), 7);
  EXPECT_EQ(ShareMemory(GpuShare{500, 0}, 1000), 500);
  EXPECT_EQ(ShareMemory(GpuShare{333, 0}, 1001), 333);  // 333.333
  EXPECT_EQ(ShareMemory(GpuShare{999, 0}, 1001), 999);  // 999.999
  EXPECT_EQ(ShareMemory(GpuShare{1000, 0}, 1001), 1001);
  // 80 GiB times 1000 does not overflow.
  const uint64_t h100 = uint64_t{80} << 30;
  EXPECT_EQ(ShareMemory(GpuShare{250, 0}, h100), int64_t{20} << 30);
  const uint64_t huge = uint64_t{1} << 62;
  EXPECT_EQ(ShareMemory(GpuShare{1000, 0}, huge), int64_t{1} << 62);
}

TEST(GpuShareTest, MilliUnitsAreWrittenWithTheDecimalsTheyNeed) {
  EXPECT_EQ(MilliUnitsText(0), "0");
  EXPECT_EQ(MilliUnitsText(8000), "8");
  EXPECT_EQ(MilliUnitsText(2500), "2.5");
  EXPECT_EQ(MilliUnitsText(300), "0.3");
  EXPECT_EQ(MilliUnitsText(1), "0.001");
  EXPECT_EQ(MilliUnitsText(1010), "1.01");
  EXPECT_EQ(MilliUnitsText(-1250), "-1.25");
  EXPECT_EQ(MilliUnitsText(std::numeric_limits<int64_t>::min()),
            "-9223372036854775.808");
}

TEST(GpuShareTest, LimitsNameTheField) {
  EXPECT_OK(CheckGpuShare(GpuShare{1, 0}, "share"));
  EXPECT_OK(CheckGpuShare(GpuShare{kGpuMilli, kMaxMemoryBytes}, "share"));
  EXPECT_THAT(CheckGpuShare(GpuShare{0, 0}, "share"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("share.compute_milli")));
  EXPECT_THAT(CheckGpuShare(GpuShare{1001, 0}, "share"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("share.compute_milli")));
  EXPECT_THAT(CheckGpuShare(GpuShare{1, -1}, "share"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("share.memory_bytes")));
  EXPECT_THAT(CheckGpuShare(GpuShare{1, kMaxMemoryBytes + 1}, "share"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("share.memory_bytes")));
  // A group is empty or a label value: every namespace name is one.
  EXPECT_OK(CheckGpuShare(GpuShare{1, 0, "flytesnacks-development"}, "share"));
  EXPECT_OK(CheckGpuShare(GpuShare{1, 0, std::string(63, 'a')}, "share"));
  for (const std::string& bad :
       std::vector<std::string>{"-ns", "ns b", std::string(64, 'a'), "a/b"}) {
    EXPECT_THAT(
        CheckGpuShare(GpuShare{1, 0, bad}, "share"),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 HasSubstr("share.group \"" + bad + "\" is not a label")))
        << bad;
  }
}

}  // namespace
}  // namespace accelsched
