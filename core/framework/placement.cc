#include "core/framework/placement.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/catalog/pool_queries.h"
#include "core/framework/framework.h"

namespace accelsched {

PoolCandidates CandidatePools(const CapacityIndex& index,
                              const RequestSpec& spec) {
  PoolCandidates out;
  if (spec.requested_models.empty()) {
    for (const auto& [key, pool] :
         PoolsOf(index, spec.device_class, spec.partition)) {
      out.push_back(PoolCandidate{key, pool});
    }
    return out;
  }
  PoolKey key{spec.device_class, "", spec.partition};
  for (const std::string& model : spec.requested_models) {
    key.model = model;
    auto it = index.pools().find(key);
    if (it != index.pools().end()) {
      out.push_back(PoolCandidate{&it->first, &it->second});
    }
  }
  return out;
}

PoolCandidates PoolsInRuleOrder(const CapacityIndex& index,
                                const RequestSpec& spec) {
  PoolCandidates candidates = CandidatePools(index, spec);
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const PoolCandidate& a, const PoolCandidate& b) {
                     return a.pool->free() > b.pool->free();
                   });
  return candidates;
}

int MostFree(const PoolCandidates& candidates) {
  int most = 0;
  for (const PoolCandidate& c : candidates) {
    most = std::max(most, static_cast<int>(c.pool->homes_with_free.size()) - 1);
  }
  return most;
}

std::vector<const Unit*> FreeUnitsBestFit(const CapacityIndex& index,
                                          const CapacityIndex::Home& home) {
  std::vector<const Unit*> free;
  absl::flat_hash_map<absl::string_view, int> free_in_group;
  for (const std::string& key : home.units) {
    const Unit* u = index.Find(key);
    if (u != nullptr && u->free()) {
      free.push_back(u);
      ++free_in_group[u->group];
    }
  }
  std::sort(free.begin(), free.end(), [&](const Unit* a, const Unit* b) {
    return std::make_tuple(free_in_group[a->group], a->group, a->order,
                           a->key) <
           std::make_tuple(free_in_group[b->group], b->group, b->order, b->key);
  });
  return free;
}

bool HostsEligible(const CycleState& cycle, const Unit& unit) {
  for (const std::string& host : unit.hosts) {
    if (!cycle.filters().HostPasses(cycle, host)) return false;
  }
  return true;
}

std::optional<UnitGroup> UnitsIn(const Session& session,
                                 const CycleState& cycle,
                                 const PoolCandidate& candidate,
                                 const std::string& home) {
  const MatchSpec& spec = cycle.spec();
  const Node* node = cycle.snapshot().FindNode(home);
  // Every unit spans its home, so an ineligible home rules them all out.
  if (!cycle.filters().HomePasses(cycle, *candidate.key, home, node)) {
    return std::nullopt;
  }
  const CapacityIndex& index = *cycle.snapshot().index;
  const UnitScorePlugin* chooser = session.framework().plugins().unit_score();
  const int enough =
      chooser != nullptr && node != nullptr
          ? chooser->Weighs(cycle, *node, *candidate.key, spec.count)
          : spec.count;
  UnitGroup eligible;
  for (const Unit* u :
       FreeUnitsBestFit(index, candidate.pool->homes.find(home)->second)) {
    if (static_cast<int>(eligible.size()) == enough) break;
    // A unit of this node alone spans only its home, which passed above.
    if (u->hosts.size() == 1 || HostsEligible(cycle, *u)) eligible.push_back(u);
  }
  if (static_cast<int>(eligible.size()) < spec.count) return std::nullopt;
  if (static_cast<int>(eligible.size()) == spec.count) return eligible;
  const std::vector<int> chosen =
      chooser->Choose(cycle, *node, eligible, spec.count);
  if (chosen.empty()) {
    eligible.resize(spec.count);
    return eligible;
  }
  UnitGroup out;
  out.reserve(chosen.size());
  for (int i : chosen) out.push_back(eligible[i]);
  return out;
}

std::optional<UnitGroup> WalkByFree(const Session& session,
                                    const CycleState& cycle,
                                    const PoolCandidates& candidates,
                                    bool most_free_first) {
  const int count = cycle.spec().count;
  const int most = MostFree(candidates);
  std::optional<UnitGroup> found;
  for (int i = 0; i <= most - count; ++i) {
    const int f = most_free_first ? most - i : count + i;
    for (const PoolCandidate& c : candidates) {
      if (c.pool->HomesWithFree(f) == 0) continue;
      c.pool->by_free.ForEachFrom(
          {f, cycle.filters().min_room().cpu, std::string()},
          cycle.filters().min_room().memory,
          [&](const CapacityIndex::FreeEntry& e) {
            if (e.free != f) return false;
            found = UnitsIn(session, cycle, c, e.home);
            return !found.has_value();
          });
      if (found.has_value()) return found;
    }
  }
  return std::nullopt;
}

std::string WholeUnitsWhyNot(const CycleState& cycle) {
  const MatchSpec& spec = cycle.spec();
  const CapacityIndex& index = *cycle.snapshot().index;
  int64_t free = 0, total = 0;
  for (const PoolKey& key : PoolsFor(index, spec)) {
    if (const auto* pool = index.FindPool(key)) {
      free += pool->free();
      total += pool->total;
    }
  }
  const std::string unit = SpecUnitName(spec);
  // Free units may be where the pod does not fit: say what it needs too.
  std::string pod;
  if (spec.pod_resources.has_value()) {
    pod = absl::StrCat(" and room for the pod (", spec.pod_resources->cpu_milli,
                       " cpu_milli, ", spec.pod_resources->memory_bytes,
                       " memory_bytes)");
  }
  return absl::StrCat("no node has ", spec.count, " free ", unit,
                      spec.count == 1 ? "" : "s", pod, " (", free, " free of ",
                      total, ")");
}

}  // namespace accelsched
