// Dynamic MIG re-layout of one GPU: the layout to re-slice a GPU into so
// that it offers a profile a waiting request needs, keeping every slice that
// is in use, and how much of a GPU's free space the recent mix of requests
// could not use where it lies (fragmentation, as FGD measures it for whole
// units: core/packing/placement_score.h). Pure functions over the GPU's MIG
// geometry (the accelerator type's data: memory slots, compute slices, each
// profile's allowed starts and instance limit), so every layout planned is
// one NVIDIA's placement rules allow.
#ifndef ACCELSCHED_CORE_RELAYOUT_MIG_LAYOUT_PLANNER_H_
#define ACCELSCHED_CORE_RELAYOUT_MIG_LAYOUT_PLANNER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/accelerators/mig_geometry.h"
#include "core/model/catalog_model.h"

namespace accelsched {

// A slice that exists on the GPU now. A pinned one (allocated, reserved,
// held through a preemption grace, unhealthy) stays exactly as it is; a free
// one may be destroyed.
struct MigSliceState {
  MigSlice slice;
  bool pinned = false;
};

// How much the recent mix asks of one profile of the GPU's model
// (RequestMix::UnitsAsked); only the ratios between profiles matter.
struct MigDemand {
  std::string profile;
  double weight = 0;
};

struct MigLayoutPlan {
  // The whole layout, ascending by start: kept slices with their ids, new
  // ones with an empty id.
  std::vector<MigSlice> layout;
  int targets = 0;    // new slices of the target profile, at most `want`
  int destroyed = 0;  // free slices destroyed
  int created = 0;    // slices created, targets included
  // MigFragmentation before the plan, and after it with its target slices
  // taken.
  double fragmentation_before = 0;
  double fragmentation_after = 0;
};

// The layout that gives the GPU new slices of profile `target` for a request
// that still needs `want` (at least 1) of them, keeping every pinned slice.
// Of all layouts of `geometry` (every profile at its allowed starts, slots
// not overlapping, compute and instance limits kept) that do, it takes, in
// this order: the most new target slices up to `want`; the fewest free
// slices destroyed; the least fragmentation after, with those target slices
// taken; the fewest slices created; then the first in start order. Free
// slices of the target profile that exist already are kept, not counted:
// the caller takes those first. nullopt when no layout adds one (the
// geometry has no such profile, or pinned slices leave no room for it).
// Searches at most kMaxLayoutsVisited partial layouts (far more than any
// GPU of up to 8 memory slots has).
std::optional<MigLayoutPlan> PlanMigLayout(const MigGeometry& geometry,
                                           absl::Span<const MigSliceState> now,
                                           absl::string_view target, int want,
                                           absl::Span<const MigDemand> mix);

inline constexpr int kMaxLayoutsVisited = 200000;

// The expected compute slices of a GPU's free space that a request drawn
// from `mix` (weights normalised over its profiles) could not use: for each
// profile, the free compute (free slices, and compute no slice holds) less
// what that profile could use, that is its own free slices plus the
// instances of it that fit in memory slots no slice holds (within the
// compute and instance limits). `layout` is every slice of the GPU; `free`
// says which of them are free. 0 for an empty mix.
double MigFragmentation(const MigGeometry& geometry,
                        absl::Span<const MigSlice> layout,
                        const std::vector<bool>& free,
                        absl::Span<const MigDemand> mix);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_RELAYOUT_MIG_LAYOUT_PLANNER_H_
