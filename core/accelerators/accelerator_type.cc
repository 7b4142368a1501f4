#include "core/accelerators/accelerator_type.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/base/field_error.h"
#include "core/base/labels.h"
#include "core/base/status_macros.h"

namespace accelsched {
namespace {

bool IsCanonicalName(absl::string_view s) {
  auto lower_alnum = [](char c) {
    return absl::ascii_islower(static_cast<unsigned char>(c)) ||
           absl::ascii_isdigit(static_cast<unsigned char>(c));
  };
  if (s.empty() || s.size() > 63 || !lower_alnum(s.front()) ||
      !lower_alnum(s.back())) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return lower_alnum(c) || c == '-' || c == '.' || c == '_';
  });
}

absl::Status ValidateAlias(absl::string_view alias, absl::string_view field) {
  if (alias.empty() || alias.size() > kMaxAliasLength) {
    return InvalidField(field, absl::StrCat("must be 1 to ", kMaxAliasLength,
                                            " characters long"));
  }
  if (!std::all_of(alias.begin(), alias.end(),
                   [](char c) { return c >= ' ' && c <= '~'; })) {
    return InvalidField(
        field, absl::StrCat("\"", alias, "\" must be printable ASCII"));
  }
  if (alias.front() == ' ' || alias.back() == ' ') {
    return InvalidField(
        field,
        absl::StrCat("\"", alias, "\" must not begin or end with a space"));
  }
  return absl::OkStatus();
}

bool SameProfile(const MigProfile& a, const MigProfile& b) {
  return a.memory_slices == b.memory_slices &&
         a.compute_slices == b.compute_slices && a.starts == b.starts &&
         a.max_instances == b.max_instances;
}

}  // namespace

std::optional<TpuTopology> AcceleratorType::FindTopology(
    absl::string_view topology) const {
  if (const TpuTopology* t = FindTpuTopology(tpu_topologies, topology)) {
    return *t;
  }
  for (const TpuTopologyRule& rule : tpu_topology_rules) {
    if (auto t = ApplyTopologyRule(rule, topology)) return t;
  }
  return std::nullopt;
}

absl::string_view DefaultResourceName(DeviceClass device_class) {
  switch (device_class) {
    case DeviceClass::kNvidiaGpu:
      return "nvidia.com/gpu";
    case DeviceClass::kGoogleTpu:
      return "google.com/tpu";
    case DeviceClass::kAmazonNeuron:
      return "aws.amazon.com/neuron";
    case DeviceClass::kAmdGpu:
      return "amd.com/gpu";
    case DeviceClass::kHabanaGaudi:
      return "habana.ai/gaudi";
  }
  return "";
}

std::string FoldSpelling(absl::string_view spelling) {
  return absl::AsciiStrToLower(absl::StripAsciiWhitespace(spelling));
}

absl::Status NormalizeAndValidateType(AcceleratorType& t) {
  if (!IsCanonicalName(t.canonical_model)) {
    return InvalidField(
        "canonical_model",
        absl::StrCat("\"", t.canonical_model,
                     "\" must be 1 to 63 characters of lower-case "
                     "letters, digits, '-', '.' and '_' beginning "
                     "and ending alphanumeric"));
  }
  const int device_class = static_cast<int>(t.device_class);
  if (device_class < 0 || device_class > kMaxDeviceClass) {
    return InvalidField("device_class",
                        absl::StrCat(device_class, " is not a DeviceClass"));
  }
  absl::flat_hash_set<std::string> spellings = {t.canonical_model};
  for (size_t i = 0; i < t.aliases.size(); ++i) {
    const std::string field = absl::StrCat("aliases[", i, "]");
    RETURN_IF_ERROR(ValidateAlias(t.aliases[i], field));
    if (!spellings.insert(FoldSpelling(t.aliases[i])).second) {
      return InvalidField(
          field, absl::StrCat("\"", t.aliases[i], "\" is listed twice for ",
                              t.canonical_model));
    }
  }
  if (t.memory_bytes < 0) {
    return InvalidField("memory_bytes", "must not be negative");
  }
  if (t.has_mig() && t.device_class != DeviceClass::kNvidiaGpu) {
    return InvalidField("mig_profiles",
                        absl::StrCat("are for NVIDIA_GPU, not ",
                                     DeviceClassName(t.device_class)));
  }
  RETURN_IF_ERROR(ValidateMigGeometry(t.mig));
  if (!t.is_tpu() &&
      (!t.tpu_topologies.empty() || !t.tpu_topology_rules.empty())) {
    return InvalidField(
        t.tpu_topologies.empty() ? "tpu_topology_rules" : "tpu_topologies",
        absl::StrCat("are for GOOGLE_TPU, not ",
                     DeviceClassName(t.device_class)));
  }
  if (t.is_tpu() && t.tpu_topologies.empty() && t.tpu_topology_rules.empty()) {
    return InvalidField("tpu_topologies",
                        "are required for GOOGLE_TPU: a slice has a topology");
  }
  RETURN_IF_ERROR(ValidateTpuTopologies(t.tpu_topologies));
  RETURN_IF_ERROR(ValidateTpuTopologyRules(t.tpu_topology_rules));
  for (size_t i = 0; i < t.tpu_topologies.size(); ++i) {
    const TpuTopology& listed = t.tpu_topologies[i];
    for (const TpuTopologyRule& rule : t.tpu_topology_rules) {
      auto ruled = ApplyTopologyRule(rule, listed.topology);
      if (ruled && ruled->hosts != listed.hosts) {
        return InvalidField(absl::StrCat("tpu_topologies[", i, "].hosts"),
                            absl::StrCat(listed.hosts, " for ", listed.topology,
                                         ", but a rule gives ", ruled->hosts));
      }
    }
  }
  if (t.node_label_value.empty()) t.node_label_value = t.canonical_model;
  if (!IsLabelValue(t.node_label_value)) {
    return InvalidField(
        "node_label_value",
        absl::StrCat("\"", t.node_label_value,
                     "\" is not a label value (at most 63 "
                     "characters of [A-Za-z0-9._-] beginning and "
                     "ending alphanumeric)"));
  }
  absl::flat_hash_set<absl::string_view> flyte_names;
  for (size_t i = 0; i < t.flyte_node_labels.size(); ++i) {
    const FlyteNodeLabel& f = t.flyte_node_labels[i];
    const std::string field = absl::StrCat("flyte_node_labels[", i, "]");
    if (!spellings.contains(FoldSpelling(f.name))) {
      return InvalidField(
          absl::StrCat(field, ".name"),
          absl::StrCat("\"", f.name, "\" is not a spelling of ",
                       t.canonical_model, "; add it to aliases"));
    }
    if (!flyte_names.insert(f.name).second) {
      return InvalidField(absl::StrCat(field, ".name"),
                          absl::StrCat("\"", f.name, "\" is listed twice"));
    }
    if (f.node_label_value.empty() || !IsLabelValue(f.node_label_value)) {
      return InvalidField(
          absl::StrCat(field, ".node_label_value"),
          absl::StrCat("\"", f.node_label_value, "\" is not a label value"));
    }
  }
  if (t.resource_name.empty()) {
    t.resource_name = std::string(DefaultResourceName(t.device_class));
  }
  if (!IsLabelKey(t.resource_name)) {
    return InvalidField(
        "resource_name",
        absl::StrCat("\"", t.resource_name,
                     "\" is not a resource name ([prefix/]name, "
                     "e.g. nvidia.com/gpu)"));
  }
  return absl::OkStatus();
}

absl::Status ExtendType(AcceleratorType& type,
                        const AcceleratorType& extension) {
  if (extension.device_class != DeviceClass::kNvidiaGpu &&
      extension.device_class != type.device_class) {
    return InvalidField(
        "device_class",
        absl::StrCat(DeviceClassName(extension.device_class),
                     " does not match ", type.canonical_model, " (",
                     DeviceClassName(type.device_class), ")"));
  }
  absl::flat_hash_set<std::string> known = {FoldSpelling(type.canonical_model)};
  for (const std::string& a : type.aliases) known.insert(FoldSpelling(a));
  for (size_t i = 0; i < extension.aliases.size(); ++i) {
    const std::string& a = extension.aliases[i];
    RETURN_IF_ERROR(ValidateAlias(a, absl::StrCat("aliases[", i, "]")));
    // Naming a spelling the type already has is harmless: files may overlap.
    if (known.insert(FoldSpelling(a)).second) type.aliases.push_back(a);
  }
  if (extension.memory_bytes != 0) type.memory_bytes = extension.memory_bytes;
  // The known profiles were checked on the known grid; a new grid would
  // move them.
  if (type.has_mig() && extension.mig.memory_slices != 0 &&
      extension.mig.memory_slices != type.mig.memory_slices) {
    return InvalidField(
        "mig_memory_slices",
        absl::StrCat(extension.mig.memory_slices, " differs from ",
                     type.canonical_model, "'s ", type.mig.memory_slices));
  }
  if (type.has_mig() && extension.mig.compute_slices != 0 &&
      extension.mig.compute_slices != type.mig.compute_slices) {
    return InvalidField(
        "mig_compute_slices",
        absl::StrCat(extension.mig.compute_slices, " differs from ",
                     type.canonical_model, "'s ", type.mig.compute_slices));
  }
  if (extension.mig.memory_slices != 0) {
    type.mig.memory_slices = extension.mig.memory_slices;
  }
  if (extension.mig.compute_slices != 0) {
    type.mig.compute_slices = extension.mig.compute_slices;
  }
  for (size_t i = 0; i < extension.mig.profiles.size(); ++i) {
    const MigProfile& p = extension.mig.profiles[i];
    const MigProfile* known_profile = type.mig.Find(p.name);
    if (known_profile == nullptr) {
      type.mig.profiles.push_back(p);
    } else if (!SameProfile(*known_profile, p)) {
      return InvalidField(
          absl::StrCat("mig_profiles[", i, "]"),
          absl::StrCat("\"", p.name, "\" differs from the ",
                       type.canonical_model, " profile of that name"));
    }
  }
  for (size_t i = 0; i < extension.tpu_topologies.size(); ++i) {
    const TpuTopology& t = extension.tpu_topologies[i];
    const TpuTopology* known_topology =
        FindTpuTopology(type.tpu_topologies, t.topology);
    if (known_topology == nullptr) {
      type.tpu_topologies.push_back(t);
    } else if (known_topology->chips != t.chips ||
               known_topology->hosts != t.hosts) {
      return InvalidField(
          absl::StrCat("tpu_topologies[", i, "]"),
          absl::StrCat("\"", t.topology, "\" differs from the ",
                       type.canonical_model, " topology of that name"));
    }
  }
  for (const TpuTopologyRule& r : extension.tpu_topology_rules) {
    const bool known = std::any_of(
        type.tpu_topology_rules.begin(), type.tpu_topology_rules.end(),
        [&](const TpuTopologyRule& k) {
          return k.dimension_multiple == r.dimension_multiple &&
                 k.max_chips == r.max_chips &&
                 k.chips_per_host == r.chips_per_host &&
                 k.ascending == r.ascending;
        });
    if (!known) type.tpu_topology_rules.push_back(r);
  }
  for (const FlyteNodeLabel& f : extension.flyte_node_labels) {
    auto known = std::find_if(
        type.flyte_node_labels.begin(), type.flyte_node_labels.end(),
        [&](const FlyteNodeLabel& k) { return k.name == f.name; });
    if (known == type.flyte_node_labels.end()) {
      type.flyte_node_labels.push_back(f);
    } else {
      known->node_label_value = f.node_label_value;
    }
  }
  if (!extension.node_label_value.empty()) {
    type.node_label_value = extension.node_label_value;
  }
  if (!extension.resource_name.empty()) {
    type.resource_name = extension.resource_name;
  }
  return absl::OkStatus();
}

}  // namespace accelsched
