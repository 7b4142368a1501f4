#include "core/matching/match_spec.h"

#include "gtest/gtest.h"

namespace accelsched {
namespace {

const PoolKey kT4{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", ""};

TEST(MatchSpecTest, UnitNames) {
  EXPECT_EQ(UnitName(kT4), "nvidia-tesla-t4 device");
  EXPECT_EQ(UnitName({DeviceClass::kNvidiaGpu, "nvidia-h100", "1g.10gb"}),
            "1g.10gb slice");
  EXPECT_EQ(UnitName({DeviceClass::kGoogleTpu, "tpu-v6e-slice", "2x4"}),
            "tpu-v6e-slice 2x4 slice");
  EXPECT_EQ(RequestUnitName(DeviceClass::kNvidiaGpu, {}, ""),
            "whole NVIDIA_GPU device");
  EXPECT_EQ(RequestUnitName(DeviceClass::kNvidiaGpu, {"nvidia-tesla-t4"}, ""),
            "nvidia-tesla-t4 device");
  EXPECT_EQ(RequestUnitName(DeviceClass::kNvidiaGpu,
                            {"nvidia-a100-80gb", "nvidia-h100", "nvidia-h200"},
                            "1g.20gb"),
            "nvidia-a100-80gb, nvidia-h100 or nvidia-h200 1g.20gb slice");
}

}  // namespace
}  // namespace accelsched
