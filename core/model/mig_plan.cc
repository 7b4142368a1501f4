#include "core/model/mig_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace accelsched {
namespace {

bool SamePlace(const MigSlice& a, const MigSlice& b) {
  return a.profile == b.profile && a.start == b.start;
}

bool Has(absl::Span<const MigSlice> slices, const MigSlice& s) {
  return std::any_of(slices.begin(), slices.end(),
                     [&](const MigSlice& t) { return SamePlace(s, t); });
}

}  // namespace

MigPlanProgress ProgressOf(const MigPlan& plan,
                           absl::Span<const MigSlice> before,
                           absl::Span<const MigSlice> now) {
  const std::vector<MigSlice> away = PlannedAway(plan, before);
  bool applied = now.size() == plan.slices.size();
  for (const MigSlice& s : now) {
    if (Has(plan.slices, s)) continue;
    applied = false;
    if (!Has(away, s)) return MigPlanProgress::kBroken;
  }
  // Same size and every slice of `now` in the plan: no two slices of a
  // valid layout share a start, so the two are the same set.
  return applied ? MigPlanProgress::kApplied : MigPlanProgress::kInProgress;
}

std::vector<MigSlice> PlannedAway(const MigPlan& plan,
                                  absl::Span<const MigSlice> from) {
  std::vector<MigSlice> away;
  for (const MigSlice& s : from) {
    if (!Has(plan.slices, s)) away.push_back(s);
  }
  return away;
}

std::string DescribeMigLayout(absl::Span<const MigSlice> slices) {
  return absl::StrJoin(slices, " ", [](std::string* out, const MigSlice& s) {
    absl::StrAppend(out, s.profile, "@", s.start);
  });
}

}  // namespace accelsched
