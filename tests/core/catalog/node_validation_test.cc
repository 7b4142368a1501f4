#include "core/catalog/node_validation.h"

#include <functional>
#include <string>

#include "config/accelerator_types_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::HasSubstr;

Device Gpu(const char* id, const char* model, int index) {
  Device d;
  d.id = id;
  d.model = model;
  d.index = index;
  return d;
}

Device Tpu(const char* id, const char* slice, const char* topology, int index) {
  Device d = Gpu(id, "tpu-v5p-slice", index);
  d.tpu_slice_id = slice;
  d.tpu_topology = topology;
  return d;
}

Node ValidNode() {
  Node n;
  n.name = "gpu-node-1";
  n.labels = {{"pool", "a100"}};
  n.devices.push_back(Gpu("GPU-aaaa", "NVIDIA A100-SXM4-40GB", 0));
  Device mig = Gpu("GPU-bbbb", "A100", 1);
  mig.mig_enabled = true;
  mig.mig_slices = {{"MIG-1", "3g.20gb", 0}, {"MIG-2", "3g.20gb", 4}};
  n.devices.push_back(mig);
  n.devices.push_back(Gpu("GPU-cccc", "nvidia-h100", 2));
  return n;
}

TEST(NodeValidationTest, ValidNodeGetsCanonicalModelsAndClasses) {
  Node n = ValidNode();
  n.devices.push_back(Tpu("chip-0", "slice-a", "2x2x1", 3));
  ASSERT_OK(NormalizeAndValidateNode(*BuiltinAcceleratorTypes(), n));
  EXPECT_EQ(n.devices[0].canonical_model, "nvidia-tesla-a100");
  EXPECT_EQ(n.devices[0].model, "NVIDIA A100-SXM4-40GB");  // as reported
  EXPECT_EQ(n.devices[2].canonical_model, "nvidia-h100");
  EXPECT_EQ(n.devices[3].device_class, DeviceClass::kGoogleTpu);
}

// Every kind of link, links one way only.
TEST(NodeValidationTest, LinksToOtherDevicesOfTheNodeAreValid) {
  Node n = ValidNode();
  n.devices[0].links = {{"GPU-cccc", LinkKind::kNvlink, 12},
                        {"GPU-bbbb", LinkKind::kSameNuma, 0}};
  n.devices[1].links = {{"GPU-cccc", LinkKind::kPcieSwitch, 0}};
  n.devices[2].links = {{"GPU-aaaa", LinkKind::kNvlink, kMaxNvlinksPerLink}};
  EXPECT_OK(NormalizeAndValidateNode(*BuiltinAcceleratorTypes(), n));
}

struct BadCase {
  const char* name;
  std::function<void(Node&)> mutate;
  const char* field;  // what the message must name
};

class BadNodeTest : public testing::TestWithParam<BadCase> {};

TEST_P(BadNodeTest, IsInvalidArgumentNamingTheField) {
  Node n = ValidNode();
  GetParam().mutate(n);
  EXPECT_THAT(NormalizeAndValidateNode(*BuiltinAcceleratorTypes(), n),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(GetParam().field)));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadNodeTest,
    testing::Values(
        BadCase{"EmptyName", [](Node& n) { n.name = ""; },
                "node.name is required"},
        BadCase{"UpperCaseName", [](Node& n) { n.name = "GPU-Node"; },
                "node.name"},
        BadCase{"LongName", [](Node& n) { n.name = std::string(254, 'a'); },
                "node.name"},
        BadCase{"BadLabel", [](Node& n) { n.labels["bad key"] = "v"; },
                "node.labels"},
        BadCase{"EmptyDeviceId", [](Node& n) { n.devices[0].id = ""; },
                "node.devices[0].id is required"},
        BadCase{"LongDeviceId",
                [](Node& n) { n.devices[0].id = std::string(129, 'x'); },
                "node.devices[0].id is 129 characters"},
        BadCase{"SpaceInDeviceId", [](Node& n) { n.devices[0].id = "GPU 1"; },
                "node.devices[0].id"},
        BadCase{"UnknownModel",
                [](Node& n) { n.devices[2].model = "nvidia-z9000"; },
                "node.devices[2].model \"nvidia-z9000\" is not a known"},
        BadCase{"ClassMismatch",
                [](Node& n) {
                  n.devices[2].device_class = DeviceClass::kGoogleTpu;
                },
                "node.devices[2].device_class GOOGLE_TPU does not match"},
        BadCase{"NegativeIndex", [](Node& n) { n.devices[1].index = -1; },
                "node.devices[1].index"},
        BadCase{"DuplicateId", [](Node& n) { n.devices[2].id = "GPU-aaaa"; },
                "node.devices[2].id \"GPU-aaaa\" appears more than once"},
        BadCase{"MigIdEqualsDeviceId",
                [](Node& n) { n.devices[1].mig_slices[0].id = "GPU-aaaa"; },
                "node.devices[1].mig_slices[0].id"},
        BadCase{"DuplicateIndex", [](Node& n) { n.devices[2].index = 0; },
                "node.devices[2].index 0 is used"},
        BadCase{"MigOnNonMigModel",
                [](Node& n) {
                  n.devices[2].model = "nvidia-tesla-t4";
                  n.devices[2].mig_enabled = true;
                },
                "node.devices[2].mig_enabled is set but nvidia-tesla-t4 has no "
                "MIG"},
        BadCase{"SlicesWithoutMigEnabled",
                [](Node& n) { n.devices[1].mig_enabled = false; },
                "node.devices[1].mig_slices are set but mig_enabled is false"},
        BadCase{"ProfileOfAnotherModel",
                [](Node& n) { n.devices[1].mig_slices[0].profile = "3g.40gb"; },
                "node.devices[1].mig_slices[0].profile \"3g.40gb\" is not a "
                "MIG profile"},
        BadCase{"DisallowedStart",
                [](Node& n) { n.devices[1].mig_slices[1].start = 2; },
                "node.devices[1].mig_slices[1].start 2"},
        BadCase{"Overlap",
                [](Node& n) {
                  n.devices[1].mig_slices.push_back({"MIG-3", "1g.5gb", 5});
                },
                "node.devices[1].mig_slices[2] 1g.5gb at start 5 overlaps"},
        BadCase{"EmptyMigId",
                [](Node& n) { n.devices[1].mig_slices[0].id = ""; },
                "node.devices[1].mig_slices[0].id is required"},
        BadCase{
            "TpuWithoutSlice",
            [](Node& n) { n.devices.push_back(Tpu("chip-0", "", "2x2x1", 5)); },
            "node.devices[3].tpu_slice_id is required"},
        BadCase{
            "TpuForeignTopology",
            [](Node& n) { n.devices.push_back(Tpu("chip-0", "s", "2x4", 5)); },
            "node.devices[3].tpu_topology \"2x4\" is not a topology of "
            "tpu-v5p-slice"},
        BadCase{"TpuFieldsOnGpu",
                [](Node& n) { n.devices[0].tpu_slice_id = "s"; },
                "node.devices[0].tpu_slice_id"},
        BadCase{"TooManyChipsOfASliceOnOneHost",
                [](Node& n) {
                  for (int i = 0; i < 5; ++i) {
                    n.devices.push_back(
                        Tpu(("chip-" + std::to_string(i)).c_str(), "s", "2x2x1",
                            10 + i));
                  }
                },
                "node.devices[7] is one chip too many"},
        BadCase{"SliceChipsDisagree",
                [](Node& n) {
                  n.devices.push_back(Tpu("chip-0", "s", "2x2x1", 10));
                  n.devices.push_back(Tpu("chip-1", "s", "2x2x2", 11));
                },
                "node.devices[4] is in TPU slice \"s\""},
        BadCase{"LinkToItself",
                [](Node& n) {
                  n.devices[1].links = {{"GPU-bbbb", LinkKind::kNvlink, 2}};
                },
                "node.devices[1].links[0].peer_device_id \"GPU-bbbb\" is the "
                "device itself"},
        BadCase{"LinkToAnotherNodesDevice",
                [](Node& n) {
                  n.devices[0].links = {{"GPU-cccc", LinkKind::kNvlink, 2},
                                        {"GPU-zzzz", LinkKind::kSameNuma, 0}};
                },
                "node.devices[0].links[1].peer_device_id \"GPU-zzzz\" is not "
                "a device of this node"},
        BadCase{"LinkToAMigSlice",
                [](Node& n) {
                  n.devices[0].links = {{"MIG-1", LinkKind::kPcieSwitch, 0}};
                },
                "node.devices[0].links[0].peer_device_id \"MIG-1\""},
        BadCase{"NvlinkWithoutLinks",
                [](Node& n) {
                  n.devices[0].links = {{"GPU-cccc", LinkKind::kNvlink, 0}};
                },
                "node.devices[0].links[0].count 0 is not 1 to 64 for NVLINK"},
        BadCase{"TooManyNvlinks",
                [](Node& n) {
                  n.devices[0].links = {
                      {"GPU-cccc", LinkKind::kNvlink, kMaxNvlinksPerLink + 1}};
                },
                "node.devices[0].links[0].count 65"},
        BadCase{"CountOnAPcieLink",
                [](Node& n) {
                  n.devices[0].links = {{"GPU-cccc", LinkKind::kSameNuma, 1}};
                },
                "node.devices[0].links[0].count 1 must be 0 for SAME_NUMA"},
        BadCase{"TwoLinksToOnePeer",
                [](Node& n) {
                  n.devices[2].links = {{"GPU-aaaa", LinkKind::kNvlink, 4},
                                        {"GPU-bbbb", LinkKind::kPcieSwitch, 0},
                                        {"GPU-aaaa", LinkKind::kPcieSwitch, 0}};
                },
                "node.devices[2].links[2].peer_device_id \"GPU-aaaa\" is named "
                "by an earlier link"},
        BadCase{"TooManyLinks",
                [](Node& n) {
                  n.devices[0].links.assign(kMaxLinksPerDevice + 1,
                                            {"GPU-cccc", LinkKind::kNvlink, 1});
                },
                "node.devices[0].links has 257 entries; at most 256"},
        BadCase{"TooManyLinksOnTheNode",
                [](Node& n) {
                  for (Device& d : n.devices) {
                    d.links.assign(kMaxLinksPerDevice,
                                   {"GPU-cccc", LinkKind::kNvlink, 1});
                  }
                  for (int i = 0; i < 14; ++i) {
                    n.devices.push_back(Gpu("x", "T4", 100 + i));
                    n.devices.back().id += std::to_string(i);
                    n.devices.back().links = n.devices[0].links;
                  }
                },
                "node.devices have 4352 links in all; at most 4096 per node"},
        BadCase{"TooManyDevices",
                [](Node& n) {
                  for (int i = 0; i <= static_cast<int>(kMaxDevicesPerNode);
                       ++i) {
                    n.devices.push_back(Gpu("x", "T4", 100 + i));
                  }
                },
                "node.devices has"}),
    [](const testing::TestParamInfo<BadCase>& info) {
      return info.param.name;
    });

}  // namespace
}  // namespace accelsched
