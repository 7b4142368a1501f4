// Device-model name normalisation: the one table that maps every known spelling
// of an accelerator model (flytekit constants, Flyte 2 friendly names,
// NVML/vendor product names) to its canonical model. Immutable after static
// initialisation; thread-safe.
#ifndef ACCELSCHED_CORE_NAME_TABLE_H_
#define ACCELSCHED_CORE_NAME_TABLE_H_

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/device_class.h"

namespace accelsched {

struct ModelInfo {
  // Canonical name: the flytekit constant where one exists
  // ("nvidia-tesla-a100"), else a name in the same style ("nvidia-b200",
  // "amd-mi300x").
  absl::string_view canonical;
  DeviceClass device_class;
  // MIG family in mig_geometry ("a100-40gb"); empty when the model has no MIG.
  absl::string_view mig_family;
  // TPU generation in tpu_topology ("v5p"); empty for non-TPU models.
  absl::string_view tpu_generation;
};

struct ModelAlias {
  absl::string_view spelling;   // compared case-insensitively
  absl::string_view canonical;  // a ModelInfo::canonical
};

// Every model and every spelling. Canonical names are aliases of themselves
// implicitly.
absl::Span<const ModelInfo> AllModels();
absl::Span<const ModelAlias> AllModelAliases();

// The model for any known spelling (case-insensitive, surrounding space
// ignored), or nullptr.
const ModelInfo* FindModel(absl::string_view spelling);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_NAME_TABLE_H_
