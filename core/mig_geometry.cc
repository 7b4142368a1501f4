#include "core/mig_geometry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace accelsched {
namespace {

// Start-slot masks. Slot i is bit i.
constexpr uint8_t kStarts0to6 = 0b0111'1111;
constexpr uint8_t kStartsEven = 0b0101'0101;  // 0, 2, 4, 6
constexpr uint8_t kStarts024 = 0b0001'0101;
constexpr uint8_t kStarts04 = 0b0001'0001;
constexpr uint8_t kStart0 = 0b0000'0001;
constexpr uint8_t kStarts0to3 = 0b0000'1111;
constexpr uint8_t kStarts02 = 0b0000'0101;

// The 8-memory-slice, 7-compute-slice families share one shape (NVIDIA MIG user
// guide, "Supported MIG Profiles"); only the memory in the names differs. "+me"
// profiles carry the media engines and place like their 1g sibling.
#define ACCELSCHED_MIG_SHAPE(m1, m1x2, m2, m3, m4, m7)      \
  {                                                         \
    {m1, 1, 1, kStarts0to6}, {m1 "+me", 1, 1, kStarts0to6}, \
        {m1x2, 1, 2, kStartsEven}, {m2, 2, 2, kStarts024},  \
        {m3, 3, 4, kStarts04}, {m4, 4, 4, kStart0}, {       \
      m7, 7, 8, kStart0                                     \
    }                                                       \
  }

constexpr MigProfile kA100_40[] = ACCELSCHED_MIG_SHAPE(
    "1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb");
constexpr MigProfile kA100_80[] = ACCELSCHED_MIG_SHAPE(
    "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb");
constexpr MigProfile kH100_80[] = ACCELSCHED_MIG_SHAPE(
    "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb");
constexpr MigProfile kH100_94[] = ACCELSCHED_MIG_SHAPE(
    "1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb");
constexpr MigProfile kH200_141[] = ACCELSCHED_MIG_SHAPE(
    "1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb");
constexpr MigProfile kB200_180[] = ACCELSCHED_MIG_SHAPE(
    "1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb");
#undef ACCELSCHED_MIG_SHAPE

// A30: 4 memory and 4 compute slices.
constexpr MigProfile kA30_24[] = {
    {"1g.6gb", 1, 1, kStarts0to3}, {"1g.6gb+me", 1, 1, kStarts0to3},
    {"2g.12gb", 2, 2, kStarts02},  {"2g.12gb+me", 2, 2, kStarts02},
    {"4g.24gb", 4, 4, kStart0},
};

constexpr MigFamily kFamilies[] = {
    {"a100-40gb", 8, 7, kA100_40},   {"a100-80gb", 8, 7, kA100_80},
    {"h100-80gb", 8, 7, kH100_80},   {"h100-94gb", 8, 7, kH100_94},
    {"h200-141gb", 8, 7, kH200_141}, {"b200-180gb", 8, 7, kB200_180},
    {"a30-24gb", 4, 4, kA30_24},
};

}  // namespace

absl::Span<const MigFamily> AllMigFamilies() { return kFamilies; }

const MigFamily* FindMigFamily(absl::string_view family) {
  for (const MigFamily& f : kFamilies) {
    if (f.name == family) return &f;
  }
  return nullptr;
}

const MigProfile* FindMigProfile(const MigFamily& family,
                                 absl::string_view profile) {
  for (const MigProfile& p : family.profiles) {
    if (p.name == profile) return &p;
  }
  return nullptr;
}

std::string MigProfileNames(const MigFamily& family) {
  return absl::StrJoin(family.profiles, ", ",
                       [](std::string* out, const MigProfile& p) {
                         absl::StrAppend(out, p.name);
                       });
}

absl::Status ValidateMigLayout(const MigFamily& family,
                               absl::Span<const MigPlacement> layout) {
  uint32_t used = 0;
  int compute = 0;
  for (size_t i = 0; i < layout.size(); ++i) {
    const MigPlacement& p = layout[i];
    const MigProfile* profile = FindMigProfile(family, p.profile);
    if (profile == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "[", i, "].profile \"", p.profile, "\" is not a MIG profile of ",
          family.name, " (valid: ", MigProfileNames(family), ")"));
    }
    if (p.start < 0 || p.start >= family.memory_slices ||
        (profile->allowed_starts & (1u << p.start)) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("[", i, "].start ", p.start,
                       " is not a valid placement of ", p.profile));
    }
    const uint32_t mask = ((1u << profile->memory_slices) - 1) << p.start;
    if ((used & mask) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("[", i, "] ", p.profile, " at start ", p.start,
                       " overlaps another MIG slice on the same GPU"));
    }
    used |= mask;
    compute += profile->compute_slices;
  }
  if (compute > family.compute_slices) {
    return absl::InvalidArgumentError(
        absl::StrCat(" use ", compute, " compute slices; ", family.name,
                     " has ", family.compute_slices));
  }
  return absl::OkStatus();
}

}  // namespace accelsched
