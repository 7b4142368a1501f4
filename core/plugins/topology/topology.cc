#include "core/plugins/topology/topology.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/framework/placement.h"

namespace accelsched {
namespace {

// The value of node label `key` on `node`; nullptr when it lacks it.
const std::string* LabelOf(const Node& node, const std::string& key) {
  auto label = node.labels.find(key);
  return label == node.labels.end() ? nullptr : &label->second;
}

// A node that could take one group of a gang now, as the first phase of the
// placement finds it: eligible, with enough free units (its units are only
// looked at for the nodes chosen).
struct GangFit {
  int free;                 // of the node, before the gang
  const std::string* home;  // the index's key
  uint32_t pref;            // its preferred domain, interned (0: none asked)
  bool out = false;         // its units did not serve after all
};

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

std::unique_ptr<Plugin> TopologyPlugin::New() {
  return std::make_unique<TopologyPlugin>();
}

bool TopologyPlugin::Prepare(CycleState& cycle) const {
  return !cycle.spec().topology_key.empty();
}

const char* TopologyPlugin::Filter(const CycleState& cycle,
                                   const NodeView& node) const {
  if (node.node == nullptr ||
      LabelOf(*node.node, cycle.spec().topology_key) == nullptr) {
    return kNoDomain;
  }
  return nullptr;
}

bool TopologyPlugin::Places(const CycleState& cycle) const {
  return cycle.spec().replicas > 1;
}

std::optional<Groups> TopologyPlugin::Place(const Session& session,
                                            const CycleState& cycle) const {
  const MatchSpec& spec = cycle.spec();
  const Snapshot& snap = cycle.snapshot();
  const PoolCandidates candidates = PoolsInRuleOrder(*snap.index, spec);
  const bool preferred = !spec.preferred_topology.empty();
  // Preferred domains interned per call; a node without the label is a
  // domain of its own (named by the node, apart from label values).
  absl::flat_hash_map<std::pair<absl::string_view, bool>, uint32_t> pref_ids;
  // Per pool, required domain (by name: ties go to the first) -> the nodes
  // that could take a group, fewest free first (by_free's order). The names
  // point into the nodes, which outlive the call.
  using Domains = std::map<absl::string_view, std::vector<GangFit>>;
  std::vector<Domains> by_pool(candidates.size());
  for (size_t p = 0; p < candidates.size(); ++p) {
    const PoolCandidate& c = candidates[p];
    c.pool->by_free.ForEachFrom(
        {spec.count, std::numeric_limits<int64_t>::min(), std::string()},
        std::numeric_limits<int64_t>::min(),
        [&](const CapacityIndex::FreeEntry& e) {
          const std::string& home = e.home;
          const Node* node = snap.FindNode(home);
          if (node == nullptr ||
              !cycle.filters().HomePasses(cycle, *c.key, home, node)) {
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
    Groups groups;
    bool served = true;
    for (size_t i : best->picked) {
      GangFit& fit = (*best->fits)[i];
      std::optional<UnitGroup> units =
          UnitsIn(session, cycle, candidates[best->pool], *fit.home);
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

std::string TopologyPlugin::WhyNot(const Session& session,
                                   const CycleState& cycle) const {
  const MatchSpec& spec = cycle.spec();
  const CapacityIndex& index = *cycle.snapshot().index;
  int64_t free = 0, total = 0;
  for (const PoolKey& key : PoolsFor(index, spec)) {
    if (const auto* pool = index.FindPool(key)) {
      free += pool->free();
      total += pool->total;
    }
  }
  std::string pod;
  if (spec.pod_resources.has_value()) {
    pod = absl::StrCat(" and room for the pod (", spec.pod_resources->cpu_milli,
                       " cpu_milli, ", spec.pod_resources->memory_bytes,
                       " memory_bytes)");
  }
  return absl::StrCat("no ", spec.replicas, " nodes",
                      spec.topology_key.empty()
                          ? ""
                          : absl::StrCat(" sharing one ", spec.topology_key),
                      " with ", spec.count, " free ", SpecUnitName(spec),
                      spec.count == 1 ? "" : "s", pod, " each (", free,
                      " free of ", total, ")");
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
  for (const PoolCandidate& c : CandidatePools(index, spec)) {
    absl::flat_hash_map<absl::string_view, int> could;
    for (const auto& [home, h] : c.pool->homes) {
      if (static_cast<int>(h.units.size()) < spec.count) continue;
      // A node the request's selector rules out never serves it.
      auto it = nodes.find(home);
      const Node* node = it == nodes.end() ? nullptr : &it->second;
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

PostFilterResult TopologyPlugin::PostFilter(Session& session, CycleState& cycle,
                                            const CycleFailure& failure) const {
  const Snapshot& snap = cycle.snapshot();
  absl::Status s =
      CheckGangDomains(*snap.index, *snap.nodes, cycle.requested_spec());
  if (s.ok()) return {};
  PostFilterResult r;
  r.code = PostFilterResult::Code::kRefused;
  r.reason = std::string(s.message());
  return r;
}

}  // namespace accelsched
