#include "core/admission/admission.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace accelsched {
namespace {

// Plans made in one pass at most, and plans ahead looked for at most: each
// costs a search over the candidate GPUs.
constexpr int kMaxRelayoutsPerPass = 16;
constexpr int kMaxAheadSearchesPerPass = 16;

// What a preemptor waiting out its victims' grace adds to its reason.
std::string WaitingForVictims(size_t n) {
  return absl::StrCat("; waiting for ", n, " preempted allocation",
                      n == 1 ? "" : "s", " to end");
}

// One admission pass: composes the planners and applies their decisions
// through the scheduler's actions, one request at a time, so that each
// decision is seen by the rest of the pass.
class AdmissionRound {
 public:
  AdmissionRound(const AdmissionContext& ctx, const Queue& queue,
                 const AdmissionActions& actions)
      : ctx_(ctx),
        queue_(queue),
        actions_(actions),
        shares_(ctx),
        reservations_(
            ctx, [&queue](absl::string_view id) { return queue.contains(id); }),
        preemption_(ctx, reservations_) {
    for (const auto& [node, device] : ctx.catalog->mig_plans()) {
      const Device* d =
          FindDevice(ctx.catalog->nodes().find(node)->second, device);
      auto& [where, gpus] = relayouts_[d->mig_plan->allocation_id];
      where = node;
      gpus.push_back(device);
    }
  }
  AdmissionRound(const AdmissionRound&) = delete;
  AdmissionRound& operator=(const AdmissionRound&) = delete;

  // A tenant's dominant share, computed once per pass and again after each
  // admission of its own.
  double Share(const std::string& tenant) { return shares_.Share(tenant); }

  Queue::Verdict Visit(const std::string& id) {
    // Without quotas every tenant's request of a shape has the same rights
    // (preemption goes by priority, and a walk goes down the priorities): a
    // shape that did not fit is given up on for all of them, the cheapest
    // step of a pass. With quotas the models a request may take, and
    // whether it may reclaim, are the tenant's: only its group is.
    const bool quotas = ctx_.tenants->has_quotas();
    const std::string& shape = queue_.Shape(id);
    if (!quotas) {
      if (auto blocked = blocked_.find(shape); blocked != blocked_.end()) {
        actions_.wait(id, ReasonOf(id, blocked->second));
        return Queue::Verdict::kSkipShape;
      }
    }
    const Allocation& p = ctx_.book->Find({id, ""})->allocation;
    std::string why;
    Reclaim reclaim;
    const std::optional<MatchSpec> spec =
        WithinQuota(ctx_, p.tenant, SpecOf(p), &why, &reclaim);
    const Queue::Verdict miss =
        quotas ? Queue::Verdict::kSkipGroup : Queue::Verdict::kSkipShape;
    EligibilityRules rules = ctx_.rules;
    rules.reservations = reservations_.reservations();
    rules.requester = id;
    rules.ends_at = LeaseEnd(ctx_, p);
    rules.priority = p.priority;
    if (!spec.has_value()) {
      MatchSpec pool = SpecOf(p);
      if (reclaim.milli > 0) pool.requested_models = {reclaim.pool.model};
      // Held afresh each pass, and not at all once nothing is in grace for
      // it: a quota-blocked request holds nothing.
      reservations_.Forget(id);
      if (const auto& victims = ctx_.book->VictimsOf(id); !victims.empty()) {
        absl::StrAppend(&why, WaitingForVictims(victims.size()));
        // A share's reclaim victims free quota, not the room it fits in
        // (held by HoldFit): their nodes are not held for a fraction of a
        // GPU. (Its victims by priority, its only others, free its room.)
        if (!p.share.has_value() || reclaim.milli == 0) {
          reservations_.HoldVictimNodes(id, p.priority, victims);
        }
        if (reclaim.milli > 0) reservations_.HoldFit(id, pool, rules);
      } else if (reclaim.milli > 0 && ctx_.preemption) {
        // Within its own quota, short of the cohort's: take back what
        // borrowers hold, from anywhere when the request fits now (holding
        // where it fits), else from the node that then fits it (not for a
        // share: ChooseVictims takes nothing for a share in a reclaim).
        const bool fits = MatchRequest(ctx_, pool, rules).has_value();
        const int n =
            fits ? ReclaimQuota(id, p, reclaim)
                 : Preempt(id, p, pool, /*borrowed_only=*/true, reclaim.milli);
        if (n > 0) {
          if (fits) reservations_.HoldFit(id, pool, rules);
          absl::StrAppend(&why, "; preempted ", n, " borrowing allocation",
                          n == 1 ? "" : "s", ", waiting for their grace");
        }
      }
      actions_.wait(id, why);
      return Queue::Verdict::kSkipGroup;
    }
    // Keyed by what the request may take (its tenant's quota may have
    // narrowed its models).
    const std::string key =
        quotas ? absl::StrCat(shape, "|", absl::StrJoin(spec->requested_models, ","))
               : shape;
    if (quotas) {
      if (auto blocked = blocked_.find(key);
          blocked != blocked_.end() && !MayReclaim(ctx_, p, *spec)) {
        actions_.wait(id, ReasonOf(id, blocked->second));
        return miss;
      }
    }
    if (auto groups = MatchRequest(ctx_, *spec, rules)) {
      shares_.Forget(p.tenant);
      preemption_.NoteAdmitted(id);
      reservations_.Forget(id);
      actions_.admit(id, *std::move(groups));
      return Queue::Verdict::kTaken;
    }
    std::string reason = WaitReason(ctx_, *spec);
    if (relayouts_.contains(id)) {
      actions_.wait(id, ReasonOf(id, reason));
      return Queue::Verdict::kPassed;
    }
    const std::set<std::string>& victims = ctx_.book->VictimsOf(id);
    // Re-slicing idle MIG GPUs goes before preempting anyone.
    const Relayout relayout =
        victims.empty() ? PlanRelayoutFor(id, p, *spec) : Relayout::kNone;
    if (relayout == Relayout::kPlanned) return Queue::Verdict::kPassed;
    // Held since the last periodic pass for a re-layout no GPU can give any
    // more (its node left, or stopped re-laying out): let go, and the request
    // waits as any other.
    if (relayout == Relayout::kNone && !ctx_.plan_relayouts &&
        !reservations_.KeptAhead(id).empty()) {
      reservations_.Forget(id);
    }
    if (relayout == Relayout::kLater) {
      absl::StrAppend(&reason,
                      "; a MIG re-layout is looked for at the next periodic "
                      "pass");
    }
    if (!victims.empty()) {
      absl::StrAppend(&reason, WaitingForVictims(victims.size()));
      reservations_.HoldVictimNodes(id, p.priority, victims);
    } else if (int n = ctx_.preemption && relayout == Relayout::kNone
                           ? Preempt(id, p, *spec)
                           : 0;
               n > 0) {
      absl::StrAppend(&reason, "; preempted ", n, " allocation",
                      n == 1 ? "" : "s", ", waiting for their grace");
    } else if (spec->share.has_value()) {
      // A share holds no reservation yet (README, "GPU sharing"); it does
      // not take its pool's turn to reserve either, so that a whole request
      // after it still holds the GPUs that free first.
    } else if (std::string ahead = PlanAhead(id, p, *spec, relayout);
               !ahead.empty()) {
      absl::StrAppend(&reason, ahead);
    } else {
      absl::StrAppend(&reason, reservations_.Reserve(id, *spec, p.priority));
    }
    blocked_.emplace(key, reason);
    actions_.wait(id, reason);
    return miss;
  }

  // The pass's reservations, with a start for each request whose MIG
  // re-layout is under way: as soon as its agent reports the new layout.
  ReservationState TakeReservations() {
    ReservationState state = reservations_.Take();
    for (const auto& [id, where] : relayouts_) {
      const AllocationBook::Record* r = ctx_.book->Find({id, ""});
      if (r != nullptr && r->allocation.pending()) {
        state.starts[id] = ctx_.rules.now;
      }
    }
    return state;
  }

  // Preemptors whose victims have all ended go first, onto the nodes held
  // for them (else a request ahead of them in the order, which could not
  // preempt, would take what was freed for them); one that still does not
  // get in lets its holds go and waits like any other. Each has had its
  // turn: the walk passes it by.
  void AdmitRipeHolders() {
    for (const std::string& id : reservations_.kept_holders()) {
      if (!ctx_.book->VictimsOf(id).empty()) continue;  // still in grace
      Visit(id);
      reservations_.Forget(id);
      visited_.insert(id);
    }
  }

  // Requests whose re-layout is done take the slices made for them before
  // a request ahead of them in the order could; one that still does not
  // get in waits like any other, its turn had.
  void AdmitRelayoutsDone(const Queue& queue) {
    for (const std::string& id : ctx_.relayouts_done) {
      if (!queue.contains(id) || visited_.contains(id)) continue;
      Visit(id);
      visited_.insert(id);
    }
  }

  Queue::Verdict VisitOnce(const std::string& id) {
    if (visited_.contains(id)) return Queue::Verdict::kSkipGroup;
    return Visit(id);
  }

 private:
  // Why `id` waits: for its MIG re-layout in flight, if it has one, else
  // `reason`.
  std::string ReasonOf(const std::string& id, const std::string& reason) const {
    auto in_flight = relayouts_.find(id);
    if (in_flight == relayouts_.end()) return reason;
    return RelayoutReason(in_flight->second.first, in_flight->second.second);
  }

  enum class Relayout {
    kNone,     // no re-layout serves the request
    kPlanned,  // one was planned for it
    kLater,    // one might, and only the periodic pass plans
  };

  // Plans a MIG re-layout that lets pending `id` (`p`, asking `spec`) fit,
  // and tells the scheduler and the request, when one does and this pass
  // may plan (at most kMaxRelayoutsPerPass per pass).
  Relayout PlanRelayoutFor(const std::string& id, const Allocation& p,
                           const MatchSpec& spec) {
    if (ctx_.types == nullptr || spec.partition.empty() || spec.replicas > 1 ||
        spec.share.has_value()) {
      return Relayout::kNone;
    }
    if (std::none_of(spec.requested_models.begin(), spec.requested_models.end(),
                     [&](const std::string& model) {
                       return !ctx_.catalog->RelayoutGpus(model).empty();
                     })) {
      return Relayout::kNone;
    }
    if (!ctx_.plan_relayouts || relayouts_planned_ >= kMaxRelayoutsPerPass) {
      return Relayout::kLater;
    }
    // Slices of a pool whose node is held for another request stay.
    auto pinned = [&](const Unit& unit) {
      return reservations_.ReservedForOther(unit.pool, unit.home, id,
                                            p.priority);
    };
    std::optional<RelayoutChoice> choice =
        PlanRelayout(ctx_, *ctx_.types, spec, pinned);
    if (!choice.has_value()) return Relayout::kNone;
    ++relayouts_planned_;
    actions_.plan_relayout(id, *choice);
    std::vector<std::string> gpus;
    for (const RelayoutChoice::Gpu& g : choice->gpus) {
      gpus.push_back(g.device_id);
    }
    actions_.wait(id, RelayoutReason(choice->node, gpus));
    relayouts_[id] = {choice->node, std::move(gpus)};
    return Relayout::kPlanned;
  }

  // For `id` (`p`, asking `spec`), the first of its shape that must wait,
  // when no re-layout serves it now (`relayout`) and no slice of its profile
  // exists: holds the pools of a MIG GPU whose held slices free within
  // ctx.relayout_ahead, where a re-layout will serve it then (the first
  // periodic pass after they are free plans it, as for any request).
  // Between periodic passes, the holds it made at the last one, kept.
  // Returns what to add to its reason, or "" (nothing planned ahead: it
  // reserves as any other).
  std::string PlanAhead(const std::string& id, const Allocation& p,
                        const MatchSpec& spec, Relayout relayout) {
    if (!ctx_.plan_relayouts) return reservations_.KeptAhead(id);
    if (relayout != Relayout::kNone || ctx_.types == nullptr ||
        ctx_.relayout_ahead <= absl::ZeroDuration() ||
        ahead_searches_ >= kMaxAheadSearchesPerPass) {
      return "";
    }
    // Where some slice of the profile exists, the one that frees first is
    // reserved as for any request (Reserve): no GPU is re-sliced ahead for
    // what a release gives.
    for (const std::string& model : spec.requested_models) {
      const CapacityIndex::Pool* pool = ctx_.catalog->index().FindPool(
          PoolKey{spec.device_class, model, spec.partition});
      if (pool != nullptr && pool->total > 0) return "";
    }
    // Unlike a plan made now, one ahead holds pools: it leaves alone every
    // hold of another, even a nominated one it would outrank (taking that
    // over would end the preemptor's).
    auto pinned = [&](const Unit& unit) {
      return reservations_.HeldForOther(unit.pool, unit.home, id);
    };
    ++ahead_searches_;
    std::optional<RelayoutChoice> choice = PlanRelayout(
        ctx_, *ctx_.types, spec, pinned, ctx_.rules.now + ctx_.relayout_ahead);
    if (!choice.has_value() || choice->start == absl::InfinitePast()) {
      return "";
    }
    std::vector<std::string> gpus;
    for (const RelayoutChoice::Gpu& g : choice->gpus) {
      gpus.push_back(g.device_id);
    }
    return reservations_.HoldPools(
        id, p.priority, choice->node, choice->pools, choice->start,
        absl::StrCat(" for a MIG re-layout of ", absl::StrJoin(gpus, ", "),
                     " once the allocations on its slices end"));
  }

  // Preempts the borrowers of reclaim.pool that give back what `p`'s
  // tenant lacks; returns how many (0: not enough borrowed to reclaim).
  int ReclaimQuota(const std::string& id, const Allocation& p,
                   const Reclaim& reclaim) {
    const std::vector<std::string> victims =
        preemption_.ChooseReclaimVictims(p, reclaim);
    for (const std::string& victim : victims) actions_.preempt(victim, id);
    return static_cast<int>(victims.size());
  }

  // Preempts the fewest allocations that let `p` fit on one node and holds
  // their nodes for it; returns how many (0: none would do).
  int Preempt(const std::string& id, const Allocation& p, const MatchSpec& spec,
              bool borrowed_only = false, int64_t quota_milli = 0) {
    std::optional<VictimChoice> choice =
        preemption_.ChooseVictims(id, p, spec, borrowed_only, quota_milli);
    if (!choice.has_value()) return 0;
    for (const std::string& victim : choice->victims) {
      actions_.preempt(victim, id);
    }
    reservations_.HoldVictimNodes(id, p.priority, ctx_.book->VictimsOf(id));
    return static_cast<int>(choice->victims.size());
  }

  const AdmissionContext& ctx_;
  const Queue& queue_;
  const AdmissionActions& actions_;
  ShareCache shares_;
  ReservationPlanner reservations_;
  PreemptionPlanner preemption_;
  // Shapes that did not fit this pass, with why.
  absl::flat_hash_map<std::string, std::string> blocked_;
  // Kept holders visited already, ahead of the walk.
  absl::flat_hash_set<std::string> visited_;
  // MIG re-layouts in flight, by the allocation they are for: its node and
  // GPUs.
  absl::flat_hash_map<std::string,
                      std::pair<std::string, std::vector<std::string>>>
      relayouts_;
  int relayouts_planned_ = 0;
  int ahead_searches_ = 0;
};

}  // namespace

ReservationState RunAdmissionPass(const AdmissionContext& ctx,
                                  const Queue& queue,
                                  const AdmissionActions& actions) {
  AdmissionRound round(ctx, queue, actions);
  round.AdmitRipeHolders();
  round.AdmitRelayoutsDone(queue);
  queue.Walk([&](const std::string& tenant) { return round.Share(tenant); },
             [&](const std::string& id) { return round.VisitOnce(id); });
  return round.TakeReservations();
}

}  // namespace accelsched
