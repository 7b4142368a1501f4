#include "core/matching/matcher.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/matching/linked_set.h"

static_assert(accelsched::kUnaccountedCpu == accelsched::kUnlimited &&
              accelsched::kUnaccountedMemory == accelsched::kUnlimited);

namespace accelsched {
namespace {

constexpr char kSelectorMismatch[] = "node_selector mismatch";
constexpr char kCordoned[] = "cordoned";
constexpr char kStale[] = "stale heartbeat";

const Node* FindNode(const NodeMap& nodes, absl::string_view name) {
  auto it = nodes.find(name);
  return it == nodes.end() ? nullptr : &it->second;
}

// Whether `node` lacks what spec.pod_resources needs.
bool Short(const CapacityIndex& index, absl::string_view node,
           const MatchSpec& spec) {
  return spec.pod_resources.has_value() &&
         index.Shortfall(node, *spec.pod_resources) != nullptr;
}

bool HostsEligible(const CapacityIndex& index, const Unit& u,
                   const NodeMap& nodes, const MatchSpec& spec,
                   const EligibilityRules& rules) {
  for (const std::string& host : u.hosts) {
    if (Ineligible(FindNode(nodes, host), spec, rules) != nullptr ||
        Short(index, host, spec)) {
      return false;
    }
  }
  return true;
}

// Free units of a home, best-fit order: groups (GPUs) with the fewest free
// units first, then by group and order.
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

struct Candidate {
  const PoolKey* key;
  const CapacityIndex::Pool* pool;
};

// The pools that can serve `spec`, in model order.
std::vector<Candidate> Candidates(const CapacityIndex& index,
                                  const MatchSpec& spec) {
  std::vector<Candidate> out;
  if (spec.requested_models.empty()) {
    for (const auto& [key, pool] :
         index.PoolsOf(spec.device_class, spec.partition)) {
      out.push_back(Candidate{key, pool});
    }
    return out;
  }
  PoolKey key{spec.device_class, "", spec.partition};
  for (const std::string& model : spec.requested_models) {
    key.model = model;
    auto it = index.pools().find(key);
    if (it != index.pools().end())
      out.push_back(Candidate{&it->first, &it->second});
  }
  return out;
}

// Whether a reservation keeps `home`'s units of `pool` from this request.
bool Reserved(const PoolKey& pool, const std::string& home,
              const EligibilityRules& rules) {
  if (rules.reservations == nullptr) return false;
  auto p = rules.reservations->find(pool);
  if (p == rules.reservations->end()) return false;
  auto r = p->second.find(home);
  if (r == p->second.end() || r->second.holder == rules.requester) {
    return false;
  }
  if (r->second.YieldsTo(rules.priority)) return false;
  return rules.ends_at > r->second.start;
}

// The request's pools in the rule's tie order between models: most free
// units first, model order kept for equal counts.
std::vector<Candidate> PoolsInRuleOrder(const CapacityIndex& index,
                                        const MatchSpec& spec) {
  std::vector<Candidate> candidates = Candidates(index, spec);
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     return a.pool->free() > b.pool->free();
                   });
  return candidates;
}

// The most free units any home of `candidates` has.
int MostFree(const std::vector<Candidate>& candidates) {
  int most = 0;
  for (const Candidate& c : candidates) {
    most = std::max(most, static_cast<int>(c.pool->homes_with_free.size()) - 1);
  }
  return most;
}

// The CPU and memory a walk of by_free starts from and skips below: the
// pod's, or the lowest int64_t when the request has no pod_resources.
struct PodNeed {
  int64_t cpu = std::numeric_limits<int64_t>::min();
  int64_t memory = std::numeric_limits<int64_t>::min();
};
PodNeed NeedOf(const MatchSpec& spec) {
  PodNeed need;
  if (spec.pod_resources.has_value()) {
    need.cpu = spec.pod_resources->cpu_milli;
    need.memory = spec.pod_resources->memory_bytes;
  }
  return need;
}

// Whether the node `home` may take the request's units of `c`'s pool: it is
// eligible, holds the pod and is not reserved for another.
bool HomeEligible(const CapacityIndex& index, const NodeMap& nodes,
                  const Candidate& c, const std::string& home,
                  const MatchSpec& spec, const EligibilityRules& rules) {
  return Ineligible(FindNode(nodes, home), spec, rules) == nullptr &&
         !Short(index, home, spec) && !Reserved(*c.key, home, rules);
}

// How many of `home`'s units are held whole, and when the last of them
// comes free: O(allocations holding units there).
NodeLeases LeasesOf(const CapacityIndex::Home& home, const LeaseView& view) {
  NodeLeases leases;
  for (const auto& [allocation, units] : home.holders) {
    leases.held += units;
    leases.busy_until = std::max(leases.busy_until, view.FreeAt(allocation));
  }
  return leases;
}

// A candidate kFragmentation scored.
struct Scored {
  const Candidate* candidate;
  const std::string* home;  // the index's key: stable while it is unchanged
  PlacementScore score;
};

// Whether any device of `node` in its inventory reports links to another.
bool HasLinks(const Node* node) {
  if (node == nullptr) return false;
  return std::any_of(
      node->devices.begin(), node->devices.end(),
      [](const Device& d) { return !d.removed && !d.links.empty(); });
}

// The ids of `units`' devices (whole devices: one each).
std::vector<absl::string_view> DeviceIds(
    const std::vector<const Unit*>& units) {
  std::vector<absl::string_view> ids;
  ids.reserve(units.size());
  for (const Unit* u : units) ids.push_back(u->key);
  return ids;
}

// `count` eligible free units of `home`, or nullopt: of whole devices on a
// node that reports links, the best-linked set (ChooseLinkedSet, among the
// first kMaxLinkedCandidates in best-fit order); otherwise the first in
// best-fit order.
std::optional<std::vector<const Unit*>> UnitsIn(const CapacityIndex& index,
                                                const NodeMap& nodes,
                                                const Candidate& c,
                                                const std::string& home,
                                                const MatchSpec& spec,
                                                const EligibilityRules& rules) {
  // Every unit spans its home, so an ineligible home rules them all out.
  if (!HomeEligible(index, nodes, c, home, spec, rules)) return std::nullopt;
  const CapacityIndex::Pool& pool = *c.pool;
  const Node* node = FindNode(nodes, home);
  const bool linked = c.key->partition.empty() && HasLinks(node);
  const int enough =
      linked ? std::max(spec.count, kMaxLinkedCandidates) : spec.count;
  std::vector<const Unit*> eligible;
  for (const Unit* u : FreeUnitsBestFit(index, pool.homes.find(home)->second)) {
    if (static_cast<int>(eligible.size()) == enough) break;
    if (HostsEligible(index, *u, nodes, spec, rules)) eligible.push_back(u);
  }
  if (static_cast<int>(eligible.size()) < spec.count) return std::nullopt;
  if (static_cast<int>(eligible.size()) == spec.count) return eligible;
  const LinkGraph graph(*node, DeviceIds(eligible));
  if (graph.empty()) {
    eligible.resize(spec.count);
    return eligible;
  }
  std::vector<const Unit*> chosen;
  for (int i : ChooseLinkedSet(graph, spec.count).members) {
    chosen.push_back(eligible[i]);
  }
  return chosen;
}

// The candidates kFragmentation weighs, best first (equal scores in the
// rule's order). Free counts of each pool are taken in the order of the
// fragmentation change they would make on a node limited by units alone
// (FGD's measure without CPU and memory, which the shapes give without
// visiting a node), and a count is visited only while the lower bound of
// that change on any node (ChangeOfTaking) is below the best score found:
// the lease term is never negative, so no node of that count could win
// (nodes whose CPU or memory is over-committed, available below 0, aside).
// At most
// PackingRules::kCandidatesPerCount eligible nodes per count, in by_free's
// order: with a pod's CPU and a mix that asks CPU, the first from the pod's
// CPU (best fit) and the first from the pod's CPU plus the most a shape of
// the mix asks (so that a node left with CPU for every shape is weighed);
// PackingRules::kMaxScored in all.
std::vector<Scored> ScoreCandidates(const CapacityIndex& index,
                                    const NodeMap& nodes,
                                    const std::vector<Candidate>& candidates,
                                    const MatchSpec& spec,
                                    const EligibilityRules& rules) {
  const PodNeed need = NeedOf(spec);
  const PackingRules& packing = rules.packing;
  std::vector<std::vector<RequestShape>> shapes(candidates.size());
  if (packing.mix != nullptr) {
    for (size_t i = 0; i < candidates.size(); ++i) {
      shapes[i] = packing.mix->ShapesFor(*candidates[i].key, rules.now);
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
  std::vector<Scored> out;
  size_t weighed = 0;  // nodes scored, kept in `out` or not
  double best = std::numeric_limits<double>::infinity();
  const int64_t cpu = need.cpu > 0 ? need.cpu : 0;
  const int64_t memory = need.memory > 0 ? need.memory : 0;
  for (const Level& level : levels) {
    if (weighed >= PackingRules::kMaxScored) break;
    // The lease term is never negative: no node of this count can win.
    if (level.change.lower_bound >= best) continue;
    const Candidate& c = candidates[level.pool];
    // Two walks of the count: from the request's CPU (best fit's node), and
    // from what leaves every shape of the mix the CPU it asks (the node
    // whose GPUs the request strands least for want of CPU); one walk of
    // two nodes when they start alike.
    int64_t most_cpu = 0;
    for (const RequestShape& shape : shapes[level.pool]) {
      most_cpu = std::max(most_cpu, shape.cpu_milli);
    }
    const bool two_walks =
        need.cpu > std::numeric_limits<int64_t>::min() && most_cpu > 0;
    const std::string* first = nullptr;
    for (const int64_t from :
         {need.cpu, two_walks ? cpu + most_cpu : need.cpu}) {
      int taken = 0;
      const int want = two_walks ? 1 : PackingRules::kCandidatesPerCount;
      c.pool->by_free.ForEachFrom(
          {level.free, from, std::string()}, need.memory,
          [&](const CapacityIndex::FreeEntry& e) {
            if (e.free != level.free) return false;
            if ((first != nullptr && *first == e.home) ||
                !HomeEligible(index, nodes, c, e.home, spec, rules)) {
              return true;
            }
            if (first == nullptr) first = &e.home;  // the tree is not changed
            ++weighed;
            PlacementScore score = ScorePlacement(
                NodeRoom{e.free, e.cpu, e.memory}, 0, shapes[level.pool],
                spec.count, cpu, memory, nullptr, rules.now, rules.ends_at);
            // The lease term only adds: a node whose fragmentation change
            // alone is no better than the best is not looked up further.
            if (score.total < best || out.empty()) {
              auto home = c.pool->homes.find(e.home);
              if (packing.leases != nullptr) {
                AddLeaseTerm(LeasesOf(home->second, *packing.leases),
                             static_cast<int>(home->second.units.size()),
                             spec.count, rules.now, rules.ends_at, score);
              }
              best = std::min(best, score.total);
              out.push_back(Scored{&c, &home->first, score});
            }
            return ++taken < want && weighed < PackingRules::kMaxScored;
          });
      // The second walk sees a subset of the first's nodes.
      if (!two_walks || first == nullptr ||
          weighed >= PackingRules::kMaxScored) {
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

// Whether `share` may join the shares on `u`: they are of its group, or
// there are none.
bool JoinsGroup(const Unit& u, const GpuShare& share) {
  return u.shared_milli == 0 || u.share_group == share.group;
}

// Whether `share` fits what is left of `u`: its group, its compute and the
// memory it takes of this GPU (ShareMemory).
bool ShareFits(const Unit& u, const GpuShare& share) {
  return u.shareable() && JoinsGroup(u, share) &&
         u.free_milli() >= share.compute_milli &&
         ShareMemory(share, u.memory_bytes) <= u.free_share_memory();
}

// A group's name in a message: "group \"ml\"", or "no group".
std::string GroupText(absl::string_view group) {
  return group.empty() ? "no group" : absl::StrCat("group \"", group, "\"");
}

// Why the closest of `units` to holding `share` does not: "GPU-3 has 300 of
// 1000 milli free, the request needs 470"; when none may take a share now,
// why ("held whole or unhealthy", "GPU-3 holds shares of group \"a\", the
// request is of no group"), or "" when none takes shares at all.
std::string ShareShortfall(const std::vector<const Unit*>& units,
                           const GpuShare& share) {
  const Unit* most = nullptr;
  const Unit* other_group = nullptr;
  bool sharing = false;
  for (const Unit* u : units) {
    sharing = sharing || u->sharing != GpuSharing::kNone;
    if (!u->shareable()) continue;
    if (!JoinsGroup(*u, share)) {
      if (other_group == nullptr) other_group = u;
      continue;
    }
    if (most == nullptr || u->free_milli() > most->free_milli()) most = u;
  }
  if (most == nullptr && other_group != nullptr) {
    return absl::StrCat(other_group->key, " holds shares of ",
                        GroupText(other_group->share_group),
                        ", the request is of ", GroupText(share.group));
  }
  if (most == nullptr) return sharing ? "held whole or unhealthy" : "";
  if (most->free_milli() < share.compute_milli) {
    return absl::StrCat(most->key, " has ", most->free_milli(), " of ",
                        kGpuMilli, " milli free, the request needs ",
                        share.compute_milli);
  }
  return absl::StrCat(most->key, " has ", most->free_share_memory(),
                      " bytes of GPU memory free, the share needs ",
                      ShareMemory(share, most->memory_bytes));
}

// The unit's name with its model, where UnitName leaves it out (MIG slices):
// for requests that span several models.
std::string ModelUnitName(const PoolKey& pool) {
  if (pool.device_class != DeviceClass::kGoogleTpu && !pool.partition.empty()) {
    return absl::StrCat(pool.model, " ", UnitName(pool));
  }
  return UnitName(pool);
}

std::string SpecUnitName(const MatchSpec& spec) {
  return RequestUnitName(spec.device_class, spec.requested_models, spec.partition);
}

}  // namespace

const char* Ineligible(const Node* node, const MatchSpec& spec,
                       const EligibilityRules& rules) {
  if (node == nullptr) return kStale;  // a host that has not registered yet
  if (!spec.selector.Matches(node->labels)) return kSelectorMismatch;
  if (!node->schedulable) return kCordoned;
  if (rules.heartbeat_timeout > absl::ZeroDuration() &&
      rules.now - node->last_heartbeat > rules.heartbeat_timeout) {
    return kStale;
  }
  return nullptr;
}

void CountInMix(const MatchSpec& spec, absl::Time now, RequestMix& mix) {
  if (spec.share.has_value()) return;
  const int64_t cpu =
      spec.pod_resources.has_value() ? spec.pod_resources->cpu_milli : 0;
  const int64_t memory =
      spec.pod_resources.has_value() ? spec.pod_resources->memory_bytes : 0;
  PoolKey key{spec.device_class, "", spec.partition};
  if (spec.requested_models.empty()) {
    mix.Add(now, key, spec.count, cpu, memory, spec.replicas);
    return;
  }
  const double weight = static_cast<double>(spec.replicas) / spec.requested_models.size();
  for (const std::string& model : spec.requested_models) {
    key.model = model;
    mix.Add(now, key, spec.count, cpu, memory, weight);
  }
}

MatchSpec MatchSpec::Of(const RequestSpec& request) {
  MatchSpec spec;
  static_cast<RequestSpec&>(spec) = request;
  spec.selector = LabelSelector::FromMap(request.node_selector);
  return spec;
}

MatchSpec MatchSpec::ForPool(const PoolKey& pool, int count,
                             Labels node_selector) {
  RequestSpec spec;
  spec.device_class = pool.device_class;
  spec.requested_models = {pool.model};
  spec.partition = pool.partition;
  spec.count = count;
  spec.node_selector = std::move(node_selector);
  return Of(spec);
}

std::string UnitName(const PoolKey& pool) {
  if (pool.device_class == DeviceClass::kGoogleTpu) {
    return absl::StrCat(pool.model, " ", pool.partition, " slice");
  }
  if (!pool.partition.empty()) return absl::StrCat(pool.partition, " slice");
  return absl::StrCat(pool.model, " device");
}

std::string RequestUnitName(DeviceClass device_class,
                            const std::vector<std::string>& models,
                            absl::string_view partition) {
  if (models.size() == 1) {
    return UnitName(PoolKey{device_class, models[0], std::string(partition)});
  }
  if (models.empty()) {
    return absl::StrCat("whole ", DeviceClassName(device_class), " device");
  }
  std::string names =
      absl::StrCat(absl::StrJoin(models.begin(), models.end() - 1, ", "),
                   " or ", models.back());
  if (partition.empty()) return absl::StrCat(names, " device");
  return absl::StrCat(names, " ", partition, " slice");
}

absl::Status CheckSatisfiable(const CapacityIndex& index,
                              const MatchSpec& spec) {
  const std::vector<Candidate> candidates = Candidates(index, spec);
  if (candidates.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no node has any ", SpecUnitName(spec)));
  }
  if (spec.share.has_value()) {
    // A share without memory takes its fraction of whatever GPU it lands on.
    bool sharing = false;
    uint64_t most_memory = 0;
    for (const Candidate& c : candidates) {
      if (c.pool->sharing_memory.empty()) continue;
      sharing = true;
      most_memory = std::max(most_memory, *c.pool->sharing_memory.rbegin());
    }
    if (!sharing) {
      return absl::FailedPreconditionError(
          absl::StrCat("share: no ", SpecUnitName(spec), " takes shares"));
    }
    if (static_cast<uint64_t>(spec.share->memory_bytes) > most_memory) {
      return absl::FailedPreconditionError(absl::StrCat(
          "share.memory_bytes ", spec.share->memory_bytes, " is more than any ",
          SpecUnitName(spec), " that takes shares has: at most ", most_memory,
          " bytes"));
    }
  }
  int most = 0;
  for (const Candidate& c : candidates) {
    most = std::max(most, *c.pool->home_sizes.rbegin());
  }
  if (spec.count > most) {
    return absl::FailedPreconditionError(absl::StrCat(
        "count ", spec.count, " is more than any node holds: at most ", most,
        " ", SpecUnitName(spec), most == 1 ? "" : "s", " on one node"));
  }
  if (spec.replicas > 1) {
    int64_t nodes = 0;  // in the pool with the most that could hold a group
    for (const Candidate& c : candidates) {
      const auto& sizes = c.pool->home_sizes;
      nodes = std::max<int64_t>(
          nodes, std::distance(sizes.lower_bound(spec.count), sizes.end()));
    }
    if (nodes < spec.replicas) {
      return absl::FailedPreconditionError(absl::StrCat(
          "replicas ", spec.replicas, " is more than the cluster holds: ",
          nodes, " node", nodes == 1 ? "" : "s", " could ever hold ",
          spec.count, " ", SpecUnitName(spec), spec.count == 1 ? "" : "s"));
    }
  }
  if (spec.pod_resources.has_value()) {
    // A pool with a node that is not accounted, or with one that offers both
    // the CPU and the memory, may take the pod some day.
    const NodeResources& need = *spec.pod_resources;
    int64_t most_cpu = 0;
    int64_t most_memory = 0;
    for (const Candidate& c : candidates) {
      const CapacityIndex::Pool& pool = *c.pool;
      if (pool.unaccounted_homes > 0) return absl::OkStatus();
      bool offered = false;
      pool.by_allocatable.ForEachFrom({0, need.cpu_milli, std::string()},
                                      need.memory_bytes,
                                      [&](const HomeTree::Entry&) {
                                        offered = true;
                                        return false;
                                      });
      if (offered) return absl::OkStatus();
      if (const HomeTree::Entry* last = pool.by_allocatable.Last()) {
        most_cpu = std::max(most_cpu, last->cpu);
        most_memory = std::max(most_memory, pool.by_allocatable.MaxMemory());
      }
    }
    if (need.cpu_milli > most_cpu) {
      return absl::FailedPreconditionError(absl::StrCat(
          "pod_resources.cpu_milli ", need.cpu_milli,
          " is more than any node with a ", SpecUnitName(spec),
          " offers: at most ", most_cpu, " cpu_milli allocatable"));
    }
    if (need.memory_bytes > most_memory) {
      return absl::FailedPreconditionError(absl::StrCat(
          "pod_resources.memory_bytes ", need.memory_bytes,
          " is more than any node with a ", SpecUnitName(spec),
          " offers: at most ", most_memory, " memory_bytes allocatable"));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "pod_resources (", need.cpu_milli, " cpu_milli, ", need.memory_bytes,
        " memory_bytes): no node with a ", SpecUnitName(spec), " offers both"));
  }
  return absl::OkStatus();
}

std::vector<RankedPlacement> RankPlacements(const CapacityIndex& index,
                                            const NodeMap& nodes,
                                            const MatchSpec& spec,
                                            const EligibilityRules& rules) {
  const std::vector<Candidate> candidates = PoolsInRuleOrder(index, spec);
  std::vector<RankedPlacement> out;
  for (const Scored& s :
       ScoreCandidates(index, nodes, candidates, spec, rules)) {
    out.push_back(RankedPlacement{*s.candidate->key, *s.home, s.score});
  }
  return out;
}

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

std::optional<std::vector<const Unit*>> Match(const CapacityIndex& index,
                                              const NodeMap& nodes,
                                              const MatchSpec& spec,
                                              const EligibilityRules& rules) {
  const std::vector<Candidate> candidates = PoolsInRuleOrder(index, spec);
  std::optional<std::vector<const Unit*>> found;
  switch (rules.packing.policy) {
    case Packing::kFragmentation: {
      const std::vector<Scored> scored =
          ScoreCandidates(index, nodes, candidates, spec, rules);
      // None: no node had the free units, the pod's room and eligibility
      // (nothing was pruned); best fit would find none either.
      if (scored.empty()) return std::nullopt;
      for (const Scored& s : scored) {
        found = UnitsIn(index, nodes, *s.candidate, *s.home, spec, rules);
        if (found.has_value()) return found;
      }
      // Scoring looks at the home node only: every candidate it weighed
      // may have had a host of a multi-host slice ineligible. Best fit
      // then, so that whatever fits is found.
      break;
    }
    case Packing::kFirstFit:
      for (const Candidate& c : candidates) {
        for (const auto& [name, home] : c.pool->homes) {
          if (home.free < spec.count) continue;
          found = UnitsIn(index, nodes, c, name, spec, rules);
          if (found.has_value()) return found;
        }
      }
      return std::nullopt;
    case Packing::kBestFit:
    case Packing::kSpread:
      break;
  }
  // Pairs in the rule's order: fewest free units that fit (kSpread: most),
  // then the model's rank, then the node's available CPU and name (by_free's
  // order within one free count), from the first node with the CPU the
  // request needs, past every node short of the memory it needs.
  const PodNeed need = NeedOf(spec);
  const int most = MostFree(candidates);
  const bool spread = rules.packing.policy == Packing::kSpread;
  for (int i = 0; i <= most - spec.count; ++i) {
    const int f = spread ? most - i : spec.count + i;
    for (const Candidate& c : candidates) {
      if (c.pool->HomesWithFree(f) == 0) continue;
      c.pool->by_free.ForEachFrom({f, need.cpu, std::string()}, need.memory,
                                  [&](const CapacityIndex::FreeEntry& e) {
                                    if (e.free != f) return false;
                                    found = UnitsIn(index, nodes, c, e.home,
                                                    spec, rules);
                                    return !found.has_value();
                                  });
      if (found.has_value()) return found;
    }
  }
  return std::nullopt;
}

const Unit* MatchShare(const CapacityIndex& index, const NodeMap& nodes,
                       const MatchSpec& spec, const EligibilityRules& rules) {
  const GpuShare& share = *spec.share;
  // A share that gives its memory skips the GPUs with less free; one that
  // takes a fraction is checked GPU by GPU.
  const int64_t memory = share.memory_bytes > 0
                             ? share.memory_bytes
                             : std::numeric_limits<int64_t>::min();
  const Unit* best = nullptr;
  int best_free = kGpuMilli + 1;
  const HomeTree::Entry from{static_cast<int>(share.compute_milli),
                             std::numeric_limits<int64_t>::min(),
                             std::string()};
  for (const Candidate& c : Candidates(index, spec)) {
    auto visit = [&](const CapacityIndex::FreeEntry& e) {
      // Later entries of this tree have no less free: none beats `best` (an
      // equal one loses the tie to the earlier model, or to a GPU its group
      // already shares).
      if (e.free >= best_free) return false;
      const Unit* u = index.Find(e.home);
      if (!ShareFits(*u, share) ||
          Ineligible(FindNode(nodes, u->home), spec, rules) != nullptr ||
          Short(index, u->home, spec) || Reserved(*c.key, u->home, rules)) {
        return true;
      }
      best = u;
      best_free = e.free;
      return false;
    };
    // The GPUs the share's group already shares, then those nobody shares
    // (all kGpuMilli free: never a better fit than a shared one).
    if (auto group = c.pool->by_share.find(share.group);
        group != c.pool->by_share.end()) {
      group->second.ForEachFrom(from, memory, visit);
    }
    c.pool->unshared.ForEachFrom(from, memory, visit);
  }
  return best;
}

namespace {

// A node that could take one group of a gang now, as the first phase of
// MatchGang finds it: eligible, with enough free units (its units are only
// looked at for the nodes chosen).
struct GangFit {
  int free;                 // of the node, before the gang
  const std::string* home;  // the index's key
  uint32_t pref;            // its preferred domain, interned (0: none asked)
  bool out = false;         // its units did not serve after all
};

// The value of node label `key` on `node`; nullptr when it lacks it.
const std::string* LabelOf(const Node& node, const std::string& key) {
  auto label = node.labels.find(key);
  return label == node.labels.end() ? nullptr : &label->second;
}

// How a gang would sit in one domain of its required level: how many
// preferred domains it takes, what it leaves free on the nodes of those it
// touches (that could take a group), and the nodes (indices into the
// domain's fits).
struct GangChoice {
  int domains = 0;
  int64_t left = 0;
  std::vector<size_t> picked;
};

// Chooses `replicas` of `fits` (fewest free first; those `out` left aside):
// with `preferred`, the fewest preferred domains that can hold them (the
// largest while none of the rest holds what remains, then the smallest that
// does: Kueue's TAS), and within each the nodes with the fewest free units;
// else the first `replicas`. nullopt when fewer than `replicas` are left.
std::optional<GangChoice> ChooseGangNodes(const std::vector<GangFit>& fits,
                                          int replicas, bool preferred) {
  GangChoice choice;
  const size_t need_all = static_cast<size_t>(replicas);
  if (!preferred) {
    // One domain's worth: the whole domain is what is left over.
    for (size_t i = 0; i < fits.size(); ++i) {
      if (fits[i].out) continue;
      choice.left += fits[i].free;
      if (choice.picked.size() < need_all) choice.picked.push_back(i);
    }
    if (choice.picked.size() < need_all) return std::nullopt;
    return choice;
  }
  // Preferred domain -> its fits, in fits' order.
  absl::flat_hash_map<uint32_t, std::vector<size_t>> by_domain;
  size_t in = 0;
  for (size_t i = 0; i < fits.size(); ++i) {
    if (fits[i].out) continue;
    by_domain[fits[i].pref].push_back(i);
    ++in;
  }
  if (in < need_all) return std::nullopt;
  std::vector<const std::vector<size_t>*> order;
  order.reserve(by_domain.size());
  for (const auto& [domain, members] : by_domain) order.push_back(&members);
  // Most fits first; on a tie the one whose first node is fullest.
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    if (a->size() != b->size()) return a->size() > b->size();
    return a->front() < b->front();
  });
  size_t need = need_all;
  auto take = [&](const std::vector<size_t>& members, size_t n) {
    ++choice.domains;
    for (size_t i = 0; i < members.size(); ++i) {
      choice.left += fits[members[i]].free;
      if (i < n) choice.picked.push_back(members[i]);
    }
  };
  for (size_t next = 0; need > 0; ++next) {
    // The smallest domain left that holds the rest, if any; of equal ones
    // the first in `order` (sizes only fall along it).
    const std::vector<size_t>* last = nullptr;
    for (size_t j = next; j < order.size() && order[j]->size() >= need; ++j) {
      if (last == nullptr || order[j]->size() < last->size()) last = order[j];
    }
    if (last != nullptr) {
      take(*last, need);
      break;
    }
    take(*order[next], order[next]->size());
    need -= order[next]->size();
  }
  return choice;
}

}  // namespace

std::optional<std::vector<std::vector<const Unit*>>> MatchGang(
    const CapacityIndex& index, const NodeMap& nodes, const MatchSpec& spec,
    const EligibilityRules& rules) {
  const std::vector<Candidate> candidates = PoolsInRuleOrder(index, spec);
  const bool preferred = !spec.preferred_topology.empty();
  // Preferred domains interned per call; a node without the label is a
  // domain of its own (named by the node, apart from label values).
  absl::flat_hash_map<std::pair<absl::string_view, bool>, uint32_t> pref_ids;
  // Per pool, required domain (by name: ties go to the first) -> the nodes
  // that could take a group, fewest free first (by_free's order). The names
  // point into `nodes`, which outlives the call.
  using Domains = std::map<absl::string_view, std::vector<GangFit>>;
  std::vector<Domains> by_pool(candidates.size());
  for (size_t p = 0; p < candidates.size(); ++p) {
    const Candidate& c = candidates[p];
    c.pool->by_free.ForEachFrom(
        {spec.count, std::numeric_limits<int64_t>::min(), std::string()},
        std::numeric_limits<int64_t>::min(),
        [&](const CapacityIndex::FreeEntry& e) {
          const std::string& home = e.home;
          const Node* node = FindNode(nodes, home);
          if (node == nullptr || Ineligible(node, spec, rules) != nullptr ||
              Short(index, home, spec) || Reserved(*c.key, home, rules)) {
            return true;
          }
          absl::string_view required;
          if (!spec.topology_key.empty()) {
            const std::string* label = LabelOf(*node, spec.topology_key);
            if (label == nullptr) return true;
            required = *label;
          }
          uint32_t tag = 0;
          if (preferred) {
            const std::string* label = LabelOf(*node, spec.preferred_topology);
            const std::pair<absl::string_view, bool> name =
                label == nullptr
                    ? std::make_pair(absl::string_view(home), true)
                    : std::make_pair(absl::string_view(*label), false);
            tag = pref_ids.try_emplace(name, pref_ids.size()).first->second;
          }
          by_pool[p][required].push_back(GangFit{e.free, &home, tag});
          return true;
        });
  }
  // Chooses across pools and domains, then takes the chosen nodes' units; a
  // node whose units do not serve after all (a host of a multi-host unit
  // ineligible) is left out and the choice made again.
  for (;;) {
    struct Best {
      std::pair<int, int64_t> score;  // (preferred domains, left over)
      size_t pool = 0;
      std::vector<GangFit>* fits = nullptr;
      std::vector<size_t> picked;
    };
    std::optional<Best> best;
    for (size_t p = 0; p < by_pool.size(); ++p) {
      for (auto& [domain, fits] : by_pool[p]) {
        if (static_cast<int>(fits.size()) < spec.replicas) continue;
        std::optional<GangChoice> choice =
            ChooseGangNodes(fits, spec.replicas, preferred);
        if (!choice.has_value()) continue;
        const std::pair<int, int64_t> score{
            choice->domains,
            choice->left - static_cast<int64_t>(spec.replicas) * spec.count};
        if (best.has_value() && score >= best->score) continue;
        best = Best{score, p, &fits, std::move(choice->picked)};
      }
    }
    if (!best.has_value()) return std::nullopt;
    std::vector<std::vector<const Unit*>> groups;
    bool served = true;
    for (size_t i : best->picked) {
      GangFit& fit = (*best->fits)[i];
      std::optional<std::vector<const Unit*>> units =
          UnitsIn(index, nodes, candidates[best->pool], *fit.home, spec, rules);
      if (!units.has_value()) {
        fit.out = true;
        served = false;
        break;
      }
      groups.push_back(*std::move(units));
    }
    if (served) return groups;
  }
}

absl::Status CheckGangDomains(const CapacityIndex& index, const NodeMap& nodes,
                              const MatchSpec& spec) {
  if (spec.replicas <= 1 || spec.topology_key.empty()) {
    return absl::OkStatus();
  }
  // Required domain -> nodes that could ever hold a group, in the pool with
  // the most.
  int most = 0;
  std::string widest;
  for (const Candidate& c : Candidates(index, spec)) {
    absl::flat_hash_map<absl::string_view, int> could;
    for (const auto& [home, h] : c.pool->homes) {
      if (static_cast<int>(h.units.size()) < spec.count) continue;
      // A node the request's selector rules out never serves it.
      const Node* node = FindNode(nodes, home);
      const std::string* domain =
          node == nullptr || !spec.selector.Matches(node->labels)
              ? nullptr
              : LabelOf(*node, spec.topology_key);
      if (domain == nullptr) continue;
      int& n = could[*domain];
      if (++n > most || (n == most && *domain < widest)) {
        most = n;
        widest = *domain;
      }
    }
  }
  if (most >= spec.replicas) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "no domain of topology level ", spec.topology_key, " could ever hold ",
      spec.replicas, " groups of ", spec.count, " ", SpecUnitName(spec),
      spec.count == 1 ? "" : "s",
      most == 0 ? absl::StrCat(": no node labelled ", spec.topology_key,
                               " could hold one")
                : absl::StrCat(": the largest, ", spec.topology_key, "=",
                               widest, ", has ", most, " node",
                               most == 1 ? "" : "s", " that could")));
}

std::string DescribeLinkChoice(const CapacityIndex& index, const NodeMap& nodes,
                               const std::vector<const Unit*>& group) {
  if (group.empty() || !group[0]->pool.partition.empty()) return "";
  const Node* node = FindNode(nodes, group[0]->home);
  if (!HasLinks(node)) return "";
  // What UnitsIn weighed: the first kMaxLinkedCandidates free GPUs in
  // best-fit order (Explain allocates nothing, so the group's are free).
  std::vector<const Unit*> free;
  if (auto pool = index.pools().find(group[0]->pool);
      pool != index.pools().end()) {
    if (auto home = pool->second.homes.find(group[0]->home);
        home != pool->second.homes.end()) {
      free = FreeUnitsBestFit(index, home->second);
    }
  }
  const int taken = static_cast<int>(group.size());
  const int weighed =
      std::min(static_cast<int>(free.size()), kMaxLinkedCandidates);
  if (taken >= weighed) return "";
  const bool more = static_cast<int>(free.size()) > weighed;
  free.resize(weighed);
  if (LinkGraph(*node, DeviceIds(free)).empty()) return "";
  std::vector<int> numbers;
  for (const Unit* u : group) numbers.push_back(u->order);
  const std::string gpus =
      absl::StrCat(taken == 1 ? "GPU " : "GPUs ", absl::StrJoin(numbers, ", "),
                   " of ", node->name);
  const std::string of = more
                             ? absl::StrCat("its first ", weighed, " free GPUs")
                             : absl::StrCat("its ", weighed, " free GPUs");
  if (taken == 1) {
    return absl::StrCat(gpus, ": of ", of,
                        ", the one that leaves the others best linked");
  }
  const LinkedSet set = AsLinkedSet(LinkGraph(*node, DeviceIds(group)));
  std::string links(PairTierPhrase(set.tier));
  if (set.nvlinks > 0) {
    absl::StrAppend(&links, ", ", set.nvlinks, " NVLinks among them");
  }
  return absl::StrCat(gpus, " (", links, "): the best-linked ", taken, " of ",
                      of);
}

Explanation ExplainNodes(const CapacityIndex& index, const NodeMap& nodes,
                         const MatchSpec& spec, const EligibilityRules& rules) {
  const std::vector<Candidate> candidates = Candidates(index, spec);
  const bool several = spec.requested_models.size() != 1;
  // Requested models that no node has.
  std::vector<std::string> missing;
  for (const std::string& model : spec.requested_models) {
    if (std::none_of(
            candidates.begin(), candidates.end(),
            [&](const Candidate& c) { return c.key->model == model; })) {
      missing.push_back(model);
    }
  }
  // Units of each candidate pool on each node, counting a multi-host slice on
  // each of its hosts: on_node[node][i] for candidates[i].
  absl::flat_hash_map<absl::string_view, std::vector<std::vector<const Unit*>>>
      on_node;
  for (size_t i = 0; i < candidates.size(); ++i) {
    for (const auto& [home_name, home] : candidates[i].pool->homes) {
      for (const std::string& key : home.units) {
        const Unit* u = index.Find(key);
        for (const std::string& host : u->hosts) {
          auto& per_pool = on_node[host];
          per_pool.resize(candidates.size());
          per_pool[i].push_back(u);
        }
      }
    }
  }
  Explanation out;
  std::map<std::string, int> first_reasons;
  for (const auto& [name, node] : nodes) {
    std::vector<std::string> reasons;
    std::string first;
    auto add = [&](std::string category, std::string detail) {
      if (first.empty()) first = category;
      reasons.push_back(detail.empty()
                            ? std::move(category)
                            : absl::StrCat(category, " (", detail, ")"));
    };
    auto units = on_node.find(name);
    if (units == on_node.end())
      add(absl::StrCat("no ", SpecUnitName(spec)), "");
    if (const char* why = Ineligible(&node, spec, rules)) add(why, "");
    if (spec.pod_resources.has_value()) {
      if (const char* resource = index.Shortfall(name, *spec.pod_resources)) {
        const NodeAccount& account = *index.Account(name);
        add(absl::StrCat("insufficient ", resource),
            ShortfallDetail(resource, account.available(), *account.allocatable,
                            *spec.pod_resources));
      }
    }
    if (units != on_node.end()) {
      // This node's own eligibility is reported above; count, per pool, the
      // free units whose other hosts (for a multi-host TPU slice) can serve
      // too. The node can serve when one pool has enough.
      std::vector<std::pair<std::string, std::string>> shortfalls;
      // Requested models this node lacks, in model order (those no node has
      // included): "no <unit>".
      std::map<std::string, std::string> absent;
      for (const std::string& model : missing) {
        absent.emplace(
            model,
            absl::StrCat("no ", ModelUnitName(PoolKey{spec.device_class, model,
                                                      spec.partition})));
      }
      bool fits = false;
      const std::string& this_node =
          name;  // lambdas cannot capture a binding (C++17)
      for (size_t i = 0; i < candidates.size(); ++i) {
        const std::vector<const Unit*>& pool_units = units->second[i];
        const std::string unit = several ? ModelUnitName(*candidates[i].key)
                                         : UnitName(*candidates[i].key);
        if (pool_units.empty()) {
          // Any model: only the models the node has are worth a word.
          if (!spec.requested_models.empty()) {
            absent.emplace(candidates[i].key->model, absl::StrCat("no ", unit));
          }
          continue;
        }
        if (spec.share.has_value()) {
          if (std::any_of(
                  pool_units.begin(), pool_units.end(),
                  [&](const Unit* u) { return ShareFits(*u, *spec.share); })) {
            fits = true;
          } else {
            std::string detail = ShareShortfall(pool_units, *spec.share);
            shortfalls.emplace_back(
                detail.empty()
                    ? absl::StrCat("no ", unit, " takes shares")
                    : absl::StrCat("no ", unit, " with the share free"),
                std::move(detail));
          }
          continue;
        }
        int free = 0;
        std::string blocked_by;
        for (const Unit* u : pool_units) {
          if (!u->free()) continue;
          const bool others_ok = std::all_of(
              u->hosts.begin(), u->hosts.end(), [&](const std::string& host) {
                return host == this_node ||
                       (Ineligible(FindNode(nodes, host), spec, rules) ==
                            nullptr &&
                        !Short(index, host, spec));
              });
          if (others_ok) {
            ++free;
          } else {
            blocked_by = u->key.substr(u->key.find(' ') + 1);
          }
        }
        if (free == 0) {
          shortfalls.emplace_back(
              absl::StrCat("no free ", unit),
              blocked_by.empty() ? ""
                                 : absl::StrCat("another host of slice ",
                                                blocked_by, " cannot serve"));
        } else if (free < spec.count) {
          shortfalls.emplace_back(
              absl::StrCat("too few free ", unit, "s"),
              absl::StrCat(free, " free, ", spec.count, " requested"));
        } else {
          fits = true;
        }
      }
      if (!fits) {
        for (auto& [category, detail] : shortfalls) {
          add(std::move(category), std::move(detail));
        }
        for (auto& [model, category] : absent) add(std::move(category), "");
      }
    }
    if (reasons.empty()) {
      ++out.available;
    } else {
      ++first_reasons[first];
      out.nodes.push_back(NodeVerdict{name, std::move(reasons)});
    }
  }
  std::vector<std::pair<std::string, int>> counts(first_reasons.begin(),
                                                  first_reasons.end());
  std::stable_sort(
      counts.begin(), counts.end(),
      [](const auto& a, const auto& b) { return a.second > b.second; });
  out.summary =
      absl::StrCat(out.available, "/", nodes.size(), " nodes available");
  if (!counts.empty()) {
    absl::StrAppend(
        &out.summary, ": ",
        absl::StrJoin(counts, ", ", [](std::string* s, const auto& c) {
          absl::StrAppend(s, c.second, " ", c.first);
        }));
  }
  return out;
}

}  // namespace accelsched
