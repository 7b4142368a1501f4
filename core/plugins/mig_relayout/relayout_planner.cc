#include "core/plugins/mig_relayout/relayout_planner.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/model/mig_plan.h"

namespace accelsched {
namespace {

// A GPU that may be re-laid out, with its slices as the planner sees them.
struct Candidate {
  const Device* device = nullptr;
  std::vector<MigSliceState> slices;
  // For each slice, when it frees if it is held and counted free ahead;
  // InfinitePast otherwise.
  std::vector<absl::Time> frees;
  std::string state;  // the memo key of its slices
};

// Better among plans for one GPU each: more target slices, fewer destroyed,
// a smaller change in fragmentation; ties keep the earlier GPU.
bool BetterGpu(const MigLayoutPlan& a, const MigLayoutPlan& b) {
  if (a.targets != b.targets) return a.targets > b.targets;
  if (a.destroyed != b.destroyed) return a.destroyed < b.destroyed;
  return a.fragmentation_after - a.fragmentation_before <
         b.fragmentation_after - b.fragmentation_before - 1e-9;
}

bool BetterNode(const RelayoutChoice& a, const RelayoutChoice& b) {
  if (a.start != b.start) return a.start < b.start;
  if (a.destroyed != b.destroyed) return a.destroyed < b.destroyed;
  return a.fragmentation_change < b.fragmentation_change - 1e-9;
}

// When held MIG slice `unit` frees, if that is by `frees_by` and it may be
// planned for ahead: held by an ACTIVE allocation (not a victim in its
// grace, which frees it for its preemptor); InfinitePast otherwise.
absl::Time FreesBy(const Snapshot& snap, const Unit& unit,
                   absl::Time frees_by) {
  if (frees_by <= snap.now || !unit.healthy || unit.holder.empty() ||
      snap.book == nullptr) {
    return absl::InfinitePast();
  }
  const AllocationBook::Record* r = snap.book->Find({unit.holder, ""});
  if (r == nullptr || r->allocation.state != AllocationState::kActive ||
      r->allocation.expires_at > frees_by) {
    return absl::InfinitePast();
  }
  return r->allocation.expires_at;
}

}  // namespace

std::optional<RelayoutChoice> PlanRelayout(const CycleState& cycle,
                                           const AcceleratorTypeSet& types,
                                           const MatchSpec& spec,
                                           SliceHeld pinned,
                                           absl::Time frees_by) {
  const Snapshot& snap = cycle.snapshot();
  if (spec.partition.empty() || spec.replicas > 1 || spec.share.has_value() ||
      spec.device_class != DeviceClass::kNvidiaGpu ||
      spec.requested_models.empty()) {
    return std::nullopt;
  }
  if (snap.catalog == nullptr) return std::nullopt;
  const CapacityIndex& index = snap.catalog->index();
  std::optional<RelayoutChoice> best;
  // GPUs in one state (model, slices, what is pinned, slices wanted) share
  // one search.
  absl::flat_hash_map<std::string, std::optional<MigLayoutPlan>> memo;
  for (const std::string& model : spec.requested_models) {
    const AcceleratorType* type = types.Find(model);
    if (type == nullptr || type->mig.Find(spec.partition) == nullptr) continue;
    std::vector<MigDemand> mix;
    if (const RequestMix* recent = snap.mix) {
      for (const MigProfile& p : type->mig.profiles) {
        const double w = recent->UnitsAsked(
            PoolKey{spec.device_class, model, p.name}, snap.now);
        if (w > 0) mix.push_back(MigDemand{p.name, w});
      }
    }
    auto plan_of = [&](const Candidate& c, int want) {
      const std::string key = absl::StrCat(model, "|", want, "|", c.state);
      auto it = memo.find(key);
      if (it == memo.end()) {
        it = memo.emplace(key, PlanMigLayout(type->mig, c.slices,
                                             spec.partition, want, mix))
                 .first;
      }
      std::optional<MigLayoutPlan> plan = it->second;
      // The search may have been another GPU's in the same state: the slices
      // kept are this GPU's, with its ids (same profiles and starts).
      if (plan.has_value()) {
        for (MigSlice& kept : plan->layout) {
          if (kept.id.empty()) continue;
          for (const MigSliceState& s : c.slices) {
            if (s.slice.profile == kept.profile &&
                s.slice.start == kept.start) {
              kept.id = s.slice.id;
            }
          }
        }
      }
      return plan;
    };
    const auto& gpus = snap.catalog->mig_gpus().RelayoutGpus(model);
    for (auto it = gpus.begin(); it != gpus.end();) {
      const std::string& node_name = it->first;
      auto end = it;
      std::vector<std::string> ids;
      while (end != gpus.end() && end->first == node_name) {
        ids.push_back(end->second);
        ++end;
      }
      it = end;
      if (!cycle.filters().NodePasses(cycle, node_name)) continue;
      const Node& node = snap.catalog->nodes().find(node_name)->second;
      int have = 0;
      std::vector<Candidate> candidates;
      for (const std::string& id : ids) {
        const Device* d = FindDevice(node, id);
        if (d == nullptr || !d->healthy || d->removed) continue;
        if (snap.relayout_backoff != nullptr) {
          auto b = snap.relayout_backoff->find(id);
          if (b != snap.relayout_backoff->end() && b->second > snap.now) {
            continue;
          }
        }
        Candidate c{d, {}, {}, ""};
        for (const MigSlice& s : d->mig_slices) {
          const Unit* unit = index.Find(s.id);
          // A slice planned away has no unit: such a GPU has a plan and is
          // skipped below.
          const bool held_for_other = unit != nullptr && pinned(*unit);
          bool stays = unit == nullptr || !unit->free() || held_for_other;
          const absl::Time frees = stays && unit != nullptr && !held_for_other
                                       ? FreesBy(snap, *unit, frees_by)
                                       : absl::InfinitePast();
          if (frees > absl::InfinitePast()) {
            stays = false;
          } else if (!stays && s.profile == spec.partition) {
            ++have;
          }
          c.slices.push_back(MigSliceState{s, stays});
          c.frees.push_back(stays ? absl::InfinitePast() : frees);
          absl::StrAppend(&c.state, s.profile, "@", s.start, stays ? "p" : "f",
                          ",");
        }
        if (!d->mig_plan.has_value()) candidates.push_back(std::move(c));
      }
      int need = spec.count - have;
      if (need <= 0) continue;
      RelayoutChoice choice{node_name, {}, 0, 0};
      std::vector<bool> taken(candidates.size(), false);
      while (need > 0) {
        int pick = -1;
        std::optional<MigLayoutPlan> picked;
        for (size_t i = 0; i < candidates.size(); ++i) {
          if (taken[i]) continue;
          std::optional<MigLayoutPlan> plan = plan_of(candidates[i], need);
          if (plan.has_value() &&
              (!picked.has_value() || BetterGpu(*plan, *picked))) {
            pick = static_cast<int>(i);
            picked = std::move(plan);
          }
        }
        if (pick < 0) break;
        taken[pick] = true;
        need -= picked->targets;
        const Candidate& c = candidates[pick];
        const std::vector<MigSlice> away =
            PlannedAway(MigPlan{picked->layout, 0, "", absl::InfiniteFuture()},
                        c.device->mig_slices);
        for (size_t i = 0; i < c.slices.size(); ++i) {
          if (std::find(away.begin(), away.end(), c.slices[i].slice) ==
              away.end()) {
            continue;
          }
          choice.start = std::max(choice.start, c.frees[i]);
          choice.pools.push_back(
              PoolKey{spec.device_class, model, c.slices[i].slice.profile});
        }
        choice.destroyed += picked->destroyed;
        choice.fragmentation_change +=
            picked->fragmentation_after - picked->fragmentation_before;
        choice.gpus.push_back(
            RelayoutChoice::Gpu{candidates[pick].device->id, *picked});
      }
      if (need > 0) continue;
      std::sort(choice.pools.begin(), choice.pools.end());
      choice.pools.erase(std::unique(choice.pools.begin(), choice.pools.end()),
                         choice.pools.end());
      if (!best.has_value() || BetterNode(choice, *best)) {
        best = std::move(choice);
      }
    }
  }
  if (best.has_value()) {
    const Node& node = snap.catalog->nodes().find(best->node)->second;
    auto index_of = [&](const RelayoutChoice::Gpu& g) {
      return FindDevice(node, g.device_id)->index;
    };
    std::sort(best->gpus.begin(), best->gpus.end(),
              [&](const auto& a, const auto& b) {
                return index_of(a) < index_of(b);
              });
  }
  return best;
}

bool RelayoutCouldServe(const Catalog& catalog, const AcceleratorTypeSet& types,
                        const MatchSpec& spec) {
  if (spec.partition.empty() || spec.replicas > 1 || spec.share.has_value() ||
      spec.device_class != DeviceClass::kNvidiaGpu) {
    return false;
  }
  // A node that could never take the request, however its GPUs were laid
  // out: its labels, or its pod room when it is accounted.
  auto could_hold = [&](const std::string& name) {
    const Node& node = catalog.nodes().find(name)->second;
    if (!spec.selector.Matches(node.labels)) return false;
    return !spec.pod_resources.has_value() || !node.allocatable.has_value() ||
           FirstShortfall(*node.allocatable, *spec.pod_resources,
                          node.allocatable->pods > 0) == nullptr;
  };
  for (const std::string& model : spec.requested_models) {
    const AcceleratorType* type = types.Find(model);
    const MigProfile* p =
        type == nullptr ? nullptr : type->mig.Find(spec.partition);
    if (p == nullptr) continue;
    int per_gpu = std::min<int>(static_cast<int>(p->starts.size()),
                                type->mig.compute_slices / p->compute_slices);
    if (p->max_instances > 0) per_gpu = std::min(per_gpu, p->max_instances);
    std::string node;
    int slices = 0;
    bool holds = false;
    for (const auto& [home, device] : catalog.mig_gpus().RelayoutGpus(model)) {
      if (home != node) {
        node = home;
        slices = 0;
        holds = could_hold(home);
      }
      if (!holds) continue;
      slices += per_gpu;
      if (slices >= spec.count) return true;
    }
  }
  return false;
}

std::string DescribeRelayout(const RelayoutChoice& choice) {
  return absl::StrCat(
      "a MIG re-layout would serve it at the next periodic pass: ",
      absl::StrJoin(choice.gpus, ", ",
                    [&](std::string* out, const RelayoutChoice::Gpu& g) {
                      absl::StrAppend(out, g.device_id, " into ",
                                      DescribeMigLayout(g.plan.layout));
                    }),
      " on ", choice.node, " (destroys ", choice.destroyed, " free slice",
      choice.destroyed == 1 ? "" : "s", ")");
}

std::string RelayoutReason(const std::string& node,
                           const std::vector<std::string>& device_ids) {
  return absl::StrCat("waiting for the MIG re-layout of ",
                      absl::StrJoin(device_ids, ", "), " on ", node);
}

}  // namespace accelsched
