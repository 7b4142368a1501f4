#include "core/plugins/preemption/preemption.h"

#include "absl/strings/str_cat.h"
#include "core/plugins/preemption/victim_search.h"

namespace accelsched {

std::string WaitingForVictims(size_t n) {
  return absl::StrCat("; waiting for ", n, " preempted allocation",
                      n == 1 ? "" : "s", " to end");
}

int PreemptFor(Session& session, const CycleState& cycle, const Plugin& owner,
               const std::string& id, const Allocation& request,
               const MatchSpec& spec, bool borrowed_only, int64_t quota_milli) {
  std::optional<VictimChoice> choice =
      session.StateOf<VictimSearch>(owner).ChooseVictims(
          cycle, id, request, spec, borrowed_only, quota_milli);
  if (!choice.has_value()) return 0;
  for (const std::string& victim : choice->victims) {
    session.statement().Preempt(victim, id);
  }
  session.holds().HoldVictimNodes(
      *session.snapshot().index, id, request.priority,
      session.snapshot().book->tallies().VictimsOf(id));
  return static_cast<int>(choice->victims.size());
}

std::unique_ptr<Plugin> PreemptionPlugin::New() {
  return std::make_unique<PreemptionPlugin>();
}

PostFilterResult PreemptionPlugin::PostFilter(
    Session& session, CycleState& cycle, const CycleFailure& failure) const {
  const Snapshot& snap = session.snapshot();
  if (failure.kind != CycleFailure::Kind::kNoFit || snap.book == nullptr ||
      cycle.request().id.empty()) {
    return {};
  }
  const std::string id(cycle.request().id);
  const Allocation& p = cycle.request();
  PostFilterResult r;
  if (const std::set<std::string>& victims = snap.book->tallies().VictimsOf(id);
      !victims.empty()) {
    r.code = PostFilterResult::Code::kWaiting;
    r.reason = WaitingForVictims(victims.size());
    session.holds().HoldVictimNodes(*snap.index, id, p.priority, victims);
    return r;
  }
  if (cycle.notes().deferred) return r;
  const int n = PreemptFor(session, cycle, *this, id, p, cycle.spec());
  if (n == 0) return r;
  r.code = PostFilterResult::Code::kWaiting;
  r.reason = absl::StrCat("; preempted ", n, " allocation", n == 1 ? "" : "s",
                          ", waiting for their grace");
  r.detail = absl::StrCat(
      cycle.mode() == CycleMode::kExplain ? "would preempt " : "preempted ", n,
      " allocation", n == 1 ? "" : "s");
  return r;
}

}  // namespace accelsched
