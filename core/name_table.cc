#include "core/name_table.h"

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"

namespace accelsched {
namespace {

using DC = DeviceClass;

constexpr ModelInfo kModels[] = {
    // NVIDIA, flytekit constants.
    {"nvidia-tesla-k80", DC::kNvidiaGpu, "", ""},
    {"nvidia-tesla-m60", DC::kNvidiaGpu, "", ""},
    {"nvidia-tesla-p4", DC::kNvidiaGpu, "", ""},
    {"nvidia-tesla-p100", DC::kNvidiaGpu, "", ""},
    {"nvidia-tesla-t4", DC::kNvidiaGpu, "", ""},
    {"nvidia-tesla-v100", DC::kNvidiaGpu, "", ""},
    {"nvidia-tesla-a100", DC::kNvidiaGpu, "a100-40gb", ""},
    {"nvidia-a100-80gb", DC::kNvidiaGpu, "a100-80gb", ""},
    {"nvidia-a10g", DC::kNvidiaGpu, "", ""},
    {"nvidia-l4", DC::kNvidiaGpu, "", ""},
    {"nvidia-l4-vws", DC::kNvidiaGpu, "", ""},
    {"nvidia-l40s", DC::kNvidiaGpu, "", ""},
    {"nvidia-h100", DC::kNvidiaGpu, "h100-80gb", ""},
    {"nvidia-h200", DC::kNvidiaGpu, "h200-141gb", ""},
    {"nvidia-rtx-pro-6000", DC::kNvidiaGpu, "", ""},
    // NVIDIA, models flytekit has no constant for.
    {"nvidia-a10", DC::kNvidiaGpu, "", ""},
    {"nvidia-a30", DC::kNvidiaGpu, "a30-24gb", ""},
    {"nvidia-l40", DC::kNvidiaGpu, "", ""},
    {"nvidia-h100-nvl", DC::kNvidiaGpu, "h100-94gb", ""},
    {"nvidia-b200", DC::kNvidiaGpu, "b200-180gb", ""},
    // GB200 supports MIG, but its profile table is not verified here:
    // registering it with
    // MIG enabled is refused rather than guessed.
    {"nvidia-gb200", DC::kNvidiaGpu, "", ""},
    // Google TPU, flytekit constants (the GKE accelerator label values).
    {"tpu-v5-lite-podslice", DC::kGoogleTpu, "", "v5e"},
    {"tpu-v5p-slice", DC::kGoogleTpu, "", "v5p"},
    {"tpu-v6e-slice", DC::kGoogleTpu, "", "v6e"},
    // AWS Neuron.
    {"aws-inf1", DC::kAmazonNeuron, "", ""},
    {"aws-inf2", DC::kAmazonNeuron, "", ""},
    {"aws-trn1", DC::kAmazonNeuron, "", ""},
    {"aws-trn1n", DC::kAmazonNeuron, "", ""},
    {"aws-trn2", DC::kAmazonNeuron, "", ""},
    // AMD Instinct.
    {"amd-mi100", DC::kAmdGpu, "", ""},
    {"amd-mi210", DC::kAmdGpu, "", ""},
    {"amd-mi250", DC::kAmdGpu, "", ""},
    {"amd-mi250x", DC::kAmdGpu, "", ""},
    {"amd-mi300a", DC::kAmdGpu, "", ""},
    {"amd-mi300x", DC::kAmdGpu, "", ""},
    {"amd-mi325x", DC::kAmdGpu, "", ""},
    {"amd-mi355x", DC::kAmdGpu, "", ""},
    // Intel Habana Gaudi.
    {"habana-gaudi1", DC::kHabanaGaudi, "", ""},
    {"habana-gaudi2", DC::kHabanaGaudi, "", ""},
    {"habana-gaudi3", DC::kHabanaGaudi, "", ""},
};

// Spellings other than the canonical names. Flyte 2 friendly names come first
// in each group, then NVML / vendor product names, then other common forms.
constexpr ModelAlias kAliases[] = {
    {"K80", "nvidia-tesla-k80"},
    {"Tesla K80", "nvidia-tesla-k80"},
    {"M60", "nvidia-tesla-m60"},
    {"Tesla M60", "nvidia-tesla-m60"},
    {"P4", "nvidia-tesla-p4"},
    {"Tesla P4", "nvidia-tesla-p4"},
    {"P100", "nvidia-tesla-p100"},
    {"Tesla P100-PCIE-16GB", "nvidia-tesla-p100"},
    {"Tesla P100-PCIE-12GB", "nvidia-tesla-p100"},
    {"Tesla P100-SXM2-16GB", "nvidia-tesla-p100"},
    {"T4", "nvidia-tesla-t4"},
    {"Tesla T4", "nvidia-tesla-t4"},
    {"NVIDIA T4", "nvidia-tesla-t4"},
    {"V100", "nvidia-tesla-v100"},
    {"Tesla V100-SXM2-16GB", "nvidia-tesla-v100"},
    {"Tesla V100-SXM2-32GB", "nvidia-tesla-v100"},
    {"Tesla V100-PCIE-16GB", "nvidia-tesla-v100"},
    {"Tesla V100-PCIE-32GB", "nvidia-tesla-v100"},
    {"Tesla V100S-PCIE-32GB", "nvidia-tesla-v100"},
    {"Tesla V100-SXM3-32GB", "nvidia-tesla-v100"},
    {"A100", "nvidia-tesla-a100"},
    {"A100 40G", "nvidia-tesla-a100"},
    {"nvidia-a100", "nvidia-tesla-a100"},
    {"nvidia-a100-40gb", "nvidia-tesla-a100"},
    {"NVIDIA A100-SXM4-40GB", "nvidia-tesla-a100"},
    {"NVIDIA A100-PCIE-40GB", "nvidia-tesla-a100"},
    {"NVIDIA A100 40GB PCIe", "nvidia-tesla-a100"},
    {"A100 80G", "nvidia-a100-80gb"},
    {"A100-80GB", "nvidia-a100-80gb"},
    {"NVIDIA A100-SXM4-80GB", "nvidia-a100-80gb"},
    {"NVIDIA A100-PCIE-80GB", "nvidia-a100-80gb"},
    {"NVIDIA A100 80GB PCIe", "nvidia-a100-80gb"},
    {"A10G", "nvidia-a10g"},
    {"NVIDIA A10G", "nvidia-a10g"},
    {"A10", "nvidia-a10"},
    {"NVIDIA A10", "nvidia-a10"},
    {"A30", "nvidia-a30"},
    {"NVIDIA A30", "nvidia-a30"},
    {"L4", "nvidia-l4"},
    {"NVIDIA L4", "nvidia-l4"},
    {"L40s", "nvidia-l40s"},
    {"NVIDIA L40S", "nvidia-l40s"},
    {"L40", "nvidia-l40"},
    {"NVIDIA L40", "nvidia-l40"},
    {"H100", "nvidia-h100"},
    {"H100 80G", "nvidia-h100"},
    {"nvidia-h100-80gb", "nvidia-h100"},
    {"nvidia-h100-mega-80gb", "nvidia-h100"},
    {"NVIDIA H100 80GB HBM3", "nvidia-h100"},
    {"NVIDIA H100 PCIe", "nvidia-h100"},
    {"H100 NVL", "nvidia-h100-nvl"},
    {"NVIDIA H100 NVL", "nvidia-h100-nvl"},
    {"H200", "nvidia-h200"},
    {"nvidia-h200-141gb", "nvidia-h200"},
    {"NVIDIA H200", "nvidia-h200"},
    {"NVIDIA H200 NVL", "nvidia-h200"},
    {"B200", "nvidia-b200"},
    {"NVIDIA B200", "nvidia-b200"},
    {"GB200", "nvidia-gb200"},
    {"NVIDIA GB200", "nvidia-gb200"},
    {"RTX PRO 6000", "nvidia-rtx-pro-6000"},
    {"NVIDIA RTX PRO 6000 Blackwell Server Edition", "nvidia-rtx-pro-6000"},
    {"V5E", "tpu-v5-lite-podslice"},
    {"tpu-v5e", "tpu-v5-lite-podslice"},
    {"tpu-v5-lite-device", "tpu-v5-lite-podslice"},
    {"TPU v5 lite", "tpu-v5-lite-podslice"},
    {"V5P", "tpu-v5p-slice"},
    {"tpu-v5p", "tpu-v5p-slice"},
    {"TPU v5", "tpu-v5p-slice"},
    {"V6E", "tpu-v6e-slice"},
    {"tpu-v6e", "tpu-v6e-slice"},
    {"TPU v6 lite", "tpu-v6e-slice"},
    {"INF1", "aws-inf1"},
    {"Inferentia", "aws-inf1"},
    {"INF2", "aws-inf2"},
    {"Inferentia2", "aws-inf2"},
    {"TRN1", "aws-trn1"},
    {"Trainium", "aws-trn1"},
    {"TRN1N", "aws-trn1n"},
    {"TRN2", "aws-trn2"},
    {"Trainium2", "aws-trn2"},
    {"MI100", "amd-mi100"},
    {"AMD Instinct MI100", "amd-mi100"},
    {"MI210", "amd-mi210"},
    {"AMD Instinct MI210", "amd-mi210"},
    {"MI250", "amd-mi250"},
    {"AMD Instinct MI250", "amd-mi250"},
    {"MI250X", "amd-mi250x"},
    {"AMD Instinct MI250X", "amd-mi250x"},
    {"MI300A", "amd-mi300a"},
    {"AMD Instinct MI300A", "amd-mi300a"},
    {"MI300X", "amd-mi300x"},
    {"AMD Instinct MI300X", "amd-mi300x"},
    {"AMD Instinct MI300X OAM", "amd-mi300x"},
    {"MI325X", "amd-mi325x"},
    {"AMD Instinct MI325X", "amd-mi325x"},
    {"MI355X", "amd-mi355x"},
    {"AMD Instinct MI355X", "amd-mi355x"},
    {"GAUDI1", "habana-gaudi1"},
    {"GAUDI", "habana-gaudi1"},
    {"HL-205", "habana-gaudi1"},
    {"GAUDI2", "habana-gaudi2"},
    {"HL-225", "habana-gaudi2"},
    {"GAUDI3", "habana-gaudi3"},
};

using Index = absl::flat_hash_map<std::string, const ModelInfo*>;

const Index& BuildIndex() {
  static const Index* index = [] {
    auto* idx = new Index;
    for (const ModelInfo& m : kModels) {
      (*idx)[absl::AsciiStrToLower(m.canonical)] = &m;
    }
    for (const ModelAlias& a : kAliases) {
      const ModelInfo* target = nullptr;
      for (const ModelInfo& m : kModels) {
        if (m.canonical == a.canonical) target = &m;
      }
      // A dangling alias is a table bug; name_table_test walks every row to
      // catch it.
      if (target != nullptr) (*idx)[absl::AsciiStrToLower(a.spelling)] = target;
    }
    return idx;
  }();
  return *index;
}

}  // namespace

absl::Span<const ModelInfo> AllModels() { return kModels; }
absl::Span<const ModelAlias> AllModelAliases() { return kAliases; }

const ModelInfo* FindModel(absl::string_view spelling) {
  const Index& index = BuildIndex();
  auto it =
      index.find(absl::AsciiStrToLower(absl::StripAsciiWhitespace(spelling)));
  return it == index.end() ? nullptr : it->second;
}

}  // namespace accelsched
