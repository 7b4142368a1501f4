#include "core/plugins/accelerator_fit/accelerator_fit.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "core/framework/placement.h"

namespace accelsched {

std::unique_ptr<Plugin> AcceleratorFitPlugin::New() {
  return std::make_unique<AcceleratorFitPlugin>();
}

Verdict AcceleratorFitPlugin::PreFilter(Session& session,
                                        CycleState& cycle) const {
  const MatchSpec& spec = cycle.spec();
  const PoolCandidates candidates =
      CandidatePools(*cycle.snapshot().index, spec);
  if (candidates.empty()) {
    return Verdict::Unresolvable(
        absl::StrCat("no node has any ", SpecUnitName(spec)));
  }
  int most = 0;
  for (const PoolCandidate& c : candidates) {
    most = std::max(most, *c.pool->home_sizes.rbegin());
  }
  if (spec.count > most) {
    return Verdict::Unresolvable(absl::StrCat(
        "count ", spec.count, " is more than any node holds: at most ", most,
        " ", SpecUnitName(spec), most == 1 ? "" : "s", " on one node"));
  }
  if (spec.replicas > 1) {
    int64_t nodes = 0;  // in the pool with the most that could hold a group
    for (const PoolCandidate& c : candidates) {
      const auto& sizes = c.pool->home_sizes;
      nodes = std::max<int64_t>(
          nodes, std::distance(sizes.lower_bound(spec.count), sizes.end()));
    }
    if (nodes < spec.replicas) {
      return Verdict::Unresolvable(absl::StrCat(
          "replicas ", spec.replicas, " is more than the cluster holds: ",
          nodes, " node", nodes == 1 ? "" : "s", " could ever hold ",
          spec.count, " ", SpecUnitName(spec), spec.count == 1 ? "" : "s"));
    }
  }
  return Verdict::Success();
}

}  // namespace accelsched
