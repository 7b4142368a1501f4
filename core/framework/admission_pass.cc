#include "core/framework/admission_pass.h"

#include <set>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace accelsched {
namespace {

class Pass {
 public:
  Pass(const Framework& framework, Session& session, Queue& queue)
      : fw_(framework),
        session_(session),
        snap_(session.snapshot()),
        queue_(queue) {}
  Pass(const Pass&) = delete;
  Pass& operator=(const Pass&) = delete;

  double Rank(const std::string& tenant) {
    const QueueSortPlugin* sort = fw_.plugins().queue_sort();
    return sort == nullptr ? 0 : sort->TenantRank(session_, tenant);
  }

  Queue::Verdict Visit(const std::string& id) {
    // Without quotas every tenant's request of a shape has the same rights
    // (preemption goes by priority, and a walk goes down the priorities): a
    // shape that did not fit is given up on for all of them, the cheapest
    // step of a pass. With quotas the models a request may take, and
    // whether it may reclaim, are the tenant's: only its group is.
    const bool quotas = snap_.tenants->has_quotas();
    const std::string& shape = queue_.Shape(id);
    if (!quotas) {
      if (auto blocked = blocked_.find(shape); blocked != blocked_.end()) {
        queue_.SetReason(id,
                         fw_.ReasonWhileSkipped(session_, id, blocked->second));
        return Queue::Verdict::kSkipShape;
      }
    }
    const Allocation& p = snap_.book->Find({id, ""})->allocation;
    CycleState cycle(CycleMode::kAdmit, snap_, queue_.Spec(id), p,
                     &session_.holds());
    cycle.notes().queued = true;
    if (Verdict v = fw_.PreFilter(session_, cycle); !v.ok()) {
      const CycleResult r = fw_.PostFilter(
          session_, cycle,
          CycleFailure{CycleFailure::Kind::kRefused, nullptr, v.reason});
      queue_.SetReason(id, r.reason);
      return Queue::Verdict::kSkipGroup;
    }
    const Queue::Verdict miss =
        quotas ? Queue::Verdict::kSkipGroup : Queue::Verdict::kSkipShape;
    // Keyed by what the request may take (its tenant's quota may have
    // narrowed its models).
    const std::string key =
        quotas ? absl::StrCat(shape, "|",
                              absl::StrJoin(cycle.spec().requested_models, ","))
               : shape;
    if (quotas) {
      if (auto blocked = blocked_.find(key);
          blocked != blocked_.end() && !fw_.MayHelpBlocked(session_, cycle)) {
        queue_.SetReason(id,
                         fw_.ReasonWhileSkipped(session_, id, blocked->second));
        return miss;
      }
    }
    const PlacementPlugin* placer = fw_.plugins().PlacerFor(cycle);
    if (placer != nullptr) {
      if (std::optional<Groups> groups = placer->Place(session_, cycle)) {
        fw_.Reserve(session_, cycle, *groups);
        session_.statement().Place(id, *groups);
        return Queue::Verdict::kTaken;
      }
    }
    const CycleResult r = fw_.PostFilter(
        session_, cycle,
        CycleFailure{CycleFailure::Kind::kNoFit, nullptr,
                     placer == nullptr ? "" : placer->WhyNot(session_, cycle)});
    queue_.SetReason(id, r.reason);
    if (r.outcome == CycleResult::Outcome::kUnderWay) {
      return Queue::Verdict::kPassed;
    }
    blocked_.emplace(key, r.reason);
    return miss;
  }

  // Preemptors whose victims have all ended go first, onto the nodes held
  // for them; one that still does not get in lets its holds go and waits
  // like any other. Each has had its turn: the walk passes it by.
  void PlaceRipeHolders() {
    // A copy: a visit may take a holder out of the kept ones.
    const std::set<std::string> holders = session_.holds().kept_preemptors();
    for (const std::string& id : holders) {
      if (!snap_.book->tallies().VictimsOf(id).empty())
        continue;  // still in grace
      Visit(id);
      session_.holds().Release(id);
      visited_.insert(id);
    }
  }

  // Requests whose re-layout is done take the slices made for them before
  // a request ahead of them in the order could; one that still does not
  // get in waits like any other, its turn had.
  void PlaceRelayoutsDone() {
    for (const std::string& id : snap_.relayouts_done) {
      if (!queue_.contains(id) || visited_.contains(id)) continue;
      Visit(id);
      visited_.insert(id);
    }
  }

  Queue::Verdict VisitOnce(const std::string& id) {
    if (visited_.contains(id)) return Queue::Verdict::kSkipGroup;
    return Visit(id);
  }

 private:
  const Framework& fw_;
  Session& session_;
  const Snapshot& snap_;
  Queue& queue_;
  // Shapes that did not fit this pass, with why.
  absl::flat_hash_map<std::string, std::string> blocked_;
  // Requests visited already, ahead of the walk.
  absl::flat_hash_set<std::string> visited_;
};

}  // namespace

ReservationState RunAdmissionPass(const Framework& framework, Session& session,
                                  Queue& queue) {
  Pass pass(framework, session, queue);
  pass.PlaceRipeHolders();
  pass.PlaceRelayoutsDone();
  queue.Walk([&](const std::string& tenant) { return pass.Rank(tenant); },
             [&](const std::string& id) { return pass.VisitOnce(id); });
  return framework.CloseSession(session);
}

}  // namespace accelsched
