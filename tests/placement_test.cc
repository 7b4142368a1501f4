#include "core/placement.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

Allocation Alloc(DeviceClass c, std::string model, std::string partition,
                 int devices) {
  Allocation a;
  a.id = "a-1";
  a.device_class = c;
  a.requested_models = {model};
  a.model = std::move(model);
  a.partition = std::move(partition);
  a.hostname = "host-1";
  for (int i = 0; i < devices; ++i) {
    a.devices.push_back({"n1", "dev-" + std::to_string(i), "", ""});
  }
  return a;
}

TEST(PlacementTest, ResourceNamePerDeviceClass) {
  EXPECT_EQ(ResourceName(DeviceClass::kNvidiaGpu, ""), "nvidia.com/gpu");
  EXPECT_EQ(ResourceName(DeviceClass::kNvidiaGpu, "1g.10gb"),
            "nvidia.com/mig-1g.10gb");
  EXPECT_EQ(ResourceName(DeviceClass::kGoogleTpu, ""), "google.com/tpu");
  EXPECT_EQ(ResourceName(DeviceClass::kAmazonNeuron, ""),
            "aws.amazon.com/neuron");
  EXPECT_EQ(ResourceName(DeviceClass::kAmdGpu, ""), "amd.com/gpu");
  EXPECT_EQ(ResourceName(DeviceClass::kHabanaGaudi, ""), "habana.ai/gaudi");
}

TEST(PlacementTest, NonNvidiaDevicesGetNoNvidiaEnvironment) {
  const Placement p =
      BuildPlacement(Alloc(DeviceClass::kAmdGpu, "amd-mi300x", "", 2));
  EXPECT_EQ(p.resource_name, "amd.com/gpu");
  EXPECT_EQ(p.resource_count, 2);
  EXPECT_TRUE(p.env.empty());
  EXPECT_THAT(p.node_selector,
              ElementsAre(Pair("k8s.amazonaws.com/accelerator", "amd-mi300x"),
                          Pair("kubernetes.io/hostname", "host-1")));
  EXPECT_EQ(p.tolerations[0].key, "amd.com/gpu");
}

TEST(PlacementTest, SingleHostTpuSliceKeepsTheHostname) {
  const Placement p =
      BuildPlacement(Alloc(DeviceClass::kGoogleTpu, "tpu-v6e-slice", "2x4", 8));
  EXPECT_EQ(p.resource_count, 8);
  EXPECT_EQ(p.node_selector.at("kubernetes.io/hostname"), "host-1");
  EXPECT_EQ(p.node_selector.at("cloud.google.com/gke-tpu-topology"), "2x4");
}

TEST(PlacementTest, ARequestWithoutAModelGetsNoAcceleratorLabel) {
  // As propeller for a plain `gpu: 1`: the resource and, here, the hostname
  // pin; any GPU model on that host will do.
  Allocation a = Alloc(DeviceClass::kNvidiaGpu, "nvidia-l4", "", 2);
  a.requested_models.clear();
  const Placement p = BuildPlacement(a);
  EXPECT_THAT(p.node_selector,
              ElementsAre(Pair("kubernetes.io/hostname", "host-1")));
  EXPECT_EQ(p.resource_name, "nvidia.com/gpu");
  EXPECT_EQ(p.resource_count, 2);
  EXPECT_EQ(p.env.at("NVIDIA_VISIBLE_DEVICES"), "dev-0,dev-1");
}

TEST(PlacementTest, ARequestWithAlternativesGetsTheChosenModelsLabel) {
  Allocation a = Alloc(DeviceClass::kNvidiaGpu, "nvidia-l4", "", 1);
  a.requested_models = {"nvidia-l4", "nvidia-tesla-t4"};
  const Placement p = BuildPlacement(a);
  EXPECT_EQ(p.node_selector.at("k8s.amazonaws.com/accelerator"), "nvidia-l4");
}

}  // namespace
}  // namespace accelsched
