#include "services/kubernetes_placement.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accelsched {
namespace {

Allocation MigAllocation() {
  Allocation a;
  a.id = "a-1";
  a.node = "n1";
  a.device_class = DeviceClass::kNvidiaGpu;
  a.requested_models = {"nvidia-tesla-a100"};
  a.model = "nvidia-tesla-a100";
  a.partition = "1g.5gb";
  a.targets = {{"n1", "host-1", "nvidia-tesla-a100", ""}};
  a.devices = {{"n1", "GPU-a", "MIG-a", "1g.5gb"}};
  return a;
}

// Exactly propeller's affinity, tolerations and resources (pod_helper.go
// 371-450, container_helper.go 73-86) plus the pin, on the named container.
TEST(KubernetesPlacementTest, PodSpecPatchIsPropellersPlusThePin) {
  const Placement p = BuildPlacement(MigAllocation(), PlacementOptions());
  EXPECT_EQ(
      PodSpecPatch(p, "main"),
      R"({"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":)"
      R"({"nodeSelectorTerms":[{"matchExpressions":[)"
      R"({"key":"k8s.amazonaws.com/accelerator","operator":"In","values":["nvidia-tesla-a100"]},)"
      R"({"key":"k8s.amazonaws.com/gpu-partition-size","operator":"In","values":["1g.5gb"]},)"
      R"({"key":"kubernetes.io/hostname","operator":"In","values":["host-1"]}]}]}}},)"
      R"("tolerations":[)"
      R"({"key":"k8s.amazonaws.com/accelerator","operator":"Equal","value":"nvidia-tesla-a100","effect":"NoSchedule"},)"
      R"({"key":"k8s.amazonaws.com/gpu-partition-size","operator":"Equal","value":"1g.5gb","effect":"NoSchedule"}],)"
      R"("containers":[{"name":"main","resources":{"limits":{"nvidia.com/gpu":"1"},)"
      R"("requests":{"nvidia.com/gpu":"1"}}}]})");
}

TEST(KubernetesPlacementTest,
     UnnamedContainerAndDoesNotExistHaveNoEmptyFields) {
  Allocation a = MigAllocation();
  a.partition = "";
  a.unpartitioned = true;
  a.devices = {{"n1", "GPU-a", "", ""}};
  const std::string patch =
      PodSpecPatch(BuildPlacement(a, {.nvidia_visible_devices = true}), "");
  EXPECT_THAT(
      patch,
      testing::HasSubstr(
          R"({"key":"k8s.amazonaws.com/gpu-partition-size","operator":"DoesNotExist"})"));
  EXPECT_THAT(
      patch,
      testing::HasSubstr(
          R"("containers":[{"resources":{"limits":{"nvidia.com/gpu":"1"},)"
          R"("requests":{"nvidia.com/gpu":"1"}},)"
          R"("env":[{"name":"NVIDIA_VISIBLE_DEVICES","value":"GPU-a"}]}])"));
}

TEST(KubernetesPlacementTest, ClaimSelectsEachDeviceByItsUuid) {
  Allocation a = MigAllocation();
  a.devices = {{"n1", "GPU-a", "MIG-a", "1g.5gb"}, {"n1", "GPU-b", "", ""}};
  EXPECT_EQ(
      ResourceClaim(a, BuildPlacement(a, PlacementOptions())),
      R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",)"
      R"("metadata":{"name":"accelsched-a-1"},"spec":{"devices":{"requests":[)"
      R"({"name":"mig-0","exactly":{"deviceClassName":"mig.nvidia.com","selectors":[)"
      R"({"cel":{"expression":"\"uuid\" in device.attributes[\"gpu.nvidia.com\"] && )"
      R"(device.attributes[\"gpu.nvidia.com\"].uuid == \"MIG-a\""}}],)"
      R"("allocationMode":"ExactCount","count":1}},)"
      R"({"name":"gpu-1","exactly":{"deviceClassName":"gpu.nvidia.com","selectors":[)"
      R"({"cel":{"expression":"device.attributes[\"gpu.nvidia.com\"].uuid == \"GPU-b\""}}],)"
      R"("allocationMode":"ExactCount","count":1}}]}}})");
}

TEST(KubernetesPlacementTest, ClaimQuotesWhatCelWouldReadAsSyntax) {
  Allocation a = MigAllocation();
  a.devices = {{"n1", R"(GPU-"x\)", "", ""}};
  EXPECT_THAT(ResourceClaim(a, BuildPlacement(a, PlacementOptions())),
              testing::HasSubstr(R"(uuid == \"GPU-\\\"x\\\\\")"));
}

TEST(KubernetesPlacementTest, PreviewClaimHasAGeneratedName) {
  Allocation a = MigAllocation();
  a.id.clear();
  EXPECT_THAT(
      ResourceClaim(a, BuildPlacement(a, PlacementOptions())),
      testing::HasSubstr(R"("metadata":{"generateName":"accelsched-"})"));
}

TEST(KubernetesPlacementTest, NoClaimWithoutADraDriverOrPastTheLimit) {
  Allocation tpu = MigAllocation();
  tpu.device_class = DeviceClass::kGoogleTpu;
  tpu.partition = "2x2";
  tpu.devices = {{"n1", "chip-0", "", ""}};
  EXPECT_EQ(ResourceClaim(tpu, BuildPlacement(tpu, PlacementOptions())), "");

  Allocation many = MigAllocation();
  many.devices.clear();
  for (size_t i = 0; i <= kMaxClaimDevices; ++i) {
    many.devices.push_back({"n1", absl::StrCat("GPU-", i), "", ""});
  }
  EXPECT_EQ(ResourceClaim(many, BuildPlacement(many, PlacementOptions())), "");
  many.devices.pop_back();
  EXPECT_THAT(ResourceClaim(many, BuildPlacement(many, PlacementOptions())),
              testing::HasSubstr(R"("name":"gpu-31")"));
}

}  // namespace
}  // namespace accelsched
