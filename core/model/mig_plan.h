// How a GPU's reported MIG layout stands against the re-layout planned for it
// (MigPlan, catalog_model.h). Pure functions.
#ifndef ACCELSCHED_CORE_MODEL_MIG_PLAN_H_
#define ACCELSCHED_CORE_MODEL_MIG_PLAN_H_

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "core/model/catalog_model.h"

namespace accelsched {

enum class MigPlanProgress {
  kApplied,     // the GPU has exactly the planned layout
  kInProgress,  // part of the way there
  kBroken,      // the layout changed in a way the plan does not explain
};

// Where a GPU that reports `now` stands with `plan`, made when it had
// `before`. Slices are compared by profile and start (a re-created slice has
// a new id): kApplied when `now` is the plan's layout; kInProgress when each
// slice of `now` is one the plan has, or one of `before` that the plan
// destroys (the agent has not got to it yet); kBroken otherwise (someone
// else re-sliced the GPU).
MigPlanProgress ProgressOf(const MigPlan& plan,
                           absl::Span<const MigSlice> before,
                           absl::Span<const MigSlice> now);

// The slices of `from` that `plan` destroys: those whose profile and start
// it does not have.
std::vector<MigSlice> PlannedAway(const MigPlan& plan,
                                  absl::Span<const MigSlice> from);

// "1g.10gb@0 1g.10gb@1 3g.40gb@4": profiles at their starts, for messages.
std::string DescribeMigLayout(absl::Span<const MigSlice> slices);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_MODEL_MIG_PLAN_H_
