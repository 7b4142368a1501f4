#include "core/matcher.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace accelsched {
namespace {

constexpr char kSelectorMismatch[] = "node_selector mismatch";
constexpr char kCordoned[] = "cordoned";
constexpr char kStale[] = "stale heartbeat";

// Why `node` cannot take part, or nullptr when it can.
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

const Node* FindNode(const NodeMap& nodes, absl::string_view name) {
  auto it = nodes.find(name);
  return it == nodes.end() ? nullptr : &it->second;
}

bool HostsEligible(const Unit& u, const NodeMap& nodes, const MatchSpec& spec,
                   const EligibilityRules& rules) {
  for (const std::string& host : u.hosts) {
    if (Ineligible(FindNode(nodes, host), spec, rules) != nullptr) return false;
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

}  // namespace

std::string UnitName(const PoolKey& pool) {
  if (pool.device_class == DeviceClass::kGoogleTpu) {
    return absl::StrCat(pool.model, " ", pool.partition, " slice");
  }
  if (!pool.partition.empty()) return absl::StrCat(pool.partition, " slice");
  return absl::StrCat(pool.model, " device");
}

absl::Status CheckSatisfiable(const CapacityIndex& index,
                              const MatchSpec& spec) {
  const CapacityIndex::Pool* pool = index.FindPool(spec.pool);
  if (pool == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("no node has any ", UnitName(spec.pool)));
  }
  const int most = *pool->home_sizes.rbegin();
  if (spec.count > most) {
    return absl::FailedPreconditionError(absl::StrCat(
        "count ", spec.count, " is more than any node holds: at most ", most,
        " ", UnitName(spec.pool), most == 1 ? "" : "s", " on one node"));
  }
  return absl::OkStatus();
}

std::optional<std::vector<const Unit*>> Match(const CapacityIndex& index,
                                              const NodeMap& nodes,
                                              const MatchSpec& spec,
                                              const EligibilityRules& rules) {
  const CapacityIndex::Pool* pool = index.FindPool(spec.pool);
  if (pool == nullptr) return std::nullopt;
  for (auto it = pool->by_free.lower_bound({spec.count, std::string()});
       it != pool->by_free.end(); ++it) {
    const CapacityIndex::Home& home = pool->homes.find(it->second)->second;
    std::vector<const Unit*> free = FreeUnitsBestFit(index, home);
    std::vector<const Unit*> chosen;
    for (const Unit* u : free) {
      if (static_cast<int>(chosen.size()) == spec.count) break;
      if (HostsEligible(*u, nodes, spec, rules)) chosen.push_back(u);
    }
    if (static_cast<int>(chosen.size()) == spec.count) return chosen;
  }
  return std::nullopt;
}

Explanation Explain(const CapacityIndex& index, const NodeMap& nodes,
                    const MatchSpec& spec, const EligibilityRules& rules) {
  const CapacityIndex::Pool* pool = index.FindPool(spec.pool);
  const std::string unit = UnitName(spec.pool);
  // Units of the pool on each node, counting a multi-host slice on each of its
  // hosts.
  absl::flat_hash_map<absl::string_view, std::vector<const Unit*>> on_node;
  if (pool != nullptr) {
    for (const auto& [home_name, home] : pool->homes) {
      for (const std::string& key : home.units) {
        const Unit* u = index.Find(key);
        for (const std::string& host : u->hosts) on_node[host].push_back(u);
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
    if (units == on_node.end()) add(absl::StrCat("no ", unit), "");
    if (const char* why = Ineligible(&node, spec, rules)) add(why, "");
    if (units != on_node.end()) {
      // This node's own eligibility is reported above; count the free units
      // whose other hosts (for a multi-host TPU slice) can serve too.
      int free = 0;
      std::string blocked_by;
      const std::string& this_node =
          name;  // lambdas cannot capture a binding (C++17)
      for (const Unit* u : units->second) {
        if (!u->free()) continue;
        const bool others_ok = std::all_of(
            u->hosts.begin(), u->hosts.end(), [&](const std::string& host) {
              return host == this_node ||
                     Ineligible(FindNode(nodes, host), spec, rules) == nullptr;
            });
        if (others_ok) {
          ++free;
        } else {
          blocked_by = u->key.substr(u->key.find(' ') + 1);
        }
      }
      if (free == 0) {
        add(absl::StrCat("no free ", unit),
            blocked_by.empty() ? ""
                               : absl::StrCat("another host of slice ",
                                              blocked_by, " cannot serve"));
      } else if (free < spec.count) {
        add(absl::StrCat("too few free ", unit, "s"),
            absl::StrCat(free, " free, ", spec.count, " requested"));
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
