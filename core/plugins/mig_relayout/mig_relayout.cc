#include "core/plugins/mig_relayout/mig_relayout.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/plugins/mig_relayout/relayout_planner.h"

namespace accelsched {
namespace {

// The session's re-layouts in flight, by the allocation they are for (its
// node and GPUs), and how many it planned.
struct Relayouts : SessionState {
  explicit Relayouts(Session& session) {
    const Catalog* catalog = session.snapshot().catalog;
    if (catalog == nullptr) return;
    for (const auto& [node, device] : catalog->mig_gpus().planned()) {
      const Device* d = FindDevice(catalog->nodes().find(node)->second, device);
      auto& [where, gpus] = in_flight[d->mig_plan->allocation_id];
      where = node;
      gpus.push_back(device);
    }
  }
  absl::flat_hash_map<std::string,
                      std::pair<std::string, std::vector<std::string>>>
      in_flight;
  int planned = 0;
};

}  // namespace

std::unique_ptr<Plugin> MigRelayoutPlugin::New() {
  return std::make_unique<MigRelayoutPlugin>();
}

PostFilterResult MigRelayoutPlugin::PostFilter(
    Session& session, CycleState& cycle, const CycleFailure& failure) const {
  const Snapshot& snap = session.snapshot();
  PostFilterResult r;
  if (failure.kind != CycleFailure::Kind::kNoFit || snap.book == nullptr ||
      cycle.request().id.empty()) {
    return r;
  }
  const std::string id(cycle.request().id);
  Relayouts& relayouts = session.StateOf<Relayouts>(*this);
  if (auto in_flight = relayouts.in_flight.find(id);
      in_flight != relayouts.in_flight.end()) {
    r.code = PostFilterResult::Code::kUnderWay;
    r.reason =
        RelayoutReason(in_flight->second.first, in_flight->second.second);
    return r;
  }
  // Re-slicing idle MIG GPUs goes before preempting anyone; a request waiting
  // out its victims' grace has room coming already.
  enum class Relayout {
    kNone,     // no re-layout serves the request
    kPlanned,  // one was planned for it
    kLater,    // one might, and only the periodic pass plans
  };
  const MatchSpec& spec = cycle.spec();
  Relayout outcome = Relayout::kNone;
  const bool explain = cycle.mode() == CycleMode::kExplain;
  if (snap.book->tallies().VictimsOf(id).empty() && snap.types != nullptr &&
      snap.catalog != nullptr && !spec.partition.empty() &&
      spec.replicas <= 1 && !spec.share.has_value() &&
      std::any_of(
          spec.requested_models.begin(), spec.requested_models.end(),
          [&](const std::string& model) {
            return !snap.catalog->mig_gpus().RelayoutGpus(model).empty();
          })) {
    if (!explain &&
        (!snap.plan_relayouts || relayouts.planned >= kMaxRelayoutsPerPass)) {
      outcome = Relayout::kLater;
    } else {
      // Slices of a pool whose node is held for another request stay.
      const Holds& holds = session.holds();
      auto pinned = [&](const Unit& unit) {
        return holds.HoldForOther(unit.pool, unit.home, id,
                                  cycle.request().priority) != nullptr;
      };
      if (std::optional<RelayoutChoice> choice =
              PlanRelayout(cycle, *snap.types, spec, pinned)) {
        outcome = Relayout::kPlanned;
        ++relayouts.planned;
        session.statement().PlanMigRelayout(id, *choice);
        std::vector<std::string> gpus;
        for (const RelayoutChoice::Gpu& g : choice->gpus) {
          gpus.push_back(g.device_id);
        }
        r.code = PostFilterResult::Code::kUnderWay;
        r.reason = RelayoutReason(choice->node, gpus);
        r.summary = DescribeRelayout(*choice);
        r.detail = absl::StrCat(
            explain ? "would plan" : "planned", " a MIG re-layout of ",
            absl::StrJoin(gpus, ", "), " on ", choice->node);
        relayouts.in_flight[id] = {choice->node, std::move(gpus)};
        return r;
      }
    }
  }
  // Held since the last periodic pass for a re-layout no GPU can give any
  // more (its node left, or stopped re-laying out): let go, and the request
  // waits as any other.
  if (outcome == Relayout::kNone && !snap.plan_relayouts &&
      !session.holds().KeptAhead(id).empty()) {
    session.holds().Release(id);
  }
  if (outcome == Relayout::kLater) {
    cycle.notes().deferred = true;
    r.reason = "; a MIG re-layout is looked for at the next periodic pass";
  }
  return r;
}

bool MigRelayoutPlugin::MayResolve(const Session& session,
                                   const CycleState& cycle) const {
  const Snapshot& snap = session.snapshot();
  return snap.catalog != nullptr && snap.types != nullptr &&
         RelayoutCouldServe(*snap.catalog, *snap.types, cycle.spec());
}

std::optional<std::string> MigRelayoutPlugin::ReasonWhileSkipped(
    Session& session, const std::string& id) const {
  const Relayouts& relayouts = session.StateOf<Relayouts>(*this);
  auto in_flight = relayouts.in_flight.find(id);
  if (in_flight == relayouts.in_flight.end()) return std::nullopt;
  return RelayoutReason(in_flight->second.first, in_flight->second.second);
}

void MigRelayoutPlugin::OnSessionClose(Session& session,
                                       ReservationState& next) const {
  const Snapshot& snap = session.snapshot();
  if (snap.book == nullptr) return;
  for (const auto& [id, where] : session.StateOf<Relayouts>(*this).in_flight) {
    const AllocationBook::Record* r = snap.book->Find({id, ""});
    if (r != nullptr && r->allocation.pending()) next.starts[id] = snap.now;
  }
}

}  // namespace accelsched
