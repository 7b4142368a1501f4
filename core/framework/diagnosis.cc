#include "core/framework/diagnosis.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/framework/framework.h"
#include "core/framework/placement.h"

namespace accelsched {

Explanation AccountNodes(const Framework& framework, const CycleState& cycle) {
  const Snapshot& snap = cycle.snapshot();
  const CapacityIndex& index = *snap.index;
  const MatchSpec& spec = cycle.requested_spec();
  const PlacementPlugin* placer = framework.plugins().PlacerFor(cycle);
  const PoolCandidates candidates = CandidatePools(index, spec);
  const bool several = spec.requested_models.size() != 1;
  // Requested models that no node has.
  std::vector<std::string> missing;
  for (const std::string& model : spec.requested_models) {
    if (std::none_of(
            candidates.begin(), candidates.end(),
            [&](const PoolCandidate& c) { return c.key->model == model; })) {
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
  for (const auto& [name, node] : *snap.nodes) {
    std::vector<std::string> reasons;
    std::string first;
    auto add = [&](NodeReason r) {
      if (first.empty()) first = r.category;
      reasons.push_back(r.detail.empty()
                            ? std::move(r.category)
                            : absl::StrCat(r.category, " (", r.detail, ")"));
    };
    auto units = on_node.find(name);
    if (units == on_node.end()) {
      add({absl::StrCat("no ", SpecUnitName(spec)), ""});
    }
    const NodeView view{name, &node, nullptr, NodeResources{}};
    // The node's own gates first, and only the first that fails (one reason
    // it takes no work is enough), then what its room lacks.
    // (A kHeld filter is asked of a pool's units, not of a node: none is in
    // the account, FilterPlugin::in_account.)
    for (const FilterPlugin::Kind kind :
         {FilterPlugin::Kind::kGate, FilterPlugin::Kind::kRoom}) {
      for (const FilterPlugin* f : cycle.filters().all()) {
        if (f->kind() != kind || !f->in_account()) continue;
        if (std::optional<NodeReason> r = f->Describe(cycle, view)) {
          add(*std::move(r));
          if (kind == FilterPlugin::Kind::kGate) break;
        }
      }
    }
    if (units != on_node.end() && placer != nullptr) {
      // This node's own eligibility is reported above; the placement says
      // what each pool's units here lack. The node can serve when one pool
      // has enough.
      std::vector<NodeReason> shortfalls;
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
      for (size_t i = 0; i < candidates.size(); ++i) {
        const std::vector<const Unit*>& pool_units = units->second[i];
        if (pool_units.empty()) {
          // Any model: only the models the node has are worth a word.
          if (!spec.requested_models.empty()) {
            absent.emplace(
                candidates[i].key->model,
                absl::StrCat("no ", several ? ModelUnitName(*candidates[i].key)
                                            : UnitName(*candidates[i].key)));
          }
          continue;
        }
        std::optional<NodeReason> shortfall =
            placer->DescribePool(cycle, name, *candidates[i].key, pool_units);
        if (!shortfall.has_value()) {
          fits = true;
        } else {
          shortfalls.push_back(*std::move(shortfall));
        }
      }
      if (!fits) {
        for (NodeReason& r : shortfalls) add(std::move(r));
        for (auto& [model, category] : absent) add({std::move(category), ""});
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
      absl::StrCat(out.available, "/", snap.nodes->size(), " nodes available");
  if (!counts.empty()) {
    absl::StrAppend(
        &out.summary, ": ",
        absl::StrJoin(counts, ", ", [](std::string* s, const auto& c) {
          absl::StrAppend(s, c.second, " ", c.first);
        }));
  }
  return out;
}

void RecordPlacement(const Framework& framework, const Session& session,
                     const CycleState& cycle, const PlacementPlugin& placer,
                     const std::vector<RankedPlacement>& ranked,
                     const std::optional<Groups>& groups) {
  CycleRecord* record = cycle.notes().record;
  if (record == nullptr) return;
  const CapacityIndex& index = *cycle.snapshot().index;
  // The nodes holding units of the request's pools, each with those pools.
  std::map<std::string, std::vector<const PoolKey*>> homes;
  for (const PoolCandidate& c : CandidatePools(index, cycle.spec())) {
    for (const auto& [home, h] : c.pool->homes) {
      homes[home].push_back(c.key);
    }
  }
  std::set<std::string> in;
  for (const auto& [home, pools] : homes) in.insert(home);
  for (const FilterPlugin* f : cycle.filters().all()) {
    const int reached = static_cast<int>(in.size());
    for (auto it = in.begin(); it != in.end();) {
      const Node* node = cycle.snapshot().FindNode(*it);
      bool passes = false;
      for (const PoolKey* pool : homes[*it]) {
        if (f->Filter(cycle, NodeView{*it, node, pool, NodeResources{}}) ==
            nullptr) {
          passes = true;
          break;
        }
      }
      it = passes ? std::next(it) : in.erase(it);
    }
    record->Add(
        CycleStep{std::string(f->name()),
                  std::string(ExtensionPointName(ExtensionPoint::kFilter)),
                  reached, static_cast<int>(in.size()), ""});
  }
  std::string chose;
  int chosen = 0;
  if (groups.has_value()) {
    std::set<std::string> nodes;
    for (const auto& group : *groups) {
      for (const Unit* u : group) nodes.insert(u->home);
    }
    chosen = static_cast<int>(nodes.size());
    chose = absl::StrCat("chose ", absl::StrJoin(nodes, ", "));
    if (!ranked.empty()) {
      absl::StrAppend(&chose, " of ", ranked.size(),
                      " weighed: ", DescribeScore(ranked.front().score));
    }
  } else {
    chose = placer.WhyNot(session, cycle);
  }
  record->Add(CycleStep{std::string(placer.name()),
                        std::string(ExtensionPointName(ExtensionPoint::kScore)),
                        static_cast<int>(in.size()), chosen, chose});
  if (!ranked.empty()) {
    for (const PluginSet::WeightedScore& s : framework.plugins().scores()) {
      record->Add(CycleStep{
          std::string(s.plugin->name()),
          std::string(ExtensionPointName(ExtensionPoint::kScore)),
          static_cast<int>(ranked.size()), static_cast<int>(ranked.size()),
          absl::StrCat("weight ", s.weight)});
    }
  }
  if (groups.has_value() && framework.plugins().unit_score() != nullptr) {
    for (std::string& words :
         DescribeUnits(framework.plugins(), cycle, *groups)) {
      record->Add(
          CycleStep{std::string(framework.plugins().unit_score()->name()),
                    std::string(ExtensionPointName(ExtensionPoint::kScore)), 1,
                    1, std::move(words)});
    }
  }
}

std::string WhyRefused(const Framework& framework, const Session& session,
                       CycleState& cycle) {
  std::string why = AccountNodes(framework, cycle).summary;
  const FilterChain all = cycle.filters();
  for (const FilterPlugin* f : all.all()) {
    if (f->in_account() || f->ExcludedNote().empty()) continue;
    // Placed again without it (the others prepared afresh, so that the room
    // they state is theirs alone): would the request fit but for it?
    FilterChain& without = cycle.filters();
    without.Clear();
    // The profile's entries (kind and home_only as PluginSet took them) of
    // the filters that applied, in profile order as `all` holds them.
    for (const FilterEntry& g : framework.plugins().filters()) {
      if (g.plugin != f && absl::c_linear_search(all.all(), g.plugin) &&
          g.plugin->Prepare(cycle)) {
        without.Add(g);
      }
    }
    const bool fits = framework.Place(session, cycle).has_value();
    cycle.filters() = all;
    if (fits) absl::StrAppend(&why, "; ", f->ExcludedNote());
  }
  return why;
}

std::vector<RankedPlacement> RankPlacements(const PluginSet& plugins,
                                            const Session& session,
                                            const CycleState& cycle) {
  const PlacementPlugin* placer = plugins.PlacerFor(cycle);
  if (placer == nullptr) return {};
  return placer->Rank(session, cycle);
}

std::vector<std::string> DescribeUnits(const PluginSet& plugins,
                                       const CycleState& cycle,
                                       const Groups& groups) {
  std::vector<std::string> out;
  if (plugins.unit_score() == nullptr) return out;
  for (const UnitGroup& group : groups) {
    if (std::string s = plugins.unit_score()->Describe(cycle, group);
        !s.empty()) {
      out.push_back(std::move(s));
    }
  }
  return out;
}

}  // namespace accelsched
