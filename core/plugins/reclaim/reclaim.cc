#include "core/plugins/reclaim/reclaim.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/framework/framework.h"
#include "core/plugins/preemption/preemption.h"
#include "core/plugins/preemption/victim_search.h"
#include "core/plugins/quota/quota.h"
#include "core/tenants/quota_usage.h"

namespace accelsched {
namespace {

// Holds, from now and nominated, the nodes `cycle`'s spec fits on now for
// its requester (a reclaimer waiting for its quota), so that nothing after it
// takes them; nodes already held for another are left alone.
void HoldFit(Session& session, const CycleState& cycle) {
  std::optional<Groups> groups = session.framework().Place(session, cycle);
  if (!groups.has_value()) return;
  Holds& holds = session.holds();
  const std::string id(cycle.request().id);
  for (const auto& group : *groups) {
    const Unit& u = *group.front();
    if (holds.HoldForOther(u.pool, u.home, id, cycle.request().priority))
      continue;
    holds.TakeTurn(u.pool);
    holds.Hold(u.pool, u.home,
               Reservation{session.snapshot().now, id, /*nominated=*/true,
                           cycle.request().priority});
  }
}

}  // namespace

std::unique_ptr<Plugin> ReclaimPlugin::New() {
  return std::make_unique<ReclaimPlugin>();
}

PostFilterResult ReclaimPlugin::PostFilter(Session& session, CycleState& cycle,
                                           const CycleFailure& failure) const {
  const QuotaRefusal* refusal = cycle.data().Find<QuotaRefusal>();
  const Snapshot& snap = session.snapshot();
  if (failure.kind != CycleFailure::Kind::kRefused || refusal == nullptr ||
      snap.book == nullptr || cycle.request().id.empty()) {
    return {};
  }
  const std::string id(cycle.request().id);
  const Allocation& p = cycle.request();
  const Reclaim& reclaim = refusal->reclaim;
  // What a reclaim would open: the pool whose cohort quota stops it.
  MatchSpec pool = cycle.requested_spec();
  if (reclaim.milli > 0) pool.requested_models = {reclaim.pool.model};
  CycleState fit(cycle.mode(), snap, pool, p, &session.holds());
  session.framework().Prepare(fit);
  PostFilterResult r;
  if (const auto& victims = snap.book->tallies().VictimsOf(id);
      !victims.empty()) {
    r.code = PostFilterResult::Code::kWaiting;
    r.reason = WaitingForVictims(victims.size());
    // A share's reclaim victims free quota, not the room it fits in (held
    // by HoldFit): their nodes are not held for a fraction of a GPU. (Its
    // victims by priority, its only others, free its room.)
    if (!p.share.has_value() || reclaim.milli == 0) {
      session.holds().HoldVictimNodes(*snap.index, id, p.priority, victims);
    }
    if (reclaim.milli > 0) HoldFit(session, fit);
    return r;
  }
  if (reclaim.milli == 0) return r;
  // Within its own quota, short of the cohort's: take back what borrowers
  // hold, from anywhere when the request fits now (holding where it fits),
  // else from the node that then fits it (not for a share: ChooseVictims
  // takes nothing for a share in a reclaim).
  const bool fits = session.framework().Place(session, fit).has_value();
  int n = 0;
  if (fits) {
    for (const std::string& victim :
         session.StateOf<VictimSearch>(*this).ChooseReclaimVictims(p,
                                                                   reclaim)) {
      session.statement().Preempt(victim, id);
      ++n;
    }
  } else {
    n = PreemptFor(session, fit, *this, id, p, pool, /*borrowed_only=*/true,
                   reclaim.milli);
  }
  if (n == 0) return r;
  if (fits) HoldFit(session, fit);
  r.code = PostFilterResult::Code::kWaiting;
  r.reason = absl::StrCat("; preempted ", n, " borrowing allocation",
                          n == 1 ? "" : "s", ", waiting for their grace");
  r.detail = absl::StrCat(
      cycle.mode() == CycleMode::kExplain ? "would preempt " : "preempted ", n,
      " borrowing allocation", n == 1 ? "" : "s");
  return r;
}

bool ReclaimPlugin::MayHelpBlocked(const Session& session,
                                   const CycleState& cycle) const {
  // A share takes back quota only where it fits now (ChooseReclaimVictims,
  // before this is asked); it does not preempt borrowers to make room on a
  // node (docs/concepts/sharing.md).
  const Snapshot& snap = session.snapshot();
  const MatchSpec& spec = cycle.spec();
  if (snap.book == nullptr || spec.share.has_value()) return false;
  for (const PoolKey& key : PoolsFor(*snap.index, spec)) {
    if (ReclaimPossible(*snap.book, *snap.tenants, cycle.request(), key)) {
      return true;
    }
  }
  return false;
}

}  // namespace accelsched
