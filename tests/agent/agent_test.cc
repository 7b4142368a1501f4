// The node agent's parts, without a server: NVML discovery through the fake
// libnvidia-ml (tests/fake_nvml), TPU discovery over a made-up sysfs tree, the
// inventory and label files, and the merge of sources.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/backoff.h"
#include "agent/discovery.h"
#include "agent/files.h"
#include "agent/gpu_links.h"
#include "agent/gpu_sharing.h"
#include "agent/inventory_file.h"
#include "agent/nvidia_gpus.h"
#include "agent/tpu_chips.h"
#include "config/accelerator_types_file.h"
#include "core/accelerators/accelerator_type_set.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace accelsched::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr uint64_t kMiB = 1024 * 1024;

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path + ".tmp") << text;
  std::filesystem::rename(path + ".tmp", path);
}

TEST(MigProfileNameTest, SpellsProfilesAsNvidiasDevicePluginDoes) {
  // A100-SXM4-40GB (40960 MiB) and H100 80GB (81559 MiB), with the instance
  // sizes NVML reports: go-nvlib rounds the share up to eighths of the GPU.
  const uint64_t a100 = 40960 * kMiB, h100 = 81559 * kMiB;
  EXPECT_EQ(MigProfileName(NVML_GPU_INSTANCE_PROFILE_1_SLICE, 4864, a100),
            "1g.5gb");
  EXPECT_EQ(MigProfileName(NVML_GPU_INSTANCE_PROFILE_2_SLICE, 9984, a100),
            "2g.10gb");
  EXPECT_EQ(MigProfileName(NVML_GPU_INSTANCE_PROFILE_3_SLICE, 20096, a100),
            "3g.20gb");
  EXPECT_EQ(MigProfileName(NVML_GPU_INSTANCE_PROFILE_4_SLICE, 20096, a100),
            "4g.20gb");
  EXPECT_EQ(MigProfileName(NVML_GPU_INSTANCE_PROFILE_7_SLICE, 40192, a100),
            "7g.40gb");
  EXPECT_EQ(MigProfileName(NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 4864, a100),
            "1g.5gb+me");
  EXPECT_EQ(MigProfileName(NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 9856, a100),
            "1g.10gb");
  EXPECT_EQ(MigProfileName(NVML_GPU_INSTANCE_PROFILE_1_SLICE, 9856, h100),
            "1g.10gb");
  EXPECT_EQ(
      MigProfileName(NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME, 9856, h100),
      "1g.10gb+me.all");
  EXPECT_EQ(MigProfileName(NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, 9856, h100),
            "1g.10gb-me");
  EXPECT_EQ(MigProfileName(NVML_GPU_INSTANCE_PROFILE_7_SLICE, 80896, h100),
            "7g.80gb");
  // An index go-nvlib does not name (3_SLICE_GFX, 0x11), or no GPU memory.
  EXPECT_EQ(MigProfileName(0x11, 40192, h100), "");
  EXPECT_EQ(MigProfileName(NVML_GPU_INSTANCE_PROFILE_1_SLICE, 4864, 0), "");
}

class NvidiaGpusTest : public testing::Test {
 protected:
  void SetUp() override {
    ::setenv("FAKE_NVML_SCENARIO", scenario_.c_str(), 1);
    ::unsetenv("FAKE_NVML_INIT_ERROR");
  }
  std::unique_ptr<NvidiaGpus> Open(
      v1::GpuSharing sharing = v1::GPU_SHARING_NONE) {
    absl::StatusOr<std::unique_ptr<NvmlLibrary>> nvml =
        NvmlLibrary::Load(FAKE_NVML_PATH);
    EXPECT_OK(nvml);
    return nvml.ok() ? std::make_unique<NvidiaGpus>(*std::move(nvml), sharing)
                     : nullptr;
  }

  TempDir dir_;
  std::string scenario_ = dir_.File("scenario");
};

TEST_F(NvidiaGpusTest, ReadsWholeGpusMigInstancesAndReadings) {
  WriteFile(scenario_,
            "gpu uuid=GPU-h100 name=\"NVIDIA H100 80GB HBM3\" memory_mib=81559 "
            "used_mib=512 util=35 temp=41 power_mw=250500\n"
            "gpu uuid=GPU-a100 name=\"NVIDIA A100-SXM4-40GB\" memory_mib=40960 "
            "mig=1\n"
            "mig gpu=1 uuid=MIG-b profile=2 mem_mib=20096 start=4 gi=2 "
            "used_mib=30\n"
            "mig gpu=1 uuid=MIG-a profile=0 mem_mib=4864 start=0 gi=7 "
            "used_mib=10\n"
            "mig gpu=1 uuid=MIG-no-ci profile=0 mem_mib=4864 start=1 gi=8 "
            "ci=0\n");
  std::unique_ptr<NvidiaGpus> gpus = Open();
  ASSERT_NE(gpus, nullptr);
  EXPECT_EQ(gpus->nvml().DriverVersion(), "fake-nvml");
  Observation seen;
  ASSERT_OK(gpus->Observe(seen));
  ASSERT_EQ(seen.devices.size(), 2u);
  const v1::Device& h100 = seen.devices[0];
  EXPECT_EQ(h100.id(), "GPU-h100");
  EXPECT_EQ(h100.model(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100.device_class(), v1::NVIDIA_GPU);
  EXPECT_EQ(h100.memory_bytes(), 81559 * kMiB);
  EXPECT_EQ(h100.index(), 0);
  EXPECT_FALSE(h100.mig_enabled());
  const v1::Device& a100 = seen.devices[1];
  EXPECT_EQ(a100.index(), 1);
  EXPECT_TRUE(a100.mig_enabled());
  // By start slot; the instance without a compute instance (no MIG device)
  // is left out.
  ASSERT_EQ(a100.mig_slices_size(), 2);
  EXPECT_EQ(a100.mig_slices(0).id(), "MIG-a");
  EXPECT_EQ(a100.mig_slices(0).profile(), "1g.5gb");
  EXPECT_EQ(a100.mig_slices(0).start(), 0);
  EXPECT_EQ(a100.mig_slices(1).id(), "MIG-b");
  EXPECT_EQ(a100.mig_slices(1).profile(), "3g.20gb");
  EXPECT_EQ(a100.mig_slices(1).start(), 4);
  EXPECT_THAT(seen.unhealthy, IsEmpty());

  const v1::DeviceStats& s = seen.stats.at("GPU-h100");
  EXPECT_DOUBLE_EQ(s.utilization(), 0.35);
  EXPECT_EQ(s.memory_used_bytes(), static_cast<int64_t>(512 * kMiB));
  EXPECT_DOUBLE_EQ(s.temperature_celsius(), 41);
  EXPECT_DOUBLE_EQ(s.power_watts(), 250.5);
  // NVML cannot tell a MIG GPU's utilization; slices report their memory,
  // and a GPU that reads nothing sends no stats at all.
  EXPECT_FALSE(seen.stats.contains("GPU-a100"));
  EXPECT_EQ(seen.stats.at("MIG-a").memory_used_bytes(),
            static_cast<int64_t>(10 * kMiB));
  EXPECT_EQ(seen.stats.at("MIG-b").memory_used_bytes(),
            static_cast<int64_t>(30 * kMiB));
  EXPECT_FALSE(seen.stats.contains("MIG-no-ci"));
}

// The node's sharing goes on its whole GPUs, never on a GPU in MIG mode.
TEST_F(NvidiaGpusTest, SharingGoesOnWholeGpusOnly) {
  WriteFile(scenario_,
            "gpu uuid=GPU-t4 name=\"Tesla T4\" memory_mib=15360\n"
            "gpu uuid=GPU-a100 name=\"NVIDIA A100-SXM4-40GB\" memory_mib=40960 "
            "mig=1\n"
            "mig gpu=1 uuid=MIG-a profile=0 mem_mib=4864 start=0 gi=7\n");
  std::unique_ptr<NvidiaGpus> gpus = Open(v1::MPS);
  ASSERT_NE(gpus, nullptr);
  Observation seen;
  ASSERT_OK(gpus->Observe(seen));
  ASSERT_EQ(seen.devices.size(), 2u);
  EXPECT_EQ(seen.devices[0].sharing(), v1::MPS);
  EXPECT_EQ(seen.devices[1].sharing(), v1::GPU_SHARING_NONE);
}

TEST(GpuSharingOfTest, FlagElseTheDevicePluginsLabel) {
  const std::map<std::string, std::string> mps = {
      {"nvidia.com/gpu.sharing-strategy", "mps"}};
  EXPECT_THAT(GpuSharingOf("auto", {}), IsOkAndHolds(v1::GPU_SHARING_NONE));
  EXPECT_THAT(GpuSharingOf("auto", mps), IsOkAndHolds(v1::MPS));
  EXPECT_THAT(GpuSharingOf("auto", {{"nvidia.com/gpu.sharing-strategy",
                                     "time-slicing"}}),
              IsOkAndHolds(v1::TIME_SLICING));
  EXPECT_THAT(GpuSharingOf("none", mps), IsOkAndHolds(v1::GPU_SHARING_NONE));
  EXPECT_THAT(GpuSharingOf("time-slicing", {}), IsOkAndHolds(v1::TIME_SLICING));
  EXPECT_THAT(GpuSharingOf("MPS", {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--gpu_sharing \"MPS\"")));
  EXPECT_THAT(
      GpuSharingOf("auto", {{"nvidia.com/gpu.sharing-strategy", "shared"}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("nvidia.com/gpu.sharing-strategy=\"shared\"")));
}

TEST_F(NvidiaGpusTest, HealthFromPagesRemappingAndCriticalXidsOnly) {
  const std::string healthy =
      "gpu uuid=GPU-0 name=g memory_mib=1\n"
      "gpu uuid=GPU-1 name=g memory_mib=1\n"
      "gpu uuid=GPU-2 name=g memory_mib=1\n"
      "gpu uuid=GPU-3 name=g memory_mib=1\n"
      "gpu uuid=GPU-4 name=g memory_mib=1\n";
  WriteFile(scenario_, healthy);
  std::unique_ptr<NvidiaGpus> gpus = Open();
  ASSERT_NE(gpus, nullptr);
  Observation before;
  ASSERT_OK(gpus->Observe(before));
  EXPECT_THAT(before.unhealthy, IsEmpty());

  WriteFile(scenario_,
            "gpu uuid=GPU-0 name=g memory_mib=1 retired_pending=1\n"
            "gpu uuid=GPU-1 name=g memory_mib=1 remap_failure=1\n"
            "gpu uuid=GPU-2 name=g memory_mib=1 xid=79\n"
            "gpu uuid=GPU-3 name=g memory_mib=1 xid=13\n"
            "gpu uuid=GPU-4 name=g memory_mib=1 lost=1\n");
  Observation sick;
  ASSERT_OK(gpus->Observe(sick));
  // XID 13 is the application's fault; the lost GPU is gone from the
  // inventory.
  EXPECT_THAT(sick.unhealthy, UnorderedElementsAre("GPU-0", "GPU-1", "GPU-2"));
  ASSERT_EQ(sick.devices.size(), 4u);
  EXPECT_EQ(sick.devices[3].id(), "GPU-3");

  // Pages and remapping clear with the condition; an XID holds until the
  // agent restarts (the GPU needs a reset).
  WriteFile(scenario_, healthy);
  Observation after;
  ASSERT_OK(gpus->Observe(after));
  EXPECT_THAT(after.unhealthy, ElementsAre("GPU-2"));
  EXPECT_EQ(after.devices.size(), 5u);
}

TEST_F(NvidiaGpusTest, AGpuThatStopsAnsweringKeepsItsShapeAndIsUnhealthy) {
  auto scenario = [](const std::string& extra) {
    return "gpu uuid=GPU-a100 name=\"NVIDIA A100-SXM4-40GB\" memory_mib=40960 "
           "mig=1" +
           extra +
           "\n"
           "mig gpu=0 uuid=MIG-a profile=0 mem_mib=4864 start=0 gi=7\n"
           "gpu uuid=GPU-b name=g memory_mib=1 temp=4000000000\n";
  };
  WriteFile(scenario_, scenario(""));
  std::unique_ptr<NvidiaGpus> gpus = Open();
  ASSERT_NE(gpus, nullptr);
  Observation before;
  ASSERT_OK(gpus->Observe(before));
  EXPECT_THAT(before.unhealthy, IsEmpty());
  // An impossible reading is left out, not sent for the server to refuse.
  EXPECT_EQ(before.stats.at("GPU-b").temperature_celsius(), 0);

  // Its handle, UUID and name still read; every other query says
  // GPU_IS_LOST (the MIG scan included, which must end).
  WriteFile(scenario_, scenario(" broken=1"));
  Observation broken;
  ASSERT_OK(gpus->Observe(broken));
  EXPECT_THAT(broken.unhealthy, ElementsAre("GPU-a100"));
  ASSERT_EQ(broken.devices.size(), 2u);
  EXPECT_EQ(broken.devices[0].DebugString(), before.devices[0].DebugString())
      << "a failed read must not change the inventory";
  EXPECT_FALSE(broken.stats.contains("GPU-a100"));
}

// GPU links (agent/gpu_links.h) on boards described to the fake NVML.

// `n` GPUs, GPU-0 to GPU-<n-1>, each gpu line ending with keys(i); then
// `extra` lines.
std::string Board(int n, const std::function<std::string(int)>& keys,
                  const std::string& extra = "") {
  std::string text;
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(&text, "gpu uuid=GPU-", i,
                    " name=\"NVIDIA H100 80GB HBM3\" memory_mib=81559 ",
                    keys(i), "\n");
  }
  return text + extra;
}

// Each link of `links`, "<peer> <kind> <count>", in the order reported.
template <typename Range>
std::vector<std::string> Describe(const Range& links) {
  std::vector<std::string> out;
  for (const v1::DeviceLink& l : links) {
    out.push_back(
        absl::StrCat(l.peer_device_id(), " ", l.kind(), " ", l.count()));
  }
  return out;
}
std::vector<std::string> Links(const v1::Device& d) {
  return Describe(d.links());
}

// An HGX H100 board: 8 GPUs, each with 18 NVLinks to the NVSwitches, four
// GPUs per CPU and two per PCIe switch; GPU 3 has only 12 switch links (say,
// six of them down).
std::string HgxBoard(const std::string& extra = "") {
  return Board(
      8,
      [](int i) {
        return absl::StrCat("nvswitch_links=", i == 3 ? 12 : 18,
                            " pcie_switch=", i / 2, " numa=", i / 4);
      },
      extra);
}

TEST_F(NvidiaGpusTest, NvSwitchLinksEveryPairAtTheFewerSwitchLinks) {
  WriteFile(scenario_, HgxBoard());
  std::unique_ptr<NvidiaGpus> gpus = Open();
  ASSERT_NE(gpus, nullptr);
  Observation seen;
  ASSERT_OK(gpus->Observe(seen));
  ASSERT_EQ(seen.devices.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    SCOPED_TRACE(i);
    // Every peer over the fabric, never the PCIe path the pair also has.
    std::vector<std::string> want;
    for (int j = 0; j < 8; ++j) {
      if (j == i) continue;
      want.push_back(
          absl::StrCat("GPU-", j, " NVLINK ", i == 3 || j == 3 ? 12 : 18));
    }
    EXPECT_THAT(Links(seen.devices[i]), ElementsAreArray(want));
  }
}

TEST_F(NvidiaGpusTest, ALinkNvmlRefusesIsLeftOut) {
  // GPU 5's link states fail (UNKNOWN): it has no NVLink, and its peers are
  // placed by the PCIe tree instead. GPU 0's link 0 has no remote type: its
  // remote PCI address (a switch's) matches no GPU, so that link is lost.
  WriteFile(scenario_,
            HgxBoard("fail call=nvmlDeviceGetNvLinkState gpu=5 error=999\n"
                     "fail call=nvmlDeviceGetNvLinkRemoteDeviceType gpu=0 "
                     "start=0 error=999\n"));
  std::unique_ptr<NvidiaGpus> gpus = Open();
  ASSERT_NE(gpus, nullptr);
  Observation seen;
  ASSERT_OK(gpus->Observe(seen));
  ASSERT_EQ(seen.devices.size(), 8u);
  EXPECT_THAT(seen.unhealthy, IsEmpty()) << "links are no health signal";
  EXPECT_THAT(
      Links(seen.devices[0]),
      ElementsAre("GPU-1 NVLINK 17", "GPU-2 NVLINK 17", "GPU-3 NVLINK 12",
                  "GPU-4 NVLINK 17", "GPU-6 NVLINK 17", "GPU-7 NVLINK 17"));
  EXPECT_THAT(Links(seen.devices[5]),
              ElementsAre("GPU-4 PCIE_SWITCH 0", "GPU-6 SAME_NUMA 0",
                          "GPU-7 SAME_NUMA 0"));
  EXPECT_THAT(
      Links(seen.devices[4]),
      ElementsAre("GPU-0 NVLINK 17", "GPU-1 NVLINK 18", "GPU-2 NVLINK 18",
                  "GPU-3 NVLINK 12", "GPU-5 PCIE_SWITCH 0", "GPU-6 NVLINK 18",
                  "GPU-7 NVLINK 18"));
}

// The board of NVIDIA/k8s-device-plugin issue #546 (nvidia-smi topo -m): NV12
// pairs (0,2), (1,3), (4,5), (6,7), GPUs 0-3 on NUMA node 0 and 4-7 on 1. The
// PCIe switches (0 and 1 on one, 2 and 3, 4 and 5, 6 and 7 on the others) are
// this scenario's assumption, not the (whose other pairs show SYS),
// so that every kind shows.
std::string NvLinkPairsBoard() {
  return Board(
      8,
      [](int i) {
        return absl::StrCat("pcie_switch=", i / 2, " numa=", i / 4);
      },
      "nvlink a=0 b=2 links=12\n"
      "nvlink a=1 b=3 links=12\n"
      "nvlink a=4 b=5 links=12\n"
      "nvlink a=6 b=7 links=12\n");
}

TEST_F(NvidiaGpusTest, NvLinkPairsThenPcieSwitchThenNumaNode) {
  WriteFile(scenario_, NvLinkPairsBoard());
  std::unique_ptr<NvidiaGpus> gpus = Open();
  ASSERT_NE(gpus, nullptr);
  Observation seen;
  ASSERT_OK(gpus->Observe(seen));
  ASSERT_EQ(seen.devices.size(), 8u);
  // Nothing to GPUs 4-7: another CPU.
  EXPECT_THAT(Links(seen.devices[0]),
              ElementsAre("GPU-1 PCIE_SWITCH 0", "GPU-2 NVLINK 12",
                          "GPU-3 SAME_NUMA 0"));
  EXPECT_THAT(Links(seen.devices[2]),
              ElementsAre("GPU-0 NVLINK 12", "GPU-1 SAME_NUMA 0",
                          "GPU-3 PCIE_SWITCH 0"));
  // NVLinked and on one PCIe switch: the NVLink alone.
  EXPECT_THAT(
      Links(seen.devices[5]),
      ElementsAre("GPU-4 NVLINK 12", "GPU-6 SAME_NUMA 0", "GPU-7 SAME_NUMA 0"));
  EXPECT_THAT(
      Links(seen.devices[7]),
      ElementsAre("GPU-4 SAME_NUMA 0", "GPU-5 SAME_NUMA 0", "GPU-6 NVLINK 12"));
}

TEST_F(NvidiaGpusTest, PcieBoardLinksBySwitchThenNumaNode) {
  WriteFile(scenario_, Board(8, [](int i) {
              return absl::StrCat("pcie_switch=", i / 4, " numa=0");
            }));
  std::unique_ptr<NvidiaGpus> gpus = Open();
  ASSERT_NE(gpus, nullptr);
  Observation seen;
  ASSERT_OK(gpus->Observe(seen));
  ASSERT_EQ(seen.devices.size(), 8u);
  EXPECT_THAT(Links(seen.devices[0]),
              ElementsAre("GPU-1 PCIE_SWITCH 0", "GPU-2 PCIE_SWITCH 0",
                          "GPU-3 PCIE_SWITCH 0", "GPU-4 SAME_NUMA 0",
                          "GPU-5 SAME_NUMA 0", "GPU-6 SAME_NUMA 0",
                          "GPU-7 SAME_NUMA 0"));
  EXPECT_THAT(
      Links(seen.devices[5]),
      ElementsAre("GPU-0 SAME_NUMA 0", "GPU-1 SAME_NUMA 0", "GPU-2 SAME_NUMA 0",
                  "GPU-3 SAME_NUMA 0", "GPU-4 PCIE_SWITCH 0",
                  "GPU-6 PCIE_SWITCH 0", "GPU-7 PCIE_SWITCH 0"));
}

TEST_F(NvidiaGpusTest, NoTopologyNoLinks) {
  // No NVLink (NOT_SUPPORTED on every link) and no common ancestor
  // (NOT_SUPPORTED) on the boards of the other tests; a GPU placed on a NUMA
  // node has no link to one that is not.
  WriteFile(scenario_,
            "gpu uuid=GPU-t4 name=\"Tesla T4\" memory_mib=15360\n"
            "gpu uuid=GPU-a100 name=\"NVIDIA A100-SXM4-40GB\" memory_mib=40960 "
            "mig=1\n"
            "mig gpu=1 uuid=MIG-a profile=0 mem_mib=4864 start=0 gi=7\n"
            "gpu uuid=GPU-numa name=g memory_mib=1 numa=0\n");
  std::unique_ptr<NvidiaGpus> gpus = Open();
  ASSERT_NE(gpus, nullptr);
  Observation seen;
  ASSERT_OK(gpus->Observe(seen));
  ASSERT_EQ(seen.devices.size(), 3u);
  for (const v1::Device& d : seen.devices) {
    EXPECT_THAT(d.links(), IsEmpty()) << d.id();
  }
}

TEST_F(NvidiaGpusTest, AFailedReadNeverChangesTheLinks) {
  WriteFile(scenario_, NvLinkPairsBoard());
  std::unique_ptr<NvidiaGpus> gpus = Open();
  ASSERT_NE(gpus, nullptr);
  Observation before;
  ASSERT_OK(gpus->Observe(before));
  ASSERT_EQ(before.devices.size(), 8u);
  ASSERT_THAT(Links(before.devices[0]),
              ElementsAre("GPU-1 PCIE_SWITCH 0", "GPU-2 NVLINK 12",
                          "GPU-3 SAME_NUMA 0"));

  // The same GPUs, every link query failing, the NVLinks gone and GPU 0
  // broken (reported as last read whole): the inventory does not change.
  WriteFile(scenario_,
            Board(
                8,
                [](int i) {
                  return absl::StrCat("pcie_switch=", i / 2, " numa=", i / 4,
                                      i == 0 ? " broken=1" : "");
                },
                "fail call=nvmlDeviceGetNvLinkState error=999\n"
                "fail call=nvmlDeviceGetTopologyCommonAncestor error=999\n"
                "fail call=nvmlDeviceGetPciInfo_v3 error=999\n"));
  // Enough passes that the links are read again (and fail).
  for (int pass = 0; pass < GpuLinks::kPassesBetweenReads; ++pass) {
    Observation failing;
    ASSERT_OK(gpus->Observe(failing));
    EXPECT_THAT(failing.unhealthy, ElementsAre("GPU-0"));
    ASSERT_EQ(failing.devices.size(), 8u);
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(failing.devices[i].DebugString(),
                before.devices[i].DebugString())
          << "a failed read must not change the inventory (pass " << pass
          << ")";
    }
  }

  // GPU 7 gone: read again, without the NVLinks now, and nothing to GPU 7.
  WriteFile(scenario_, Board(7, [](int i) {
              return absl::StrCat("pcie_switch=", i / 2, " numa=", i / 4);
            }));
  Observation after;
  ASSERT_OK(gpus->Observe(after));
  ASSERT_EQ(after.devices.size(), 7u);
  EXPECT_THAT(Links(after.devices[0]),
              ElementsAre("GPU-1 PCIE_SWITCH 0", "GPU-2 SAME_NUMA 0",
                          "GPU-3 SAME_NUMA 0"));
  EXPECT_THAT(Links(after.devices[6]),
              ElementsAre("GPU-4 SAME_NUMA 0", "GPU-5 SAME_NUMA 0"));
}

// Every GPU of the scenario, as GpuLinks::Read takes them, named GPU-<i>.
std::vector<GpuLinks::Gpu> HandlesOf(const NvmlLibrary& nvml) {
  unsigned int count = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  std::vector<GpuLinks::Gpu> gpus;
  for (unsigned int i = 0; i < count; ++i) {
    GpuLinks::Gpu g;
    EXPECT_EQ(nvml.nvmlDeviceGetHandleByIndex_v2(i, &g.handle), NVML_SUCCESS);
    g.uuid = absl::StrCat("GPU-", i);
    gpus.push_back(g);
  }
  return gpus;
}

TEST_F(NvidiaGpusTest, GpuLinksReadNvmlOncePerListOfGpus) {
  WriteFile(scenario_, NvLinkPairsBoard());
  absl::StatusOr<std::unique_ptr<NvmlLibrary>> nvml =
      NvmlLibrary::Load(FAKE_NVML_PATH);
  ASSERT_OK(nvml);
  std::vector<GpuLinks::Gpu> all;
  ASSERT_NO_FATAL_FAILURE(all = HandlesOf(**nvml));
  ASSERT_EQ(all.size(), 8u);
  GpuLinks links(**nvml);
  EXPECT_EQ(links.Read(all).at("GPU-0").size(), 3u);
  EXPECT_EQ(links.Read(all).at("GPU-0").size(), 3u);
  EXPECT_EQ(links.reads(), 1);
  const std::vector<GpuLinks::Gpu> two = {all[0], all[2]};
  const GpuLinks::LinksByUuid& pair = links.Read(two);
  EXPECT_EQ(links.reads(), 2);
  ASSERT_EQ(pair.size(), 2u);
  EXPECT_THAT(Describe(pair.at("GPU-2")), ElementsAre("GPU-0 NVLINK 12"));
  EXPECT_THAT(Describe(pair.at("GPU-0")), ElementsAre("GPU-2 NVLINK 12"));
  EXPECT_THAT(links.Read({}), IsEmpty());
  EXPECT_EQ(links.reads(), 3);
}

// NVML is read again while a read failed, and every kPassesBetweenReads
// calls (an NVSwitch fabric trained after the agent started); a failed read
// never replaces a complete one.
TEST_F(NvidiaGpusTest, GpuLinksAreReadAgainUntilCompleteAndEveryFewPasses) {
  // GPU 0's link states fail: its NVLink to GPU 2 is not seen.
  WriteFile(scenario_, NvLinkPairsBoard() +
                           "fail call=nvmlDeviceGetNvLinkState error=999 "
                           "gpu=0\n");
  absl::StatusOr<std::unique_ptr<NvmlLibrary>> nvml =
      NvmlLibrary::Load(FAKE_NVML_PATH);
  ASSERT_OK(nvml);
  std::vector<GpuLinks::Gpu> all;
  ASSERT_NO_FATAL_FAILURE(all = HandlesOf(**nvml));
  ASSERT_EQ(all.size(), 8u);
  GpuLinks links(**nvml);
  // GPU 2 sees its end of the pair: the larger count of the two ends.
  EXPECT_THAT(Describe(links.Read(all).at("GPU-0")),
              ElementsAre("GPU-1 PCIE_SWITCH 0", "GPU-2 NVLINK 12",
                          "GPU-3 SAME_NUMA 0"));
  EXPECT_EQ(links.reads(), 1);
  (void)links.Read(all);  // incomplete: read again
  EXPECT_EQ(links.reads(), 2);
  WriteFile(scenario_, NvLinkPairsBoard());
  ASSERT_EQ(HandlesOf(**nvml).size(), 8u);  // re-reads the scenario
  (void)links.Read(all);                    // complete now
  EXPECT_EQ(links.reads(), 3);
  for (int i = 1; i < GpuLinks::kPassesBetweenReads; ++i) {
    (void)links.Read(all);
  }
  EXPECT_EQ(links.reads(), 3);
  // The fabric trained: every GPU reaches the NVSwitches with 18 links. Read
  // at the next period.
  WriteFile(scenario_, Board(8, [](int i) {
              return absl::StrCat("pcie_switch=", i / 2, " numa=", i / 4,
                                  " nvswitch_links=18");
            }));
  ASSERT_EQ(HandlesOf(**nvml).size(), 8u);  // re-reads the scenario
  EXPECT_THAT(
      Describe(links.Read(all).at("GPU-7")),
      ElementsAre("GPU-0 NVLINK 18", "GPU-1 NVLINK 18", "GPU-2 NVLINK 18",
                  "GPU-3 NVLINK 18", "GPU-4 NVLINK 18", "GPU-5 NVLINK 18",
                  "GPU-6 NVLINK 18"));
  EXPECT_EQ(links.reads(), 4);
  // A failing read at the period after: the last complete answer stands.
  WriteFile(scenario_, Board(
                           8,
                           [](int i) {
                             return absl::StrCat("pcie_switch=", i / 2,
                                                 " numa=", i / 4);
                           },
                           "fail call=nvmlDeviceGetPciInfo_v3 error=999\n"));
  ASSERT_EQ(HandlesOf(**nvml).size(), 8u);  // re-reads the scenario
  for (int i = 0; i < GpuLinks::kPassesBetweenReads; ++i) {
    (void)links.Read(all);
  }
  EXPECT_EQ(links.reads(), 5);
  // Kept, and not read again before the next period.
  EXPECT_THAT(
      Describe(links.Read(all).at("GPU-7")),
      ElementsAre("GPU-0 NVLINK 18", "GPU-1 NVLINK 18", "GPU-2 NVLINK 18",
                  "GPU-3 NVLINK 18", "GPU-4 NVLINK 18", "GPU-5 NVLINK 18",
                  "GPU-6 NVLINK 18"));
  EXPECT_EQ(links.reads(), 5);
}

TEST_F(NvidiaGpusTest, LoadErrorsSayWhy) {
  EXPECT_THAT(NvmlLibrary::Load(dir_.File("missing.so")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.so")));
  ::setenv("FAKE_NVML_INIT_ERROR", "1", 1);
  EXPECT_THAT(NvmlLibrary::Load(FAKE_NVML_PATH),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("nvmlInit_v2: Driver Not Loaded")));
  // A library without NVML's symbols.
  EXPECT_THAT(NvmlLibrary::Load("libm.so.6"),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("has no nvmlInit_v2")));
}

// A sysfs tree with Google PCI functions, and device nodes (/dev/null stands
// in for a character device).
class TpuChipsTest : public testing::Test {
 protected:
  // The environment outranks labels and the PCI table: every test starts and
  // ends without GKE's variables.
  void SetUp() override { ClearEnvironment(); }
  void TearDown() override { ClearEnvironment(); }
  static void ClearEnvironment() {
    ::unsetenv("TPU_TOPOLOGY");
    ::unsetenv("TPU_WORKER_HOSTNAMES");
  }
  void AddFunction(const std::string& address, const std::string& device,
                   const std::string& iommu_group,
                   const char* vendor = "0x1ae0") {
    const std::filesystem::path d =
        std::filesystem::path(sys_) / "bus/pci/devices" / address;
    std::filesystem::create_directories(d);
    std::ofstream(d / "vendor") << vendor << "\n";
    std::ofstream(d / "device") << device << "\n";
    std::ofstream(d / "subsystem_device") << "0x0000\n";
    if (!iommu_group.empty()) {
      std::filesystem::create_directory_symlink(
          "../../../kernel/iommu_groups/" + iommu_group, d / "iommu_group");
    }
  }
  void AddDeviceNode(const std::string& name) {
    const std::filesystem::path p = std::filesystem::path(dev_) / name;
    std::filesystem::create_directories(p.parent_path());
    std::filesystem::create_symlink("/dev/null", p);
  }
  TpuChips::Options Options() {
    TpuChips::Options o;
    o.node_name = "tpu-node";
    o.sys_dir = sys_;
    o.dev_dir = dev_;
    return o;
  }

  TempDir dir_;
  std::string sys_ = dir_.File("sys");
  std::string dev_ = dir_.File("dev");
};

TEST_F(TpuChipsTest, V5eChipsFromPciWithVfioNodes) {
  for (int i = 0; i < 4; ++i) {
    AddFunction("0000:00:0" + std::to_string(4 + i) + ".0", "0x0063",
                std::to_string(10 + i));
  }
  AddFunction("0000:00:01.0", "0x1234", "", "0x10de");  // not Google
  AddDeviceNode("vfio/10");
  AddDeviceNode("vfio/11");
  AddDeviceNode("vfio/12");
  AddDeviceNode("accel0");  // ignored: v5e uses VFIO
  TpuChips chips(Options());
  Observation seen;
  ASSERT_OK(chips.Observe(seen));
  ASSERT_EQ(seen.devices.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const v1::Device& d = seen.devices[i];
    EXPECT_EQ(d.id(), "tpu-node-tpu" + std::to_string(i));
    EXPECT_EQ(d.device_class(), v1::GOOGLE_TPU);
    EXPECT_EQ(d.model(), "tpu-v5-lite-podslice");
    EXPECT_EQ(d.index(), i);
    EXPECT_EQ(d.tpu_topology(), "2x2");  // single host, 4 chips
    EXPECT_EQ(d.tpu_slice_id(), "tpu-node");
  }
  // The fourth chip's /dev/vfio/13 is missing.
  EXPECT_THAT(seen.unhealthy, ElementsAre("tpu-node-tpu3"));
}

TEST_F(TpuChipsTest, OneChipPerPciSlotAndLabelsOverTheTable) {
  // tpu7x: two functions per chip.
  AddFunction("0000:c0:02.0", "0x0076", "1");
  AddFunction("0000:c0:02.1", "0x0076", "2");
  AddDeviceNode("vfio/1");
  TpuChips::Options o = Options();
  o.labels = {{"cloud.google.com/gke-tpu-accelerator", "tpu7x"},
              {"cloud.google.com/gke-tpu-topology", "2x2x1"}};
  o.slice_id = "slice-a";
  TpuChips chips(o);
  Observation seen;
  ASSERT_OK(chips.Observe(seen));
  ASSERT_EQ(seen.devices.size(), 1u);
  EXPECT_EQ(seen.devices[0].tpu_topology(), "2x2x1");
  EXPECT_EQ(seen.devices[0].tpu_slice_id(), "slice-a");
  EXPECT_THAT(seen.unhealthy, IsEmpty());
}

TEST_F(TpuChipsTest, V4ChipsUseAccelNodesAndTheEnvironment) {
  ::setenv("TPU_TOPOLOGY", "2x2x2", 1);
  ::setenv("TPU_WORKER_HOSTNAMES", "host-a,host-b", 1);
  AddFunction("0000:00:04.0", "0x005e", "");
  AddFunction("0000:00:05.0", "0x005e", "");
  AddDeviceNode("accel0");
  std::filesystem::create_directories(std::filesystem::path(dev_) /
                                      "accel1");  // NVIDIA's directory
  TpuChips chips(Options());
  Observation seen;
  ASSERT_OK(chips.Observe(seen));
  ASSERT_EQ(seen.devices.size(), 2u);
  EXPECT_EQ(seen.devices[0].model(), "tpu-v4-podslice");
  EXPECT_EQ(seen.devices[0].tpu_topology(), "2x2x2");
  EXPECT_EQ(seen.devices[0].tpu_slice_id(), "host-a");
  EXPECT_THAT(seen.unhealthy, ElementsAre("tpu-node-tpu1"));
}

TEST_F(TpuChipsTest, NoGoogleFunctionsNoChips) {
  TpuChips chips(Options());  // no sysfs tree at all
  Observation seen;
  ASSERT_OK(chips.Observe(seen));
  EXPECT_THAT(seen.devices, IsEmpty());
}

// Walks the PCI table: every generation that GKE offers maps to a model the
// registry knows as a TPU, with topologies of its own.
TEST(TpuPciIdsTest, EveryModelIsARegistryTpuType) {
  absl::StatusOr<std::shared_ptr<const AcceleratorTypeSet>> registry =
      LoadAcceleratorTypes("");
  ASSERT_OK(registry);
  for (const TpuPciId& id : TpuPciIds()) {
    SCOPED_TRACE(id.generation);
    const AcceleratorType* t = (*registry)->Find(id.model);
    if (std::string(id.generation) == "v2" ||
        std::string(id.generation) == "v3") {
      EXPECT_EQ(t, nullptr) << "the table says v2 and v3 have no type";
      continue;
    }
    ASSERT_NE(t, nullptr);
    EXPECT_TRUE(t->is_tpu());
    EXPECT_EQ(t->canonical_model, id.model);
  }
}

TEST(InventoryFileTest, AddsListedDevicesAndRefusesOutputFields) {
  TempDir dir;
  const std::string path = dir.File("inventory");
  WriteFile(path,
            "devices { id: \"mi300x-0\" device_class: AMD_GPU model: "
            "\"amd-mi300x\" index: 0 }\n"
            "devices { id: \"mi300x-1\" device_class: AMD_GPU model: "
            "\"amd-mi300x\" index: 1 }\n");
  InventoryFile file(path);
  Observation seen;
  ASSERT_OK(file.Observe(seen));
  ASSERT_EQ(seen.devices.size(), 2u);
  EXPECT_EQ(seen.devices[1].id(), "mi300x-1");
  EXPECT_EQ(seen.devices[1].device_class(), v1::AMD_GPU);

  WriteFile(path, "devices { id: \"x\" model: \"m\" healthy: true }\n");
  Observation again;
  EXPECT_THAT(file.Observe(again),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("devices[0] (x): canonical_model, healthy")));
  WriteFile(path, "devices { id: \"x\" model: }\n");
  EXPECT_THAT(file.Observe(again), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr(path + ":1:")));
  EXPECT_THAT(InventoryFile(dir.File("none")).Observe(again),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("none")));
}

TEST(ParseLabelsTest, PlainAndDownwardApiForms) {
  EXPECT_THAT(
      *ParseLabels("# comment\n\na=1\nzone=\"us-east1-b\"\n  k = \n", "f"),
      ElementsAre(Pair("a", "1"), Pair("k", ""), Pair("zone", "us-east1-b")));
  EXPECT_THAT(ParseLabels("a=1\nbroken\n", "labels.txt"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("labels.txt:2: expected key=value")));
}

// A source that reports fixed devices.
class FixedSource final : public DeviceSource {
 public:
  explicit FixedSource(std::vector<std::string> ids) : ids_(std::move(ids)) {}
  absl::Status Observe(Observation& out) override {
    for (const std::string& id : ids_) {
      v1::Device d;
      d.set_id(id);
      out.devices.push_back(d);
      out.stats[id].set_utilization(0.5);
    }
    return absl::OkStatus();
  }

 private:
  std::vector<std::string> ids_;
};

TEST(ObserveAllTest, MergesSourcesStampsReadingsAndRefusesDuplicates) {
  std::vector<std::unique_ptr<DeviceSource>> sources;
  sources.push_back(
      std::make_unique<FixedSource>(std::vector<std::string>{"a", "b"}));
  sources.push_back(
      std::make_unique<FixedSource>(std::vector<std::string>{"c"}));
  const absl::Time now = absl::FromUnixSeconds(1700000000);
  absl::StatusOr<Observation> seen = ObserveAll(sources, now);
  ASSERT_OK(seen);
  ASSERT_EQ(seen->devices.size(), 3u);
  EXPECT_EQ(seen->stats.at("c").time().seconds(), 1700000000);

  sources.push_back(
      std::make_unique<FixedSource>(std::vector<std::string>{"b"}));
  EXPECT_THAT(ObserveAll(sources, now),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("\"b\" is reported twice")));
}

TEST(BackoffTest, DoublesWithJitterUpToTheCapAndResets) {
  Backoff backoff(absl::Seconds(1), absl::Seconds(5));
  const absl::Duration bounds[] = {absl::Seconds(1), absl::Seconds(2),
                                   absl::Seconds(4), absl::Seconds(5),
                                   absl::Seconds(5)};
  for (absl::Duration d : bounds) {
    const absl::Duration next = backoff.Next();
    EXPECT_GE(next, d / 2);
    EXPECT_LE(next, d);
  }
  backoff.Reset();
  EXPECT_LE(backoff.Next(), absl::Seconds(1));
  // Jitter: a fleet restarted together does not retry in step.
  std::set<int64_t> seen;
  for (int i = 0; i < 20; ++i) {
    Backoff b(absl::Seconds(1), absl::Seconds(1));
    seen.insert(absl::ToInt64Microseconds(b.Next()));
  }
  EXPECT_GT(seen.size(), 10u);
}

}  // namespace
}  // namespace accelsched::agent
