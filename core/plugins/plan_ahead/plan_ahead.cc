#include "core/plugins/plan_ahead/plan_ahead.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/plugins/mig_relayout/relayout_planner.h"

namespace accelsched {
namespace {

// Searches made in the session.
struct Searches : SessionState {
  explicit Searches(Session&) {}
  int made = 0;
};

}  // namespace

std::unique_ptr<Plugin> PlanAheadPlugin::New() {
  return std::make_unique<PlanAheadPlugin>();
}

PostFilterResult PlanAheadPlugin::PostFilter(
    Session& session, CycleState& cycle, const CycleFailure& failure) const {
  const Snapshot& snap = session.snapshot();
  const MatchSpec& spec = cycle.spec();
  PostFilterResult r;
  if (failure.kind != CycleFailure::Kind::kNoFit || snap.book == nullptr ||
      cycle.request().id.empty() || spec.share.has_value()) {
    return r;
  }
  const std::string id(cycle.request().id);
  Holds& holds = session.holds();
  // Between periodic passes, the holds it made at the last one, kept.
  if (!snap.plan_relayouts) {
    r.reason = holds.KeptAhead(id);
    if (!r.reason.empty()) r.code = PostFilterResult::Code::kWaiting;
    return r;
  }
  Searches& searches = session.StateOf<Searches>(*this);
  if (cycle.notes().deferred || snap.types == nullptr ||
      snap.relayout_ahead <= absl::ZeroDuration() ||
      searches.made >= kMaxSearchesPerPass) {
    return r;
  }
  // Where some slice of the profile exists, the one that frees first is
  // reserved as for any request: no GPU is re-sliced ahead for what a
  // release gives.
  for (const std::string& model : spec.requested_models) {
    const CapacityIndex::Pool* pool =
        snap.index->FindPool(PoolKey{spec.device_class, model, spec.partition});
    if (pool != nullptr && pool->total > 0) return r;
  }
  // Unlike a plan made now, one ahead holds pools: it leaves alone every
  // hold of another, even a nominated one it would outrank.
  auto pinned = [&](const Unit& unit) {
    return holds.HoldForOther(unit.pool, unit.home, id,
                              /*priority=*/std::nullopt) != nullptr;
  };
  ++searches.made;
  std::optional<RelayoutChoice> choice = PlanRelayout(
      cycle, *snap.types, spec, pinned, snap.now + snap.relayout_ahead);
  if (!choice.has_value() || choice->start == absl::InfinitePast()) return r;
  std::vector<std::string> gpus;
  for (const RelayoutChoice::Gpu& g : choice->gpus) {
    gpus.push_back(g.device_id);
  }
  r.code = PostFilterResult::Code::kWaiting;
  r.reason = holds.HoldAhead(
      id, cycle.request().priority, choice->node, choice->pools, choice->start,
      absl::StrCat(" for a MIG re-layout of ", absl::StrJoin(gpus, ", "),
                   " once the allocations on its slices end"));
  return r;
}

}  // namespace accelsched
