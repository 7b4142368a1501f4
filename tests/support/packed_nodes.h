// What the placement plugins' tests (best_fit, first_fit, spread,
// fragmentation, lease_term) build their clusters from: whole units, nodes
// heard from, nodes of eight units with some held, and the check that a
// packing policy places one group of whole units only.
#ifndef ACCELSCHED_TESTS_SUPPORT_PACKED_NODES_H_
#define ACCELSCHED_TESTS_SUPPORT_PACKED_NODES_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/catalog/capacity_index.h"
#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"
#include "core/framework/snapshot.h"
#include "core/matching/match_spec.h"
#include "gtest/gtest.h"

namespace accelsched {

// A healthy whole unit of `pool` on `node` alone.
inline Unit Whole(const PoolKey& pool, const std::string& key,
                  const std::string& node, int order) {
  Unit u;
  u.key = key;
  u.pool = pool;
  u.home = node;
  u.hosts = {node};
  u.devices = {{node, key, "", ""}};
  u.order = order;
  return u;
}

// A node heard from at `at`.
inline Node HeardFrom(const std::string& name, absl::Time at) {
  Node n;
  n.name = name;
  n.last_heartbeat = at;
  return n;
}

// Nodes of 8 units, each heard from at `heard`.
struct PackedNodes {
  CapacityIndex index;
  NodeMap nodes;
  // Adds a node of 8 units of `pool` for each of `free`'s keys, with all but
  // that many held by allocation "held-<node>".
  void Add(const std::map<std::string, int>& free, const PoolKey& pool,
           absl::Time heard) {
    for (const auto& [name, n] : free) {
      nodes[name] = HeardFrom(name, heard);
      for (int g = 0; g < 8; ++g) {
        const std::string key = absl::StrCat(name, "-", g);
        index.Put(Whole(pool, key, name, g));
        if (g >= n) index.SetHolder(key, "held-" + name);
      }
    }
  }
};

// A packing policy places one group of whole units of `pool`: a gang is
// topology's, a share the shares plugin's.
inline void ExpectPlacesOneGroupOfWholeUnitsOnly(const PlacementPlugin& plugin,
                                                 const PoolKey& pool) {
  CapacityIndex index;
  NodeMap nodes;
  Snapshot snapshot;
  snapshot.index = &index;
  snapshot.nodes = &nodes;
  Allocation request;
  MatchSpec whole = MatchSpec::ForPool(pool, 2);
  MatchSpec gang = whole;
  gang.replicas = 2;
  MatchSpec share = MatchSpec::ForPool(pool, 1);
  share.share = GpuShare{500, 0};
  for (const auto& [spec, places] :
       std::vector<std::pair<const MatchSpec*, bool>>{
           {&whole, true}, {&gang, false}, {&share, false}}) {
    CycleState cycle(CycleMode::kAllocate, snapshot, *spec, request, nullptr);
    EXPECT_EQ(plugin.Places(cycle), places)
        << plugin.name() << ": " << spec->replicas << " replicas, "
        << (spec->share.has_value() ? "a share" : "whole units");
  }
}

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_PACKED_NODES_H_
