// One accelerator type: a model, every spelling of it, and its geometry (MIG
// profiles, TPU topologies), as the set of accelerator types holds it. The
// checks a type must pass alone live here; the checks across types (no
// spelling claimed twice) are the set's.
#ifndef ACCELSCHED_CORE_ACCELERATORS_ACCELERATOR_TYPE_H_
#define ACCELSCHED_CORE_ACCELERATORS_ACCELERATOR_TYPE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/accelerators/mig_geometry.h"
#include "core/accelerators/tpu_topology.h"
#include "core/model/device_class.h"

namespace accelsched {

inline constexpr size_t kMaxAliasLength = 128;

// An entry of Flyte propeller's accelerator-devices map.
struct FlyteNodeLabel {
  std::string name;              // "H100 80G"
  std::string node_label_value;  // "nvidia-h100-80gb"
};

struct AcceleratorType {
  // The name accelsched reports: the flytekit constant where one exists
  // ("nvidia-tesla-a100"), else one in the same style ("nvidia-b200").
  std::string canonical_model;
  DeviceClass device_class = DeviceClass::kNvidiaGpu;
  std::vector<std::string> aliases;                 // every other spelling
  int64_t memory_bytes = 0;                         // 0: not stated
  MigGeometry mig;                                  // empty: no MIG
  std::vector<TpuTopology> tpu_topologies;          // GOOGLE_TPU only
  std::vector<TpuTopologyRule> tpu_topology_rules;  // GOOGLE_TPU only
  // The node label value Flyte's propeller writes for this type.
  std::string node_label_value;
  // The Kubernetes extended resource of a whole device.
  std::string resource_name;
  // Propeller's map entries for this type's spellings.
  std::vector<FlyteNodeLabel> flyte_node_labels;

  bool is_tpu() const { return device_class == DeviceClass::kGoogleTpu; }
  bool has_mig() const { return !mig.empty(); }
  // The listed topology of that name, else the one a rule gives, else
  // nullopt.
  std::optional<TpuTopology> FindTopology(absl::string_view topology) const;
  // The topologies and rules, for error messages.
  std::string TopologyNames() const {
    return accelsched::TopologyNames(tpu_topologies, tpu_topology_rules);
  }
};

// The extended resource of a whole device of `device_class`
// ("nvidia.com/gpu").
absl::string_view DefaultResourceName(DeviceClass device_class);

// Fills in the defaults (node_label_value: canonical_model; resource_name:
// DefaultResourceName) and checks `type` alone. INVALID_ARGUMENT naming the
// field for: a canonical_model that is not 1 to 63 characters of lower-case
// letters, digits, '-', '.' and '_' beginning and ending alphanumeric (it is
// used as a label value and in comma-joined lists); a device_class out of
// range; an alias that is empty, longer than kMaxAliasLength, not printable
// ASCII, padded with spaces, or listed twice (compared case-insensitively, the
// canonical name included); a negative memory_bytes; MIG profiles on a device
// that is not NVIDIA_GPU, or an inconsistent MIG geometry
// (ValidateMigGeometry); TPU topologies or rules on a device that is not
// GOOGLE_TPU, a GOOGLE_TPU type without either, inconsistent ones
// (ValidateTpuTopologies, ValidateTpuTopologyRules), or a listed topology that
// a rule gives other hosts; a node_label_value that is not a label value or a
// resource_name that is not a [prefix/]name; a flyte_node_labels entry whose
// name is not a spelling of this type, is listed twice, or whose value is not
// a label value.
absl::Status NormalizeAndValidateType(AcceleratorType& type);

// Extends `type` with `extension`, an entry for the same canonical model:
// aliases, MIG profiles, TPU topologies and rules that `type` lacks are added,
// flyte_node_labels entries are added or replace the entry of their name; the
// other fields that `extension` sets (non-zero, non-empty) replace `type`'s.
// INVALID_ARGUMENT naming the field of `extension` when it sets a device_class
// other than NVIDIA_GPU (the "not given" value) that differs, has a malformed
// alias, sets MIG slice totals that differ from those of `type`'s profiles, or
// lists a MIG profile or topology of a known name with different numbers. The
// result still needs NormalizeAndValidateType.
absl::Status ExtendType(AcceleratorType& type,
                        const AcceleratorType& extension);

// The case-insensitive key of a spelling: lower-case, surrounding spaces
// dropped.
std::string FoldSpelling(absl::string_view spelling);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_ACCELERATORS_ACCELERATOR_TYPE_H_
