#include "core/name_table.h"

#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "core/mig_geometry.h"
#include "core/tpu_topology.h"
#include "gtest/gtest.h"

namespace accelsched {
namespace {

TEST(NameTableTest, EveryAliasResolvesToItsModelInAnyCase) {
  for (const ModelAlias& a : AllModelAliases()) {
    for (const std::string& spelling :
         {std::string(a.spelling), absl::AsciiStrToUpper(a.spelling),
          absl::AsciiStrToLower(a.spelling),
          "  " + std::string(a.spelling) + " "}) {
      const ModelInfo* m = FindModel(spelling);
      ASSERT_NE(m, nullptr)
          << "alias \"" << spelling << "\" resolves to nothing";
      EXPECT_EQ(m->canonical, a.canonical) << spelling;
    }
  }
}

TEST(NameTableTest, EveryCanonicalNameResolvesToItself) {
  for (const ModelInfo& m : AllModels()) {
    const ModelInfo* found = FindModel(m.canonical);
    ASSERT_NE(found, nullptr) << m.canonical;
    EXPECT_EQ(found, &m);
    EXPECT_EQ(FindModel(absl::AsciiStrToUpper(m.canonical)), &m);
  }
}

// The store keeps an allocation's acceptable models joined by "," (schema 4),
// so no canonical name may be empty or hold one.
TEST(NameTableTest, CanonicalNamesCanBeJoinedByCommas) {
  for (const ModelInfo& m : AllModels()) {
    EXPECT_FALSE(m.canonical.empty());
    EXPECT_EQ(m.canonical.find(','), absl::string_view::npos) << m.canonical;
  }
}

TEST(NameTableTest, CanonicalNamesAndSpellingsAreUnique) {
  std::set<std::string> seen;
  for (const ModelInfo& m : AllModels()) {
    EXPECT_TRUE(seen.insert(absl::AsciiStrToLower(m.canonical)).second)
        << m.canonical;
  }
  for (const ModelAlias& a : AllModelAliases()) {
    EXPECT_TRUE(seen.insert(absl::AsciiStrToLower(a.spelling)).second)
        << "\"" << a.spelling
        << "\" is listed twice or is also a canonical name";
  }
}

TEST(NameTableTest, EveryModelRowIsConsistentWithTheOtherTables) {
  for (const ModelInfo& m : AllModels()) {
    if (!m.mig_family.empty()) {
      EXPECT_NE(FindMigFamily(m.mig_family), nullptr) << m.canonical;
      EXPECT_EQ(m.device_class, DeviceClass::kNvidiaGpu) << m.canonical;
    }
    EXPECT_EQ(!m.tpu_generation.empty(),
              m.device_class == DeviceClass::kGoogleTpu)
        << m.canonical;
    if (!m.tpu_generation.empty()) {
      EXPECT_NE(FindTpuGeneration(m.tpu_generation), nullptr) << m.canonical;
    }
  }
}

// The spellings that clients are promised (issue #2, API.md), with the model
// each means.
TEST(NameTableTest, PromisedSpellingsMapToTheRightModel) {
  const std::pair<const char*, const char*> kCases[] = {
      {"nvidia-tesla-k80", "nvidia-tesla-k80"},
      {"nvidia-tesla-m60", "nvidia-tesla-m60"},
      {"nvidia-tesla-p4", "nvidia-tesla-p4"},
      {"nvidia-tesla-p100", "nvidia-tesla-p100"},
      {"nvidia-tesla-t4", "nvidia-tesla-t4"},
      {"nvidia-tesla-v100", "nvidia-tesla-v100"},
      {"nvidia-tesla-a100", "nvidia-tesla-a100"},
      {"nvidia-a100-80gb", "nvidia-a100-80gb"},
      {"nvidia-a10g", "nvidia-a10g"},
      {"nvidia-l4", "nvidia-l4"},
      {"nvidia-l4-vws", "nvidia-l4-vws"},
      {"nvidia-l40s", "nvidia-l40s"},
      {"nvidia-h100", "nvidia-h100"},
      {"nvidia-h200", "nvidia-h200"},
      {"nvidia-rtx-pro-6000", "nvidia-rtx-pro-6000"},
      {"tpu-v5-lite-podslice", "tpu-v5-lite-podslice"},
      {"tpu-v5p-slice", "tpu-v5p-slice"},
      {"tpu-v6e-slice", "tpu-v6e-slice"},
      {"T4", "nvidia-tesla-t4"},
      {"A100", "nvidia-tesla-a100"},
      {"A100 80G", "nvidia-a100-80gb"},
      {"H100", "nvidia-h100"},
      {"H200", "nvidia-h200"},
      {"B200", "nvidia-b200"},
      {"GB200", "nvidia-gb200"},
      {"L4", "nvidia-l4"},
      {"L40s", "nvidia-l40s"},
      {"V5E", "tpu-v5-lite-podslice"},
      {"V5P", "tpu-v5p-slice"},
      {"V6E", "tpu-v6e-slice"},
      {"MI300X", "amd-mi300x"},
      {"TRN1", "aws-trn1"},
      {"INF2", "aws-inf2"},
      {"GAUDI1", "habana-gaudi1"},
      {"NVIDIA A100-SXM4-40GB", "nvidia-tesla-a100"},
      {"NVIDIA A100-SXM4-80GB", "nvidia-a100-80gb"},
      {"NVIDIA A100 80GB PCIe", "nvidia-a100-80gb"},
      {"NVIDIA H100 80GB HBM3", "nvidia-h100"},
      {"NVIDIA H200", "nvidia-h200"},
      {"Tesla T4", "nvidia-tesla-t4"},
      {"Tesla V100-SXM2-32GB", "nvidia-tesla-v100"},
      {"nvidia-TESLA-a100", "nvidia-tesla-a100"},
  };
  for (const auto& [spelling, canonical] : kCases) {
    const ModelInfo* m = FindModel(spelling);
    ASSERT_NE(m, nullptr) << spelling;
    EXPECT_EQ(m->canonical, canonical) << spelling;
  }
}

TEST(NameTableTest, DeviceClassesOfEachFamily) {
  EXPECT_EQ(FindModel("MI300X")->device_class, DeviceClass::kAmdGpu);
  EXPECT_EQ(FindModel("TRN1")->device_class, DeviceClass::kAmazonNeuron);
  EXPECT_EQ(FindModel("GAUDI1")->device_class, DeviceClass::kHabanaGaudi);
  EXPECT_EQ(FindModel("V5P")->device_class, DeviceClass::kGoogleTpu);
  EXPECT_EQ(FindModel("H100")->device_class, DeviceClass::kNvidiaGpu);
}

TEST(NameTableTest, A100MemorySizesAreDifferentModels) {
  EXPECT_NE(FindModel("NVIDIA A100-SXM4-40GB"),
            FindModel("NVIDIA A100-SXM4-80GB"));
  EXPECT_EQ(FindModel("NVIDIA A100-SXM4-40GB")->mig_family, "a100-40gb");
  EXPECT_EQ(FindModel("NVIDIA A100-SXM4-80GB")->mig_family, "a100-80gb");
}

TEST(NameTableTest, UnknownSpellingsAreNotFound) {
  for (const char* s :
       {"", " ", "nvidia", "A1000", "nvidia-tesla-a100x", "tpu-v4"}) {
    EXPECT_EQ(FindModel(s), nullptr) << s;
  }
}

}  // namespace
}  // namespace accelsched
