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

Allocation ShareAllocation(std::string id, GpuSharing sharing) {
  Allocation a = MigAllocation();
  a.id = std::move(id);
  a.partition.clear();
  a.unpartitioned = true;
  a.share = GpuShare{250, 0};
  a.devices = {
      {"n1", "GPU-0a1B", "", "", GpuShare{250, int64_t{4} << 30}, sharing}};
  return a;
}

// The pods on one shared GPU share one claim (the driver gives a device to
// one claim): named after the GPU, the same bytes from every share of it,
// with the driver's sharing configuration and no limits of one share.
TEST(KubernetesPlacementTest, SharesOfOneGpuShareItsClaim) {
  const Allocation a = ShareAllocation("a-1", GpuSharing::kMps);
  Allocation b = ShareAllocation("a-2", GpuSharing::kMps);
  b.share = GpuShare{700, 0};
  b.devices[0].share = GpuShare{700, int64_t{11} << 30};
  const std::string claim = ResourceClaim(a, BuildPlacement(a, {}));
  EXPECT_EQ(
      claim,
      R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",)"
      R"("metadata":{"name":"accelsched-share-mps-gpu-0a1b"},"spec":{"devices":{"requests":[)"
      R"({"name":"gpu-0","exactly":{"deviceClassName":"gpu.nvidia.com","selectors":[)"
      R"({"cel":{"expression":"device.attributes[\"gpu.nvidia.com\"].uuid == \"GPU-0a1B\""}}],)"
      R"("allocationMode":"ExactCount","count":1}}],)"
      R"("config":[{"requests":["gpu-0"],"opaque":{"driver":"gpu.nvidia.com",)"
      R"("parameters":{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig",)"
      R"("sharing":{"strategy":"MPS"}}}}]}}})");
  EXPECT_EQ(ResourceClaim(b, BuildPlacement(b, {})), claim);
  Allocation preview = b;
  preview.id.clear();
  EXPECT_EQ(ResourceClaim(preview, BuildPlacement(preview, {})), claim);

  const Allocation t = ShareAllocation("a-3", GpuSharing::kTimeSlicing);
  EXPECT_THAT(
      ResourceClaim(t, BuildPlacement(t, {})),
      testing::HasSubstr(R"("sharing":{"strategy":"TimeSlicing",)"
                         R"("timeSlicingConfig":{"interval":"Default"}})"));
  EXPECT_THAT(
      PodSpecPatch(BuildPlacement(a, {}), "main"),
      testing::HasSubstr(
          R"("env":[{"name":"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE","value":"25"},)"
          R"({"name":"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT","value":"0=4096M"}])"));
}

TEST(KubernetesPlacementTest, NoShareClaimForAGpuIdThatNamesNoObject) {
  EXPECT_EQ(ShareClaimName("GPU-0a1B", GpuSharing::kMps),
            "accelsched-share-mps-gpu-0a1b");
  EXPECT_EQ(ShareClaimName("GPU-0a1B", GpuSharing::kTimeSlicing),
            "accelsched-share-time-slicing-gpu-0a1b");
  EXPECT_EQ(ShareClaimName("gpu_0", GpuSharing::kMps), "");
  EXPECT_EQ(ShareClaimName("gpu-", GpuSharing::kMps), "");
  Allocation a = ShareAllocation("a-1", GpuSharing::kMps);
  a.devices[0].device_id = "GPU 0";
  EXPECT_EQ(ResourceClaim(a, BuildPlacement(a, {})), "");
}

}  // namespace
}  // namespace accelsched
