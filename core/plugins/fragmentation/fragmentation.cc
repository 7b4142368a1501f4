#include "core/plugins/fragmentation/fragmentation.h"

#include <algorithm>
#include <limits>
#include <string>
#include <tuple>

#include "core/framework/framework.h"
#include "core/framework/placement.h"
#include "core/packing/placement_score.h"

namespace accelsched {
namespace {

// A candidate scored.
struct Scored {
  const PoolCandidate* candidate;
  const std::string* home;  // the index's key: stable while it is unchanged
  PlacementScore score;
};

std::vector<Scored> ScoreCandidates(const Session& session,
                                    const CycleState& cycle,
                                    const PoolCandidates& candidates) {
  const MatchSpec& spec = cycle.spec();
  const Snapshot& snap = cycle.snapshot();
  std::vector<std::vector<RequestShape>> shapes(candidates.size());
  if (snap.mix != nullptr) {
    for (size_t i = 0; i < candidates.size(); ++i) {
      shapes[i] = snap.mix->ShapesFor(*candidates[i].key, snap.now);
    }
  }
  struct Level {
    FragmentationChange change;
    int free;
    size_t pool;
  };
  std::vector<Level> levels;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const CapacityIndex::Pool& pool = *candidates[i].pool;
    for (int f = spec.count; f < static_cast<int>(pool.homes_with_free.size());
         ++f) {
      if (pool.HomesWithFree(f) == 0) continue;
      levels.push_back(Level{ChangeOfTaking(f, spec.count, shapes[i]), f, i});
    }
  }
  // Ties: fewest free first, then the pool's rank (the rule's order).
  std::stable_sort(levels.begin(), levels.end(),
                   [](const Level& a, const Level& b) {
                     return std::tie(a.change.units_only, a.free, a.pool) <
                            std::tie(b.change.units_only, b.free, b.pool);
                   });
  const auto scores = session.framework().plugins().scores();
  std::vector<Scored> out;
  size_t weighed = 0;  // nodes scored, kept in `out` or not
  double best = std::numeric_limits<double>::infinity();
  const bool pod = spec.pod_resources.has_value();
  const int64_t cpu =
      pod ? std::max<int64_t>(spec.pod_resources->cpu_milli, 0) : 0;
  const int64_t memory =
      pod ? std::max<int64_t>(spec.pod_resources->memory_bytes, 0) : 0;
  for (const Level& level : levels) {
    if (weighed >= FragmentationPlugin::kMaxScored) break;
    // The other scores are never negative: no node of this count can win.
    if (level.change.lower_bound >= best) continue;
    const PoolCandidate& c = candidates[level.pool];
    // Two walks of the count: from the request's CPU (best fit's node), and
    // from what leaves every shape of the mix the CPU it asks (the node
    // whose GPUs the request strands least for want of CPU); one walk of
    // two nodes when they start alike.
    int64_t most_cpu = 0;
    for (const RequestShape& shape : shapes[level.pool]) {
      most_cpu = std::max(most_cpu, shape.cpu_milli);
    }
    const bool two_walks = pod && most_cpu > 0;
    const std::string* first = nullptr;
    for (const int64_t from :
         {cycle.filters().min_room().cpu,
          two_walks ? cpu + most_cpu : cycle.filters().min_room().cpu}) {
      int taken = 0;
      const int want = two_walks ? 1 : FragmentationPlugin::kCandidatesPerCount;
      c.pool->by_free.ForEachFrom(
          {level.free, from, std::string()}, cycle.filters().min_room().memory,
          [&](const CapacityIndex::FreeEntry& e) {
            if (e.free != level.free) return false;
            if ((first != nullptr && *first == e.home) ||
                !cycle.filters().HomePasses(cycle, *c.key, e.home)) {
              return true;
            }
            if (first == nullptr) first = &e.home;  // the tree is not changed
            ++weighed;
            PlacementScore score =
                ScorePlacement(NodeRoom{e.free, e.cpu, e.memory}, 0,
                               shapes[level.pool], spec.count, cpu, memory,
                               nullptr, snap.now, cycle.ends().lease());
            // The other scores only add: a node whose fragmentation change
            // alone is no better than the best is not looked up further.
            if (score.total < best || out.empty()) {
              auto home = c.pool->homes.find(e.home);
              if (!scores.empty()) {
                const ScoredNode node{c.key, &home->first, &home->second,
                                      spec.count};
                double others = 0;
                for (const PluginSet::WeightedScore& s : scores) {
                  others += s.weight * s.plugin->Score(cycle, node);
                }
                score.lease = others;
                score.total = score.after - score.before + score.lease;
              }
              best = std::min(best, score.total);
              out.push_back(Scored{&c, &home->first, score});
            }
            return ++taken < want && weighed < FragmentationPlugin::kMaxScored;
          });
      // The second walk sees a subset of the first's nodes.
      if (!two_walks || first == nullptr ||
          weighed >= FragmentationPlugin::kMaxScored) {
        break;
      }
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Scored& a, const Scored& b) {
                     return a.score.total < b.score.total;
                   });
  return out;
}

}  // namespace

double FragmentationRatio(const CapacityIndex::Pool& pool,
                          const std::vector<RequestShape>& shapes) {
  double stranded = 0;
  int64_t free = 0;
  pool.by_free.ForEach([&](const CapacityIndex::FreeEntry& e) {
    stranded += Fragmentation(NodeRoom{e.free, e.cpu, e.memory}, shapes);
    free += e.free;
    return true;
  });
  return free == 0 ? 0 : stranded / static_cast<double>(free);
}

std::unique_ptr<Plugin> FragmentationPlugin::New() {
  return std::make_unique<FragmentationPlugin>();
}

bool FragmentationPlugin::Places(const CycleState& cycle) const {
  return OneGroupOfWholeUnits(cycle.spec());
}

std::optional<Groups> FragmentationPlugin::Place(
    const Session& session, const CycleState& cycle) const {
  const PoolCandidates candidates =
      PoolsInRuleOrder(*cycle.snapshot().index, cycle.spec());
  const std::vector<Scored> scored =
      ScoreCandidates(session, cycle, candidates);
  // None: no node had the free units, the pod's room and eligibility
  // (nothing was pruned); best fit would find none either.
  if (scored.empty()) return std::nullopt;
  for (const Scored& s : scored) {
    if (auto units = UnitsIn(session, cycle, *s.candidate, *s.home)) {
      return OneGroup(*std::move(units));
    }
  }
  // Scoring looks at the home node only: every candidate it weighed may
  // have had a host of a multi-host slice ineligible. Best fit then, so
  // that whatever fits is found.
  std::optional<UnitGroup> units =
      WalkByFree(session, cycle, candidates, /*most_free_first=*/false);
  if (!units.has_value()) return std::nullopt;
  return OneGroup(*std::move(units));
}

std::vector<RankedPlacement> FragmentationPlugin::Rank(
    const Session& session, const CycleState& cycle) const {
  const PoolCandidates candidates =
      PoolsInRuleOrder(*cycle.snapshot().index, cycle.spec());
  std::vector<RankedPlacement> out;
  for (const Scored& s : ScoreCandidates(session, cycle, candidates)) {
    out.push_back(RankedPlacement{*s.candidate->key, *s.home, s.score});
  }
  return out;
}

}  // namespace accelsched
