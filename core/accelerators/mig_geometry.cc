#include "core/accelerators/mig_geometry.h"

#include <algorithm>
#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/field_error.h"

namespace accelsched {
namespace {

// A profile name: what nvidia-smi prints, so no spaces; no commas, since names
// are listed comma-separated.
bool IsProfileName(absl::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return c > ' ' && c <= '~' && c != ','; });
}

// Slots start..start+memory_slices-1; 64 bits hold kMaxMigSlots without
// overflow.
uint64_t SlotMask(int memory_slices, int start) {
  return ((uint64_t{1} << memory_slices) - 1) << start;
}

}  // namespace

const MigProfile* MigGeometry::Find(absl::string_view name) const {
  for (const MigProfile& p : profiles) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string MigGeometry::ProfileNames() const {
  return absl::StrJoin(profiles, ", ",
                       [](std::string* out, const MigProfile& p) {
                         absl::StrAppend(out, p.name);
                       });
}

absl::Status ValidateMigGeometry(const MigGeometry& g) {
  if (g.profiles.empty()) {
    if (g.memory_slices != 0 || g.compute_slices != 0) {
      return InvalidField("mig_memory_slices",
                          "and mig_compute_slices need mig_profiles");
    }
    return absl::OkStatus();
  }
  if (g.memory_slices < 1 || g.memory_slices > kMaxMigSlots) {
    return InvalidField("mig_memory_slices",
                        absl::StrCat(g.memory_slices, " is out of range [1, ",
                                     kMaxMigSlots, "]"));
  }
  if (g.compute_slices < 1 || g.compute_slices > kMaxMigSlots) {
    return InvalidField("mig_compute_slices",
                        absl::StrCat(g.compute_slices, " is out of range [1, ",
                                     kMaxMigSlots, "]"));
  }
  absl::flat_hash_set<absl::string_view> names;
  for (size_t i = 0; i < g.profiles.size(); ++i) {
    const MigProfile& p = g.profiles[i];
    const std::string field = absl::StrCat("mig_profiles[", i, "]");
    if (!IsProfileName(p.name)) {
      return InvalidField(
          absl::StrCat(field, ".name"),
          absl::StrCat("\"", p.name,
                       "\" must be 1 to 64 printable characters "
                       "without spaces or commas"));
    }
    if (!names.insert(p.name).second) {
      return InvalidField(absl::StrCat(field, ".name"),
                          absl::StrCat("\"", p.name, "\" is listed twice"));
    }
    if (p.memory_slices < 1 || p.memory_slices > g.memory_slices) {
      return InvalidField(absl::StrCat(field, ".memory_slices"),
                          absl::StrCat(p.memory_slices, " is out of range [1, ",
                                       g.memory_slices, "] (the GPU's slots)"));
    }
    if (p.compute_slices < 1 || p.compute_slices > g.compute_slices) {
      return InvalidField(
          absl::StrCat(field, ".compute_slices"),
          absl::StrCat(p.compute_slices, " is out of range [1, ",
                       g.compute_slices, "] (the GPU's)"));
    }
    if (p.max_instances < 0) {
      return InvalidField(absl::StrCat(field, ".max_instances"),
                          "must not be negative");
    }
    if (p.starts.empty()) {
      return InvalidField(absl::StrCat(field, ".starts"),
                          "is empty: a profile needs at least one placement");
    }
    for (size_t j = 0; j < p.starts.size(); ++j) {
      const int s = p.starts[j];
      if (j > 0 && s <= p.starts[j - 1]) {
        return InvalidField(absl::StrCat(field, ".starts"),
                            "must be ascending without repeats");
      }
      if (s < 0 || s > g.memory_slices - p.memory_slices) {
        return InvalidField(
            absl::StrCat(field, ".starts[", j, "]"),
            absl::StrCat(s, ": ", p.name, " (", p.memory_slices,
                         " slots) does not fit there on a GPU of ",
                         g.memory_slices, " slots"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateMigLayout(const MigGeometry& geometry,
                               absl::string_view model,
                               absl::Span<const MigPlacement> layout) {
  uint64_t used = 0;
  int compute = 0;
  absl::flat_hash_map<absl::string_view, int> instances;
  for (size_t i = 0; i < layout.size(); ++i) {
    const MigPlacement& p = layout[i];
    const MigProfile* profile = geometry.Find(p.profile);
    if (profile == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "[", i, "].profile \"", p.profile, "\" is not a MIG profile of ",
          model, " (valid: ", geometry.ProfileNames(), ")"));
    }
    if (!std::binary_search(profile->starts.begin(), profile->starts.end(),
                            p.start)) {
      return absl::InvalidArgumentError(
          absl::StrCat("[", i, "].start ", p.start,
                       " is not a valid placement of ", p.profile));
    }
    const uint64_t mask = SlotMask(profile->memory_slices, p.start);
    if ((used & mask) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("[", i, "] ", p.profile, " at start ", p.start,
                       " overlaps another MIG slice on the same GPU"));
    }
    used |= mask;
    compute += profile->compute_slices;
    if (++instances[p.profile] > profile->max_instances &&
        profile->max_instances > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "[", i, "] ", p.profile, " is one too many: a GPU holds at most ",
          profile->max_instances));
    }
  }
  if (compute > geometry.compute_slices) {
    return absl::InvalidArgumentError(
        absl::StrCat(" use ", compute, " compute slices; ", model, " has ",
                     geometry.compute_slices));
  }
  return absl::OkStatus();
}

}  // namespace accelsched
