#include "core/placement/placement.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

using Req = NodeSelectorRequirement;

// An allocation of `devices` devices on node n1 (hostname host-1) whose
// device label value is `label`.
Allocation Alloc(DeviceClass c, std::string model, std::string partition,
                 int devices, std::string label) {
  Allocation a;
  a.id = "a-1";
  a.node = "n1";
  a.device_class = c;
  a.requested_models = {model};
  a.model = std::move(model);
  a.partition = std::move(partition);
  a.targets = {{"n1", "host-1", std::move(label), ""}};
  for (int i = 0; i < devices; ++i) {
    a.devices.push_back({"n1", "dev-" + std::to_string(i), "", ""});
  }
  return a;
}

Toleration Equal(std::string key, std::string value) {
  return {std::move(key), "Equal", std::move(value), "NoSchedule"};
}

// What propeller puts on a pod (flyteorg/flyte main 6fadb90d,
// flyteplugins/go/tasks/pluginmachinery/flytek8s/pod_helper.go:371-450 and
// config/config.go:67-139), plus the hostname pin, for each device class.
struct PropellerCase {
  const char* name;
  Allocation allocation;
  std::vector<Req> affinity;
  std::vector<Toleration> tolerations;
  std::string resource;
  int64_t count;
};

class PlacementMatchesPropeller : public testing::TestWithParam<PropellerCase> {
};

TEST_P(PlacementMatchesPropeller, AffinityTolerationsAndResource) {
  const PropellerCase& c = GetParam();
  const Placement p = BuildPlacement(c.allocation, PlacementOptions());
  EXPECT_EQ(p.node_affinity, c.affinity);
  EXPECT_EQ(p.tolerations, c.tolerations);
  EXPECT_EQ(p.resource_name, c.resource);
  EXPECT_EQ(p.resource_count, c.count);
  EXPECT_THAT(p.env, IsEmpty());
  // A single-node allocation's node placement is the same.
  EXPECT_THAT(BuildNodePlacements(c.allocation, PlacementOptions()),
              ElementsAre(p));
}

Allocation Unpartitioned(Allocation a) {
  a.unpartitioned = true;
  return a;
}

Allocation Mixed(Allocation a) {
  a.targets[0].mig_strategy = "mixed";
  return a;
}

Allocation ModelLess(Allocation a) {
  a.requested_models.clear();
  return a;
}

constexpr char kAccel[] = "k8s.amazonaws.com/accelerator";
constexpr char kPart[] = "k8s.amazonaws.com/gpu-partition-size";
const Req kPin{"kubernetes.io/hostname", "In", {"host-1"}};

INSTANTIATE_TEST_SUITE_P(
    EveryDeviceClass, PlacementMatchesPropeller,
    testing::Values(
        // 8.1: {device: "A100"}, gpu: 1.
        PropellerCase{"NvidiaWholeGpu",
                      Alloc(DeviceClass::kNvidiaGpu, "nvidia-tesla-a100", "", 1,
                            "nvidia-tesla-a100"),
                      {{kAccel, "In", {"nvidia-tesla-a100"}}, kPin},
                      {Equal(kAccel, "nvidia-tesla-a100")},
                      "nvidia.com/gpu",
                      1},
        // 8.3: unpartitioned: DoesNotExist, no toleration for it.
        PropellerCase{
            "NvidiaUnpartitioned",
            Unpartitioned(Alloc(DeviceClass::kNvidiaGpu, "nvidia-h100", "", 2,
                                "nvidia-h100-80gb")),
            {{kAccel, "In", {"nvidia-h100-80gb"}},
             {kPart, "DoesNotExist", {}},
             kPin},
            {Equal(kAccel, "nvidia-h100-80gb")},
            "nvidia.com/gpu",
            2},
        // 8.2: MIG under the single strategy asks for nvidia.com/gpu.
        PropellerCase{
            "NvidiaMigSingle",
            Alloc(DeviceClass::kNvidiaGpu, "nvidia-tesla-a100", "1g.5gb", 1,
                  "nvidia-tesla-a100"),
            {{kAccel, "In", {"nvidia-tesla-a100"}},
             {kPart, "In", {"1g.5gb"}},
             kPin},
            {Equal(kAccel, "nvidia-tesla-a100"), Equal(kPart, "1g.5gb")},
            "nvidia.com/gpu",
            1},
        // accelsched's addition: the mixed strategy's resource, no partition
        // label (such a node cannot carry one).
        PropellerCase{"NvidiaMigMixed",
                      Mixed(Alloc(DeviceClass::kNvidiaGpu, "nvidia-tesla-a100",
                                  "1g.5gb", 2, "nvidia-tesla-a100")),
                      {{kAccel, "In", {"nvidia-tesla-a100"}}, kPin},
                      {Equal(kAccel, "nvidia-tesla-a100")},
                      "nvidia.com/mig-1g.5gb",
                      2},
        // pod_helper.go:385: no device, no device label (Flyte's `gpu: 1`).
        PropellerCase{"NvidiaNoModel",
                      ModelLess(Alloc(DeviceClass::kNvidiaGpu, "nvidia-l4", "",
                                      2, "nvidia-l4")),
                      {kPin},
                      {},
                      "nvidia.com/gpu",
                      2},
        // 8.4: TPU labels are GKE's; a single-host slice keeps the pin.
        PropellerCase{
            "GoogleTpu",
            Alloc(DeviceClass::kGoogleTpu, "tpu-v6e-slice", "2x4", 8,
                  "tpu-v6e-slice"),
            {{"cloud.google.com/gke-tpu-accelerator", "In", {"tpu-v6e-slice"}},
             {"cloud.google.com/gke-tpu-topology", "In", {"2x4"}},
             kPin},
            {Equal("cloud.google.com/gke-tpu-accelerator", "tpu-v6e-slice"),
             Equal("cloud.google.com/gke-tpu-topology", "2x4")},
            "google.com/tpu",
            8},
        // 8.5-8.7: the global labels, each class's resource.
        PropellerCase{"AmazonNeuron",
                      Alloc(DeviceClass::kAmazonNeuron, "aws-neuron-trn1", "",
                            1, "aws-neuron-trn1"),
                      {{kAccel, "In", {"aws-neuron-trn1"}}, kPin},
                      {Equal(kAccel, "aws-neuron-trn1")},
                      "aws.amazon.com/neuron",
                      1},
        PropellerCase{
            "AmdGpu",
            Alloc(DeviceClass::kAmdGpu, "amd-mi300x", "", 2, "amd-mi300x"),
            {{kAccel, "In", {"amd-mi300x"}}, kPin},
            {Equal(kAccel, "amd-mi300x")},
            "amd.com/gpu",
            2},
        PropellerCase{"HabanaGaudi",
                      Alloc(DeviceClass::kHabanaGaudi, "habana-gaudi-dl1", "",
                            1, "habana-gaudi-dl1"),
                      {{kAccel, "In", {"habana-gaudi-dl1"}}, kPin},
                      {Equal(kAccel, "habana-gaudi-dl1")},
                      "habana.ai/gaudi",
                      1}),
    [](const testing::TestParamInfo<PropellerCase>& info) {
      return std::string(info.param.name);
    });

TEST(PlacementTest, NodeSelectorHoldsTheSingleValuedRequirements) {
  const Placement p = BuildPlacement(
      Unpartitioned(Alloc(DeviceClass::kNvidiaGpu, "nvidia-l4", "", 1, "l4")),
      PlacementOptions());
  EXPECT_THAT(p.node_selector,
              ElementsAre(Pair(kAccel, "l4"),
                          Pair("kubernetes.io/hostname", "host-1")));
}

TEST(PlacementTest, VisibleDevicesOnlyWhenAskedAndOnlyForNvidia) {
  Allocation a = Alloc(DeviceClass::kNvidiaGpu, "nvidia-tesla-a100", "1g.5gb",
                       0, "nvidia-tesla-a100");
  a.devices = {{"n1", "GPU-a", "MIG-1", "1g.5gb"},
               {"n1", "GPU-a", "MIG-2", "1g.5gb"}};
  EXPECT_THAT(BuildPlacement(a, PlacementOptions()).env, IsEmpty());
  EXPECT_THAT(BuildPlacement(a, {.nvidia_visible_devices = true}).env,
              ElementsAre(Pair("NVIDIA_VISIBLE_DEVICES", "MIG-1,MIG-2")));
  EXPECT_THAT(
      BuildPlacement(Alloc(DeviceClass::kAmdGpu, "amd-mi300x", "", 1, "x"),
                     {.nvidia_visible_devices = true})
          .env,
      IsEmpty());
}

TEST(PlacementTest, ATypesOwnResourceNameIsKept) {
  Allocation a = Alloc(DeviceClass::kNvidiaGpu, "acme-x1", "", 1, "acme-x1");
  a.resource_name = "acme.example/x1";
  EXPECT_EQ(BuildPlacement(a, PlacementOptions()).resource_name,
            "acme.example/x1");
}

// A share of an MPS GPU asks one of the device plugin's shared resource on
// its node and carries its own MPS limits: the percentage rounded up, the
// memory in MiB rounded down, on the GPU's UUID. Time-slicing has no limits
// to carry.
TEST(PlacementTest, ShareAsksTheSharedResourceWithItsMpsLimits) {
  Allocation a = Alloc(DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", "", 0,
                       "nvidia-tesla-t4");
  a.share = GpuShare{333, 0};
  a.devices = {{"n1", "GPU-a", "", "",
                GpuShare{333, (int64_t{5} << 30) + (int64_t{1} << 20) - 1},
                GpuSharing::kMps}};
  const Placement p = BuildPlacement(a, PlacementOptions());
  EXPECT_EQ(p.resource_name, "nvidia.com/gpu");
  EXPECT_EQ(p.resource_count, 1);
  EXPECT_THAT(p.env,
              ElementsAre(Pair("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "34"),
                          Pair("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=5120M")));
  EXPECT_EQ(p.node_affinity.back(), (Req{kHostnameLabel, "In", {"host-1"}}));
  PlacementOptions renamed;
  renamed.shared_gpu_resource_name = "nvidia.com/gpu.shared";
  EXPECT_EQ(BuildPlacement(a, renamed).resource_name, "nvidia.com/gpu.shared");

  a.devices[0].sharing = GpuSharing::kTimeSlicing;
  EXPECT_THAT(BuildPlacement(a, PlacementOptions()).env, IsEmpty());
  EXPECT_EQ(BuildPlacement(a, PlacementOptions()).resource_name,
            "nvidia.com/gpu");
}

TEST(PlacementTest, MpsLimitsNeverRoundToNothing) {
  EXPECT_EQ(MpsActiveThreadPercentage(GpuShare{1, 0}), 1);
  EXPECT_EQ(MpsActiveThreadPercentage(GpuShare{10, 0}), 1);
  EXPECT_EQ(MpsActiveThreadPercentage(GpuShare{11, 0}), 2);
  EXPECT_EQ(MpsActiveThreadPercentage(GpuShare{1000, 0}), 100);
  EXPECT_EQ(MpsPinnedDeviceMemLimit(GpuShare{1, 1}), "0=1M");
  EXPECT_EQ(MpsPinnedDeviceMemLimit(GpuShare{1, int64_t{3} << 20}), "0=3M");
}

// A multi-host TPU slice: one pod per host, each pinned and asking for its
// own chips; the allocation's own placement pins no host.
TEST(PlacementTest, MultiHostTpuSliceHasOnePlacementPerHost) {
  Allocation a = Alloc(DeviceClass::kGoogleTpu, "tpu-v5p-slice", "2x2x2", 0,
                       "tpu-v5p-slice");
  a.node = "h-a";
  // h-b carries its own label value.
  a.targets = {{"h-a", "host-a", "tpu-v5p-slice", ""},
               {"h-b", "host-b", "v5p-own", ""}};
  for (const char* host : {"h-a", "h-b"}) {
    for (int i = 0; i < 4; ++i) {
      a.devices.push_back({host, absl::StrCat(host, "-", i), "", ""});
    }
  }
  const Placement whole = BuildPlacement(a, PlacementOptions());
  EXPECT_EQ(whole.resource_count, 4);
  EXPECT_FALSE(whole.node_selector.contains("kubernetes.io/hostname"));
  // It fits either host: both values, a toleration for each.
  EXPECT_EQ(whole.node_affinity.front(),
            (Req{"cloud.google.com/gke-tpu-accelerator",
                 "In",
                 {"tpu-v5p-slice", "v5p-own"}}));
  EXPECT_THAT(
      whole.tolerations,
      ElementsAre(
          Equal("cloud.google.com/gke-tpu-accelerator", "tpu-v5p-slice"),
          Equal("cloud.google.com/gke-tpu-accelerator", "v5p-own"),
          Equal("cloud.google.com/gke-tpu-topology", "2x2x2")));
  EXPECT_THAT(whole.node_selector,
              ElementsAre(Pair("cloud.google.com/gke-tpu-topology", "2x2x2")));
  const std::vector<Placement> hosts =
      BuildNodePlacements(a, PlacementOptions());
  ASSERT_EQ(hosts.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(hosts[i].resource_count, 4);
    EXPECT_EQ(hosts[i].node_affinity.back(),
              (Req{"kubernetes.io/hostname", "In", {a.targets[i].hostname}}));
    EXPECT_EQ(hosts[i].devices.size(), 4u);
    EXPECT_EQ(hosts[i].devices[0].node, a.targets[i].node);
    EXPECT_EQ(hosts[i].node_selector.at("cloud.google.com/gke-tpu-accelerator"),
              a.targets[i].device_label);
  }
}

TEST(PlacementTest, TargetTakesTheNodesLabelsElseTheRequestedValue) {
  AcceleratorType tpu;
  tpu.canonical_model = "tpu-v5p-slice";
  tpu.device_class = DeviceClass::kGoogleTpu;
  tpu.node_label_value = "tpu-v5p-slice";
  Node n;
  n.name = "node-1";
  EXPECT_EQ(PlacementTargetOf(n, tpu, "v5p-requested"),
            (PlacementTarget{"node-1", "node-1", "v5p-requested", ""}));
  n.labels = {{"kubernetes.io/hostname", "host-1"},
              {"cloud.google.com/gke-tpu-accelerator", "tpu-v5p-own"},
              // Not the TPU's label: ignored for a TPU.
              {"k8s.amazonaws.com/accelerator", "other"},
              {"nvidia.com/mig.strategy", "single"}};
  EXPECT_EQ(PlacementTargetOf(n, tpu, "v5p-requested"),
            (PlacementTarget{"node-1", "host-1", "tpu-v5p-own", "single"}));
}

// Three types spelled as the built-in ones are, with propeller's map entries
// (config/accelerator_types.textproto).
std::shared_ptr<const AcceleratorTypeSet> SpellingTypes() {
  AcceleratorTypeSetBuilder b;
  AcceleratorType h100;
  h100.canonical_model = "nvidia-h100";
  h100.aliases = {"H100", "H100 80G", "nvidia-h100-80gb",
                  "NVIDIA H100 80GB HBM3"};
  h100.node_label_value = "nvidia-h100";
  h100.flyte_node_labels = {{"H100", "nvidia-h100"},
                            {"H100 80G", "nvidia-h100-80gb"}};
  AcceleratorType a100;
  a100.canonical_model = "nvidia-tesla-a100";
  a100.aliases = {"A100"};
  a100.node_label_value = "nvidia-tesla-a100";
  a100.flyte_node_labels = {{"A100", "nvidia-tesla-a100"}};
  AcceleratorType l40s;
  l40s.canonical_model = "nvidia-l40s";
  l40s.aliases = {"L40s"};
  l40s.node_label_value = "nvidia-l40s";
  l40s.flyte_node_labels = {{"L40s", "nvidia-l40s"}};
  for (AcceleratorType* t : {&h100, &a100, &l40s}) {
    const absl::Status added = b.Add(*t);
    EXPECT_TRUE(added.ok()) << added;
  }
  return std::move(b).Build();
}

struct SpellingCase {
  const char* name;
  std::vector<std::string> spellings;  // Allocation::device_spellings
  const char* model;                   // the model the allocation got
  const char* label;                   // what propeller writes
};

class RequestedDeviceLabelIsPropellers
    : public testing::TestWithParam<SpellingCase> {};

TEST_P(RequestedDeviceLabelIsPropellers, ForTheSpellingOfTheChosenModel) {
  const SpellingCase& c = GetParam();
  const std::shared_ptr<const AcceleratorTypeSet> types = SpellingTypes();
  const AcceleratorType* type = types->Find(c.model);
  ASSERT_NE(type, nullptr);
  EXPECT_EQ(RequestedDeviceLabel(*types, c.spellings, *type), c.label);
}

INSTANTIATE_TEST_SUITE_P(
    Spellings, RequestedDeviceLabelIsPropellers,
    testing::Values(
        // utils.go:104-110: accelerator-devices[upper(device)]...
        SpellingCase{
            "MappedName", {"H100 80G"}, "nvidia-h100", "nvidia-h100-80gb"},
        SpellingCase{"MappedNameUpperCased",
                     {"h100 80g"},
                     "nvidia-h100",
                     "nvidia-h100-80gb"},
        SpellingCase{"MappedMainName", {"H100"}, "nvidia-h100", "nvidia-h100"},
        // ...else the device unchanged (propeller v1's rule for every
        // spelling).
        SpellingCase{"UnmappedLabelValue",
                     {"nvidia-h100-80gb"},
                     "nvidia-h100",
                     "nvidia-h100-80gb"},
        SpellingCase{
            "CanonicalName", {"nvidia-h100"}, "nvidia-h100", "nvidia-h100"},
        SpellingCase{"UnmappedKeepsItsCase",
                     {"NVIDIA-H100-80GB"},
                     "nvidia-h100",
                     "NVIDIA-H100-80GB"},
        // Propeller's key "L40s" is never matched by an upper-cased lookup.
        SpellingCase{
            "LowerCaseKeyNeverMatches", {"L40s"}, "nvidia-l40s", "L40s"},
        // Propeller would write a value Kubernetes refuses: the registry's.
        SpellingCase{"NotALabelValue",
                     {"NVIDIA H100 80GB HBM3"},
                     "nvidia-h100",
                     "nvidia-h100"},
        SpellingCase{
            "PaddedSpelling", {" H100 80G "}, "nvidia-h100", "nvidia-h100"},
        // The first spelling of the model chosen, whatever comes before it.
        SpellingCase{"AlternativeChosen",
                     {"A100", "H100 80G"},
                     "nvidia-h100",
                     "nvidia-h100-80gb"},
        SpellingCase{"DeviceChosen",
                     {"A100", "H100 80G"},
                     "nvidia-tesla-a100",
                     "nvidia-tesla-a100"},
        SpellingCase{"FirstSpellingOfTheModel",
                     {"H100", "H100 80G"},
                     "nvidia-h100",
                     "nvidia-h100"},
        SpellingCase{"FirstSpellingIsNoLabelValue",
                     {"NVIDIA H100 80GB HBM3", "H100 80G"},
                     "nvidia-h100",
                     "nvidia-h100"},
        // No spelling of the model: stored before spellings were kept, or
        // one the registry no longer knows.
        SpellingCase{"NoSpellings", {}, "nvidia-h100", "nvidia-h100"},
        SpellingCase{
            "UnknownSpelling", {"H100 96G"}, "nvidia-h100", "nvidia-h100"}),
    [](const testing::TestParamInfo<SpellingCase>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace accelsched
