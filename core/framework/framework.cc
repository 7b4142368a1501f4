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
      return plugin.ForNewRequests() || cycle.queued();
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
      return absl::InvalidArgumentError(
          absl::StrCat("profile: no plugin \"", entry.plugin,
                       "\" is registered"));
    }
    if (fw->Find(entry.plugin) != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "profile: plugin \"", entry.plugin, "\" is named twice"));
    }
    fw->plugins_.push_back(make());
    const Plugin* p = fw->plugins_.back().get();
    if (auto* q = dynamic_cast<const QueueSortPlugin*>(p)) {
      if (fw->queue_sort_ != nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            "profile: plugin \"", entry.plugin, "\" is a second QueueSort "
            "plugin (", fw->queue_sort_->name(), " is the first)"));
      }
      fw->queue_sort_ = q;
    }
    if (auto* f = dynamic_cast<const PreFilterPlugin*>(p)) {
      fw->pre_filters_.push_back(f);
    }
    if (auto* f = dynamic_cast<const FilterPlugin*>(p)) {
      fw->filters_.push_back(f);
    }
    if (auto* f = dynamic_cast<const PlacementPlugin*>(p)) {
      fw->placements_.push_back(f);
    }
    if (auto* f = dynamic_cast<const ScorePlugin*>(p)) {
      fw->scores_.push_back({f, entry.weight});
    }
    if (auto* f = dynamic_cast<const UnitScorePlugin*>(p)) {
      if (fw->unit_score_ != nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            "profile: plugin \"", entry.plugin, "\" is a second UnitScore "
            "plugin (", fw->unit_score_->name(), " is the first)"));
      }
      fw->unit_score_ = f;
    }
    if (auto* f = dynamic_cast<const ReservePlugin*>(p)) {
      fw->reserves_.push_back(f);
    }
    if (auto* f = dynamic_cast<const PostFilterPlugin*>(p)) {
      fw->post_filters_.push_back(f);
    }
  }
  if (fw->placements_.empty()) {
    return absl::InvalidArgumentError(
        "profile: no placement plugin (a --packing policy) is named");
  }
  return fw;
}

const Plugin* Framework::Find(absl::string_view name) const {
  for (const auto& p : plugins_) {
    if (p->name() == name) return p.get();
  }
  return nullptr;
}

const PlacementPlugin* Framework::PlacerFor(const CycleState& cycle) const {
  for (const PlacementPlugin* p : placements_) {
    if (p->Places(cycle)) return p;
  }
  return nullptr;
}

void Framework::Record(const CycleState& cycle, const Plugin& plugin,
                       ExtensionPoint point, int nodes_in, int nodes_out,
                       std::string detail) {
  if (cycle.record() == nullptr) return;
  cycle.record()->Add(CycleStep{std::string(plugin.name()),
                                std::string(ExtensionPointName(point)),
                                nodes_in, nodes_out, std::move(detail)});
}

bool Framework::MayResolve(const Session& session, const CycleState& cycle,
                           const Plugin** by) const {
  for (const PostFilterPlugin* p : post_filters_) {
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
  for (const FilterPlugin* f : filters_) {
    if (f->Prepare(cycle)) chain.Add(f);
  }
}

Verdict Framework::PreFilter(Session& session, CycleState& cycle) const {
  const bool recording = cycle.record() != nullptr;
  const int nodes = recording ? CandidateNodes(cycle) : 0;
  for (const PreFilterPlugin* p : pre_filters_) {
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
  const PlacementPlugin* placer = PlacerFor(cycle);
  if (placer == nullptr) return std::nullopt;
  return placer->Place(session, cycle);
}

void Framework::Reserve(Session& session, const CycleState& cycle,
                        const Groups& groups) const {
  for (const ReservePlugin* p : reserves_) {
    p->Reserve(session, cycle, groups);
    Record(cycle, *p, ExtensionPoint::kReserve, 1, 1, "");
  }
  if (!cycle.requester().empty()) {
    session.NotePlaced(std::string(cycle.requester()));
    session.holds().Release(std::string(cycle.requester()));
  }
}

CycleResult Framework::PostFilter(Session& session, CycleState& cycle,
                                  CycleFailure failure) const {
  CycleResult result;
  result.reason = failure.reason;
  // A request a PreFilter refused holds nothing (a PostFilter action may
  // hold for it again).
  if (failure.kind == CycleFailure::Kind::kRefused &&
      cycle.mode() != CycleMode::kAllocate && !cycle.requester().empty()) {
    session.holds().Release(std::string(cycle.requester()));
  }
  for (const PostFilterPlugin* p : post_filters_) {
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
  if (cycle.record() != nullptr) ranked = Rank(session, cycle);
  const PlacementPlugin* placer = PlacerFor(cycle);
  std::optional<Groups> groups =
      placer == nullptr ? std::nullopt : placer->Place(session, cycle);
  if (cycle.record() != nullptr && placer != nullptr) {
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
  for (const PostFilterPlugin* p : post_filters_) {
    if (!p->ForNewRequests() && p->MayHelpBlocked(session, cycle)) {
      return true;
    }
  }
  return false;
}

std::string Framework::ReasonWhileSkipped(Session& session,
                                          const std::string& id,
                                          const std::string& reason) const {
  for (const PostFilterPlugin* p : post_filters_) {
    if (std::optional<std::string> r = p->ReasonWhileSkipped(session, id)) {
      return *std::move(r);
    }
  }
  return reason;
}

ReservationState Framework::CloseSession(Session& session) const {
  ReservationState next = session.holds().Take();
  for (const PostFilterPlugin* p : post_filters_) {
    p->OnSessionClose(session, next);
  }
  return next;
}

std::string Framework::WhyRefused(const Session& session,
                                  CycleState& cycle) const {
  std::string why = AccountNodes(*this, cycle).summary;
  for (const FilterPlugin* f : cycle.filters().all()) {
    if (f->in_account() || f->ExcludedNote().empty()) continue;
    // Placed again without it: would the request fit but for what it says?
    FilterChain all = cycle.filters();
    cycle.filters().Clear();
    for (const FilterPlugin* g : all.all()) {
      if (g != f) cycle.filters().Add(g);
    }
    const bool fits = Place(session, cycle).has_value();
    cycle.filters() = std::move(all);
    if (fits) absl::StrAppend(&why, "; ", f->ExcludedNote());
  }
  return why;
}

std::vector<RankedPlacement> Framework::Rank(const Session& session,
                                             const CycleState& cycle) const {
  const PlacementPlugin* placer = PlacerFor(cycle);
  if (placer == nullptr) return {};
  return placer->Rank(session, cycle);
}

std::vector<std::string> Framework::DescribeUnits(const CycleState& cycle,
                                                  const Groups& groups) const {
  std::vector<std::string> out;
  if (unit_score_ == nullptr) return out;
  for (const std::vector<const Unit*>& group : groups) {
    if (std::string s = unit_score_->Describe(cycle, group); !s.empty()) {
      out.push_back(std::move(s));
    }
  }
  return out;
}

}  // namespace accelsched
