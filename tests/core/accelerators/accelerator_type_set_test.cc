#include "core/accelerators/accelerator_type_set.h"

#include <functional>
#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "config/accelerator_types_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const AcceleratorTypeSet& Builtin() {
  static const auto registry = BuiltinAcceleratorTypes();
  return *registry;
}

// --- The built-in data, entry by entry. ---

TEST(BuiltinRegistryTest, EverySpellingResolvesToItsTypeInAnyCase) {
  for (const AcceleratorType& t : Builtin().types()) {
    std::vector<std::string> spellings = t.aliases;
    spellings.push_back(t.canonical_model);
    for (const std::string& a : spellings) {
      for (const std::string& spelling :
           {a, absl::AsciiStrToUpper(a), absl::AsciiStrToLower(a),
            "  " + a + " "}) {
        const AcceleratorType* found = Builtin().Find(spelling);
        ASSERT_NE(found, nullptr)
            << "\"" << spelling << "\" resolves to nothing";
        EXPECT_EQ(found, &t) << spelling;
      }
    }
  }
}

// The built-in text passes every check an operator's file gets. (The server
// aborts on a built-in entry that does not; here the reason is a failure.)
TEST(BuiltinRegistryTest, TheBuiltInTextPassesEveryCheck) {
  AcceleratorTypeSetBuilder builder;
  ASSERT_OK(AddAcceleratorTypesText(BuiltinAcceleratorTypesText(), "builtin",
                                    builder));
  EXPECT_EQ(std::move(builder).Build()->types().size(),
            Builtin().types().size());
}

// The store keeps an allocation's acceptable models joined by "," (schema 4),
// so no canonical name may be empty or hold one.
TEST(BuiltinRegistryTest, CanonicalNamesCanBeJoinedByCommas) {
  for (const AcceleratorType& t : Builtin().types()) {
    EXPECT_FALSE(t.canonical_model.empty());
    EXPECT_EQ(t.canonical_model.find(','), std::string::npos)
        << t.canonical_model;
  }
}

TEST(BuiltinRegistryTest, TypesAreInCanonicalOrder) {
  std::string previous;
  for (const AcceleratorType& t : Builtin().types()) {
    EXPECT_LT(previous, t.canonical_model);
    previous = t.canonical_model;
  }
}

// The spellings that clients are promised (docs/concepts/accelerator-types.md),
// with the model each means.
TEST(BuiltinRegistryTest, PromisedSpellingsMapToTheRightModel) {
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
    const AcceleratorType* t = Builtin().Find(spelling);
    ASSERT_NE(t, nullptr) << spelling;
    EXPECT_EQ(t->canonical_model, canonical) << spelling;
  }
}

// Every device constant of flytekit (flyteorg/flytekit e96c7203,
// flytekit/extras/accelerators.py) and every device name of flyte-sdk
// (flyteorg/flyte-sdk 7e2d4231, src/flyte/_resources.py), with the strings
// flyte-sdk rewrites them to before sending (resources_serde.py): each
// resolves, to this type.
TEST(BuiltinRegistryTest, EveryFlytekitAndFlyteSdkNameResolves) {
  const std::pair<const char*, const char*> kNames[] = {
      // flytekit constants' device strings.
      {"nvidia-a10g", "nvidia-a10g"},
      {"nvidia-l4", "nvidia-l4"},
      {"nvidia-l4-vws", "nvidia-l4-vws"},
      {"nvidia-l40s", "nvidia-l40s"},
      {"nvidia-tesla-k80", "nvidia-tesla-k80"},
      {"nvidia-tesla-m60", "nvidia-tesla-m60"},
      {"nvidia-tesla-p4", "nvidia-tesla-p4"},
      {"nvidia-tesla-p100", "nvidia-tesla-p100"},
      {"nvidia-tesla-t4", "nvidia-tesla-t4"},
      {"nvidia-tesla-v100", "nvidia-tesla-v100"},
      {"nvidia-h100", "nvidia-h100"},
      {"nvidia-tesla-h100", "nvidia-h100"},  // before flytekit PR #3295
      {"nvidia-h200", "nvidia-h200"},
      {"nvidia-rtx-pro-6000", "nvidia-rtx-pro-6000"},
      {"nvidia-tesla-a100", "nvidia-tesla-a100"},
      {"nvidia-a100-80gb", "nvidia-a100-80gb"},
      {"tpu-v5-lite-podslice", "tpu-v5-lite-podslice"},
      {"tpu-v5p-slice", "tpu-v5p-slice"},
      {"tpu-v6e-slice", "tpu-v6e-slice"},
      // flyte-sdk names.
      {"A10", "nvidia-a10"},
      {"A10G", "nvidia-a10g"},
      {"A100", "nvidia-tesla-a100"},
      {"A100 80G", "nvidia-a100-80gb"},
      {"B200", "nvidia-b200"},
      {"H100", "nvidia-h100"},
      {"H200", "nvidia-h200"},
      {"L4", "nvidia-l4"},
      {"L40s", "nvidia-l40s"},
      {"T4", "nvidia-tesla-t4"},
      {"V100", "nvidia-tesla-v100"},
      {"RTX PRO 6000", "nvidia-rtx-pro-6000"},
      {"GB10", "nvidia-gb10"},
      {"V5P", "tpu-v5p-slice"},
      {"V6E", "tpu-v6e-slice"},
      {"Inf1", "aws-inf1"},
      {"Inf2", "aws-inf2"},
      {"Trn1", "aws-trn1"},
      {"Trn1n", "aws-trn1n"},
      {"Trn2", "aws-trn2"},
      {"Trn2u", "aws-trn2u"},
      {"MI100", "amd-mi100"},
      {"MI210", "amd-mi210"},
      {"MI250", "amd-mi250"},
      {"MI250X", "amd-mi250x"},
      {"MI300A", "amd-mi300a"},
      {"MI300X", "amd-mi300x"},
      {"MI325X", "amd-mi325x"},
      {"MI350X", "amd-mi350x"},
      {"MI355X", "amd-mi355x"},
      {"Gaudi1", "habana-gaudi1"},
      // flyte-sdk's rewrites that are not names above.
      {"nvidia-a10", "nvidia-a10"},
      {"nvidia-a100g", "nvidia-a100g"},
  };
  for (const auto& [name, canonical] : kNames) {
    const AcceleratorType* t = Builtin().Find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->canonical_model, canonical) << name;
  }
}

// Flyte 2 propeller's default accelerator-devices map, entry by entry
// (flyteorg/flyte 6fadb90d, flyteplugins/go/tasks/pluginmachinery/flytek8s/
// config/config.go): each name resolves, its type carries the entry, and the
// label value propeller writes resolves to the same type.
TEST(BuiltinRegistryTest, EveryPropellerAcceleratorDeviceIsCarried) {
  const std::pair<const char*, const char*> kMap[] = {
      {"A10", "nvidia-a10"},
      {"A10G", "nvidia-a10g"},
      {"A100", "nvidia-tesla-a100"},
      {"A100 80G", "nvidia-a100-80gb"},
      {"A100G", "nvidia-a100g"},
      {"B200", "nvidia-b200"},
      {"GB200", "nvidia-gb200"},
      {"H100", "nvidia-h100"},
      {"H100 80G", "nvidia-h100-80gb"},
      {"H100 MEGA 80G", "nvidia-h100-mega-80gb"},
      {"H200", "nvidia-h200"},
      {"K80", "nvidia-tesla-k80"},
      {"L4", "nvidia-l4"},
      {"L40s", "nvidia-l40s"},
      {"L4_VWS", "nvidia-l4-vws"},
      {"M60", "nvidia-tesla-m60"},
      {"P4", "nvidia-tesla-p4"},
      {"P100", "nvidia-tesla-p100"},
      {"RTX PRO 6000", "nvidia-rtx-pro-6000"},
      {"T4", "nvidia-tesla-t4"},
      {"V100", "nvidia-tesla-v100"},
      {"V5E", "tpu-v5-lite-podslice"},
      {"V5P", "tpu-v5p-slice"},
      {"V6E", "tpu-v6e-slice"},
      {"INF1", "aws-neuron-inf1"},
      {"INF2", "aws-neuron-inf2"},
      {"TRN1", "aws-neuron-trn1"},
      {"TRN1N", "aws-neuron-trn1n"},
      {"TRN2", "aws-neuron-trn2"},
      {"TRN2U", "aws-neuron-trn2u"},
      {"MI100", "amd-mi100"},
      {"MI210", "amd-mi210"},
      {"MI250", "amd-mi250"},
      {"MI250X", "amd-mi250x"},
      {"MI300A", "amd-mi300a"},
      {"MI300X", "amd-mi300x"},
      {"MI325X", "amd-mi325x"},
      {"MI350X", "amd-mi350x"},
      {"MI355X", "amd-mi355x"},
      {"GAUDI1", "habana-gaudi-dl1"},
  };
  int carried = 0;
  for (const auto& [name, label] : kMap) {
    const AcceleratorType* t = Builtin().Find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(Builtin().Find(label), t) << name << " -> " << label;
    for (const FlyteNodeLabel& f : t->flyte_node_labels) {
      if (f.name == name) {
        EXPECT_EQ(f.node_label_value, label) << name;
        ++carried;
      }
    }
  }
  EXPECT_EQ(carried, 40);
  // And nothing else: every entry carried is one of propeller's.
  int entries = 0;
  for (const AcceleratorType& t : Builtin().types()) {
    entries += static_cast<int>(t.flyte_node_labels.size());
  }
  EXPECT_EQ(entries, 40);
  EXPECT_EQ(Builtin().Find("H100 80G")->node_label_value, "nvidia-h100");
  EXPECT_EQ(Builtin().Find("TRN1")->node_label_value, "aws-neuron-trn1");
  EXPECT_EQ(Builtin().Find("GAUDI1")->node_label_value, "habana-gaudi-dl1");
}

TEST(BuiltinRegistryTest, DeviceClassesOfEachFamily) {
  EXPECT_EQ(Builtin().Find("MI300X")->device_class, DeviceClass::kAmdGpu);
  EXPECT_EQ(Builtin().Find("TRN1")->device_class, DeviceClass::kAmazonNeuron);
  EXPECT_EQ(Builtin().Find("GAUDI1")->device_class, DeviceClass::kHabanaGaudi);
  EXPECT_EQ(Builtin().Find("V5P")->device_class, DeviceClass::kGoogleTpu);
  EXPECT_EQ(Builtin().Find("H100")->device_class, DeviceClass::kNvidiaGpu);
  EXPECT_EQ(Builtin().Find("H100")->resource_name, "nvidia.com/gpu");
  EXPECT_EQ(Builtin().Find("V5P")->resource_name, "google.com/tpu");
}

TEST(BuiltinRegistryTest, A100MemorySizesAreDifferentModels) {
  const AcceleratorType* a40 = Builtin().Find("NVIDIA A100-SXM4-40GB");
  const AcceleratorType* a80 = Builtin().Find("NVIDIA A100-SXM4-80GB");
  ASSERT_NE(a40, nullptr);
  ASSERT_NE(a80, nullptr);
  EXPECT_NE(a40, a80);
  EXPECT_NE(a40->mig.Find("1g.5gb"), nullptr);
  EXPECT_EQ(a80->mig.Find("1g.5gb"), nullptr);
}

TEST(BuiltinRegistryTest, UnknownSpellingsAreNotFound) {
  for (const char* s :
       {"", " ", "nvidia", "A1000", "nvidia-tesla-a100x", "tpu-v9"}) {
    EXPECT_EQ(Builtin().Find(s), nullptr) << s;
  }
}

// --- The builder: how entries combine. ---

AcceleratorType Acme() {
  AcceleratorType t;
  t.canonical_model = "acme-x1";
  t.aliases = {"Acme X1"};
  t.mig = {4, 4, {{"2g.8gb", 2, 2, {0, 2}}, {"4g.16gb", 4, 4, {0}}}};
  return t;
}

TEST(AcceleratorTypeSetBuilderTest, AddsATypeWithItsDefaults) {
  AcceleratorTypeSetBuilder builder;
  ASSERT_OK(builder.Add(Acme()));
  auto registry = std::move(builder).Build();
  const AcceleratorType* t = registry->Find("ACME x1");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->canonical_model, "acme-x1");
  EXPECT_EQ(t->node_label_value, "acme-x1");
  EXPECT_EQ(t->resource_name, "nvidia.com/gpu");
  EXPECT_EQ(registry->Find("acme-x2"), nullptr);
}

TEST(AcceleratorTypeSetBuilderTest, AnEntryForAKnownModelExtendsIt) {
  AcceleratorTypeSetBuilder builder(Builtin());
  AcceleratorType more;
  more.canonical_model = "nvidia-h100";
  more.aliases = {"h100", "Hopper 80"};  // "h100" is known: harmless
  more.node_label_value = "nvidia-h100-80gb";
  ASSERT_OK(builder.Add(more));
  auto registry = std::move(builder).Build();
  const AcceleratorType* t = registry->Find("hopper 80");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->canonical_model, "nvidia-h100");
  EXPECT_EQ(t->node_label_value, "nvidia-h100-80gb");
  EXPECT_NE(t->mig.Find("1g.10gb"), nullptr);  // kept
  EXPECT_EQ(registry->types().size(), Builtin().types().size());
  // The registry it started from is unchanged.
  EXPECT_EQ(Builtin().Find("hopper 80"), nullptr);
}

TEST(AcceleratorTypeSetBuilderTest, ExtensionsAddProfilesAndTopologies) {
  AcceleratorTypeSetBuilder builder(Builtin());
  AcceleratorType v5p;
  v5p.canonical_model = "tpu-v5p-slice";
  v5p.device_class = DeviceClass::kGoogleTpu;
  v5p.tpu_topologies = {{"2x2x6", 24, 6}};
  ASSERT_OK(builder.Add(v5p));
  AcceleratorType h100;
  h100.canonical_model = "nvidia-h100";
  h100.mig.profiles = {{"1g.10gb", 2, 1, {0, 2, 4, 6}}};  // wrong size
  EXPECT_THAT(builder.Add(h100),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("mig_profiles[0] \"1g.10gb\" differs from "
                                 "the nvidia-h100 profile of that name")));
  auto registry = std::move(builder).Build();
  ASSERT_TRUE(registry->Find("v5p")->FindTopology("2x2x6"));
  EXPECT_EQ(registry->Find("v5p")->FindTopology("2x2x6")->hosts, 6);
}

TEST(AcceleratorTypeSetBuilderTest, RefusesConflictsAndChangesNothing) {
  AcceleratorTypeSetBuilder builder(Builtin());
  AcceleratorType thief = Acme();
  thief.aliases = {"Acme X1", "H100"};
  EXPECT_THAT(builder.Add(thief),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("aliases[1] \"H100\" already names "
                                 "nvidia-h100")));
  AcceleratorType alias_as_name = Acme();
  alias_as_name.canonical_model = "a100";
  EXPECT_THAT(builder.Add(alias_as_name),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("canonical_model \"a100\" is already an alias "
                                 "of nvidia-tesla-a100")));
  AcceleratorType wrong_class;
  wrong_class.canonical_model = "nvidia-h100";
  wrong_class.device_class = DeviceClass::kAmdGpu;
  EXPECT_THAT(builder.Add(wrong_class),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("device_class AMD_GPU does not match "
                                 "nvidia-h100 (NVIDIA_GPU)")));
  auto registry = std::move(builder).Build();
  EXPECT_EQ(registry->Find("acme x1"), nullptr);
  EXPECT_EQ(registry->types().size(), Builtin().types().size());
}

TEST(AcceleratorTypeSetBuilderTest, RefusesInvalidEntriesNamingTheField) {
  struct Case {
    std::function<void(AcceleratorType&)> mutate;
    const char* error;
  };
  const Case kCases[] = {
      {[](AcceleratorType& t) { t.canonical_model = ""; }, "canonical_model"},
      {[](AcceleratorType& t) { t.canonical_model = "Acme-X1"; },
       "canonical_model \"Acme-X1\" must be"},
      {[](AcceleratorType& t) { t.canonical_model = "acme,x1"; },
       "canonical_model"},
      {[](AcceleratorType& t) { t.device_class = static_cast<DeviceClass>(9); },
       "device_class 9 is not a DeviceClass"},
      {[](AcceleratorType& t) { t.aliases = {""}; }, "aliases[0] must be"},
      {[](AcceleratorType& t) { t.aliases = {" x1"}; }, "aliases[0]"},
      {[](AcceleratorType& t) { t.aliases = {"x\t1"}; }, "aliases[0]"},
      {[](AcceleratorType& t) {
         t.aliases = {"X1", "x1"};
       },
       "aliases[1] \"x1\" is listed twice"},
      {[](AcceleratorType& t) { t.aliases = {"ACME-X1"}; },
       "aliases[0] \"ACME-X1\" is listed twice"},
      {[](AcceleratorType& t) { t.memory_bytes = -1; }, "memory_bytes"},
      {[](AcceleratorType& t) { t.device_class = DeviceClass::kAmdGpu; },
       "mig_profiles are for NVIDIA_GPU, not AMD_GPU"},
      {[](AcceleratorType& t) { t.mig.profiles[0].starts = {3}; },
       "mig_profiles[0].starts[0]"},
      {[](AcceleratorType& t) {
         t.tpu_topologies = {{"2x2", 4, 1}};
       },
       "tpu_topologies are for GOOGLE_TPU"},
      {[](AcceleratorType& t) {
         t.mig = {};
         t.device_class = DeviceClass::kGoogleTpu;
       },
       "tpu_topologies are required for GOOGLE_TPU"},
      {[](AcceleratorType& t) { t.node_label_value = "acme x1"; },
       "node_label_value \"acme x1\" is not a label value"},
      {[](AcceleratorType& t) { t.resource_name = "acme.com/"; },
       "resource_name \"acme.com/\" is not a resource name"},
  };
  for (const Case& c : kCases) {
    AcceleratorType t = Acme();
    c.mutate(t);
    AcceleratorTypeSetBuilder builder;
    EXPECT_THAT(builder.Add(t), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr(c.error)))
        << c.error;
  }
}

TEST(AcceleratorTypeSetBuilderTest, BuildSortsByCanonicalModel) {
  AcceleratorTypeSetBuilder builder;
  for (const char* name : {"zeta", "alpha", "mid"}) {
    AcceleratorType t;
    t.canonical_model = name;
    t.device_class = DeviceClass::kAmdGpu;
    ASSERT_OK(builder.Add(t));
  }
  auto registry = std::move(builder).Build();
  std::vector<std::string> names;
  for (const AcceleratorType& t : registry->types()) {
    names.push_back(t.canonical_model);
    EXPECT_EQ(registry->Find(t.canonical_model), &t);
  }
  EXPECT_THAT(names, ElementsAre("alpha", "mid", "zeta"));
}

}  // namespace
}  // namespace accelsched
