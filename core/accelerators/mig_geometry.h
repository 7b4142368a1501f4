// MIG (Multi-Instance GPU) geometry: a GPU's memory slots and compute slices,
// the GPU-instance profiles it offers with their sizes and allowed placements,
// the checks that such a table is consistent, and validation of a reported
// layout against it. The tables themselves are data in the accelerator-type
// accelerator types; everything here is a pure function.
#ifndef ACCELSCHED_CORE_ACCELERATORS_MIG_GEOMETRY_H_
#define ACCELSCHED_CORE_ACCELERATORS_MIG_GEOMETRY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace accelsched {

// At most this many memory slots: placements are kept as bit masks.
inline constexpr int kMaxMigSlots = 32;

struct MigProfile {
  std::string name;         // "1g.10gb"
  int memory_slices = 0;    // slots the instance occupies from its start slot
  int compute_slices = 0;   // the "Ng" part: 1, 2, 3, 4 or 7
  std::vector<int> starts;  // the allowed start slots, ascending
  // At most this many on one GPU when fewer than the starts allow ("+me"
  // profiles: 1); 0: as many as fit.
  int max_instances = 0;
};

struct MigGeometry {
  int memory_slices = 0;   // 8 on an A100, 4 on an A30; 0: no MIG
  int compute_slices = 0;  // 7 on an A100, 4 on an A30
  std::vector<MigProfile> profiles;

  bool empty() const { return profiles.empty(); }
  // nullptr when `name` is not a profile here (names are case-sensitive, as
  // nvidia-smi prints them).
  const MigProfile* Find(absl::string_view name) const;
  // The profile names, comma-separated, for error messages.
  std::string ProfileNames() const;
};

// OK when the geometry is empty (no MIG) or consistent: 1..kMaxMigSlots memory
// slots, compute slices at least 1, and every profile with a unique non-empty
// name of printable characters without spaces or commas, memory and compute
// slices within the GPU's, at least one start, each ascending and unique, at
// which the instance fits on the GPU, and max_instances not negative. Otherwise
// INVALID_ARGUMENT whose message names the field ("mig_profiles[2].starts
// ...").
absl::Status ValidateMigGeometry(const MigGeometry& geometry);

struct MigPlacement {
  absl::string_view profile;
  int start;
};

// OK when every profile exists in `geometry`, every start is allowed for its
// profile, no two instances share a memory slot, no profile has more than its
// max_instances, and the compute slices add up to at most the GPU's. `model`
// names the GPU in messages. Errors are INVALID_ARGUMENT whose message
// continues the caller's field name: it starts with the offending entry's
// position ("[2].start 3 is ...") or with " use 8 compute ...".
absl::Status ValidateMigLayout(const MigGeometry& geometry,
                               absl::string_view model,
                               absl::Span<const MigPlacement> layout);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_ACCELERATORS_MIG_GEOMETRY_H_
