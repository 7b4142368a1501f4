// MIG (Multi-Instance GPU) geometry: the GPU-instance profiles each MIG-capable
// GPU family offers, with their sizes and allowed placements, and validation of
// a reported layout. The tables are immutable data; everything here is
// thread-safe.
#ifndef ACCELSCHED_CORE_MIG_GEOMETRY_H_
#define ACCELSCHED_CORE_MIG_GEOMETRY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace accelsched {

struct MigProfile {
  absl::string_view name;  // "1g.10gb"
  int compute_slices;      // the "Ng" part: 1, 2, 3, 4 or 7
  int memory_slices;  // slots the instance occupies, starting at its start slot
  uint8_t allowed_starts;  // bit i set: start slot i is a valid placement
};

struct MigFamily {
  absl::string_view name;  // "a100-40gb"
  int memory_slices;       // 8, or 4 on A30
  int compute_slices;      // 7, or 4 on A30
  absl::Span<const MigProfile> profiles;
};

absl::Span<const MigFamily> AllMigFamilies();

// nullptr when unknown.
const MigFamily* FindMigFamily(absl::string_view family);
const MigProfile* FindMigProfile(const MigFamily& family,
                                 absl::string_view profile);

// The family's profile names, comma-separated, for error messages.
std::string MigProfileNames(const MigFamily& family);

struct MigPlacement {
  absl::string_view profile;
  int start;
};

// OK when every profile exists in the family, every start is allowed for its
// profile, no two instances share a memory slot, and the compute slices add up
// to at most the family's. Errors are INVALID_ARGUMENT whose message continues
// the caller's field name: it starts with the offending entry's position
// ("[2].start 3 is ...") or with " use 8 compute ...".
absl::Status ValidateMigLayout(const MigFamily& family,
                               absl::Span<const MigPlacement> layout);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_MIG_GEOMETRY_H_
