#include "core/framework/framework.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/framework/diagnosis.h"

namespace accelsched {
namespace {

// Whether the PostFilter `plugin` is asked in `cycle`'s mode.
bool Asked(const PostFilterPlugin& plugin, const CycleState& cycle) {
  switch (cycle.mode()) {
    case CycleMode::kAllocate:
      return plugin.ForNewRequests();
    case CycleMode::kAdmit:
      return !plugin.ForNewRequests();
    case CycleMode::kExplain:
      return plugin.ForNewRequests() || cycle.notes().queued;
  }
  return false;
}

// The nodes that hold units of the request's pools: how many a cycle starts
// from, for Explain's steps.
int CandidateNodes(const CycleState& cycle) {
  int n = 0;
  const CapacityIndex& index = *cycle.snapshot().index;
  for (const PoolKey& key : PoolsFor(index, cycle.spec())) {
    if (const CapacityIndex::Pool* pool = index.FindPool(key)) {
      n += static_cast<int>(pool->homes.size());
    }
  }
  return n;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Framework>> Framework::Create(
    const Registry& registry, const Profile& profile) {
  std::unique_ptr<Framework> fw(new Framework());
  for (const Profile::Entry& entry : profile.plugins) {
    PluginFactory make = registry.Find(entry.plugin);
    if (make == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "profile: no plugin \"", entry.plugin, "\" is registered"));
    }
    if (absl::Status added = fw->plugins_.Add(make(), entry.weight);
        !added.ok()) {
      return added;
    }
  }
  if (fw->plugins_.placements().empty()) {
    return absl::InvalidArgumentError(
        "profile: no placement plugin (a --packing policy) is named");
  }
  return fw;
}

void Framework::Record(const CycleState& cycle, const Plugin& plugin,
                       ExtensionPoint point, int nodes_in, int nodes_out,
                       std::string detail) {
  if (cycle.notes().record == nullptr) return;
  cycle.notes().record->Add(CycleStep{std::string(plugin.name()),
                                      std::string(ExtensionPointName(point)),
                                      nodes_in, nodes_out, std::move(detail)});
}

bool Framework::MayResolve(const Session& session, const CycleState& cycle,
                           const Plugin** by) const {
  for (const PostFilterPlugin* p : plugins_.post_filters()) {
    if (p->MayResolve(session, cycle)) {
      *by = p;
      return true;
    }
  }
  return false;
}

void Framework::Prepare(CycleState& cycle) const {
  FilterChain& chain = cycle.filters();
  chain.Clear();
  for (const FilterEntry& f : plugins_.filters()) {
    if (f.plugin->Prepare(cycle)) chain.Add(f);
  }
}

Verdict Framework::PreFilter(Session& session, CycleState& cycle) const {
  const bool recording = cycle.notes().record != nullptr;
  const int nodes = recording ? CandidateNodes(cycle) : 0;
  for (const PreFilterPlugin* p : plugins_.pre_filters()) {
    if (p->ForNewRequests() && cycle.mode() == CycleMode::kAdmit) continue;
    Verdict v = p->PreFilter(session, cycle);
    if (v.code == Verdict::Code::kUnresolvable) {
      const Plugin* by = nullptr;
      if (MayResolve(session, cycle, &by)) {
        Record(cycle, *p, ExtensionPoint::kPreFilter, nodes, nodes,
               absl::StrCat(v.reason, "; let through: ", by->name(),
                            " may make room some day"));
        continue;
      }
    }
    Record(cycle, *p, ExtensionPoint::kPreFilter, nodes, v.ok() ? nodes : 0,
           v.ok() ? v.detail : v.reason);
    if (!v.ok()) return v;
  }
  Prepare(cycle);
  return Verdict::Success();
}

std::optional<Groups> Framework::Place(const Session& session,
                                       const CycleState& cycle) const {
  const PlacementPlugin* placer = plugins_.PlacerFor(cycle);
  if (placer == nullptr) return std::nullopt;
  return placer->Place(session, cycle);
}

void Framework::Reserve(Session& session, const CycleState& cycle,
                        const Groups& groups) const {
  for (const ReservePlugin* p : plugins_.reserves()) {
    p->Reserve(session, cycle, groups);
    Record(cycle, *p, ExtensionPoint::kReserve, 1, 1, "");
  }
  if (!cycle.request().id.empty()) {
    session.NotePlaced(std::string(cycle.request().id));
    session.holds().Release(std::string(cycle.request().id));
  }
}

CycleResult Framework::PostFilter(Session& session, CycleState& cycle,
                                  CycleFailure failure) const {
  CycleResult result;
  result.reason = failure.reason;
  // A request a PreFilter refused holds nothing (a PostFilter action may
  // hold for it again).
  if (failure.kind == CycleFailure::Kind::kRefused &&
      cycle.mode() != CycleMode::kAllocate && !cycle.request().id.empty()) {
    session.holds().Release(std::string(cycle.request().id));
  }
  for (const PostFilterPlugin* p : plugins_.post_filters()) {
    if (!Asked(*p, cycle)) continue;
    PostFilterResult r = p->PostFilter(session, cycle, failure);
    Record(cycle, *p, ExtensionPoint::kPostFilter, 0, 0,
           r.detail.empty() ? r.reason : r.detail);
    if (!r.summary.empty()) result.summary.push_back(std::move(r.summary));
    switch (r.code) {
      case PostFilterResult::Code::kContinue:
        absl::StrAppend(&result.reason, r.reason);
        continue;
      case PostFilterResult::Code::kWaiting:
        absl::StrAppend(&result.reason, r.reason);
        break;
      case PostFilterResult::Code::kUnderWay:
        result.outcome = CycleResult::Outcome::kUnderWay;
        result.reason = std::move(r.reason);
        break;
      case PostFilterResult::Code::kRefused:
        result.outcome = CycleResult::Outcome::kRefused;
        result.refusal = absl::FailedPreconditionError(r.reason);
        break;
    }
    break;
  }
  result.failure = std::move(failure);
  return result;
}

CycleResult Framework::RunCycle(Session& session, CycleState& cycle) const {
  Verdict v = PreFilter(session, cycle);
  if (v.code == Verdict::Code::kUnresolvable) {
    CycleResult result;
    result.outcome = CycleResult::Outcome::kRefused;
    result.refusal = absl::FailedPreconditionError(v.reason);
    return result;
  }
  if (v.code == Verdict::Code::kUnschedulable) {
    return PostFilter(session, cycle,
                      CycleFailure{CycleFailure::Kind::kRefused, nullptr,
                                   std::move(v.reason)});
  }
  std::vector<RankedPlacement> ranked;
  if (cycle.notes().record != nullptr)
    ranked = RankPlacements(plugins_, session, cycle);
  const PlacementPlugin* placer = plugins_.PlacerFor(cycle);
  std::optional<Groups> groups =
      placer == nullptr ? std::nullopt : placer->Place(session, cycle);
  if (cycle.notes().record != nullptr && placer != nullptr) {
    RecordPlacement(*this, session, cycle, *placer, ranked, groups);
  }
  if (groups.has_value()) {
    Reserve(session, cycle, *groups);
    CycleResult result;
    result.outcome = CycleResult::Outcome::kPlaced;
    result.groups = *std::move(groups);
    result.ranked = std::move(ranked);
    return result;
  }
  CycleResult result = PostFilter(
      session, cycle,
      CycleFailure{CycleFailure::Kind::kNoFit, nullptr,
                   placer == nullptr ? "" : placer->WhyNot(session, cycle)});
  result.ranked = std::move(ranked);
  return result;
}

bool Framework::MayHelpBlocked(const Session& session,
                               const CycleState& cycle) const {
  for (const PostFilterPlugin* p : plugins_.post_filters()) {
    if (!p->ForNewRequests() && p->MayHelpBlocked(session, cycle)) {
      return true;
    }
  }
  return false;
}

std::string Framework::ReasonWhileSkipped(Session& session,
                                          const std::string& id,
                                          const std::string& reason) const {
  for (const PostFilterPlugin* p : plugins_.post_filters()) {
    if (std::optional<std::string> r = p->ReasonWhileSkipped(session, id)) {
      return *std::move(r);
    }
  }
  return reason;
}

ReservationState Framework::CloseSession(Session& session) const {
  ReservationState next = session.holds().Take();
  for (const PostFilterPlugin* p : plugins_.post_filters()) {
    p->OnSessionClose(session, next);
  }
  return next;
}

}  // namespace accelsched
