// Explain's account of a request, node by node, from the cycle's own
// plugins: why each node that cannot serve it cannot (the Filter plugins in
// the account, then the placement plugin's word on the node's units), the
// summary that counts nodes by their first reason (Kubernetes' "0/5 nodes
// are available: ..."), and the steps of the placement for the cycle's
// record.
#ifndef ACCELSCHED_CORE_FRAMEWORK_DIAGNOSIS_H_
#define ACCELSCHED_CORE_FRAMEWORK_DIAGNOSIS_H_

#include <optional>
#include <string>
#include <vector>

#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"
#include "core/framework/plugin_set.h"
#include "core/framework/session.h"

namespace accelsched {

class Framework;

struct NodeVerdict {
  std::string node;
  std::vector<std::string> reasons;  // empty: the node can serve
};

struct Explanation {
  std::vector<NodeVerdict> nodes;  // every node that cannot serve, by name
  int available = 0;               // nodes that can serve
  // "0/12 nodes available: 7 no free 1g.10gb slice, 5 node_selector mismatch"
  std::string summary;
};

// The account of the cycle's request as it asked (its spec before any
// narrowing) over every node of the snapshot, with the cycle's filters
// (prepared) that are in the account: "no <unit>" for a node without units
// of the request's pools, then the first gate that refuses it and every room
// filter's reason (each kind in profile order; held filters are never in the
// account), then,
// unless one of its pools serves, the placement plugin's reason for each
// pool (DescribePool) and "no <unit>" for each requested model it lacks.
// O(nodes x filters + units of the request's pools).
Explanation AccountNodes(const Framework& framework, const CycleState& cycle);

// Records the placement's steps in the cycle's record: each filter that
// applies (the nodes holding units of the request's pools that reach it, and
// those it lets through), the placement (those that pass every filter, and
// the nodes it chose or why none), the Score plugins beside it (the
// candidates weighed), and the unit plugin's choice of each group.
void RecordPlacement(const Framework& framework, const Session& session,
                     const CycleState& cycle, const PlacementPlugin& placer,
                     const std::vector<RankedPlacement>& ranked,
                     const std::optional<Groups>& groups);

// Why a request that nothing fits is refused (RESOURCE_EXHAUSTED): the
// account's summary, and, for each filter the account leaves out without
// which the request would fit, what that filter says of it (ExcludedNote).
// The cycle's filters are as they were after.
std::string WhyRefused(const Framework& framework, const Session& session,
                       CycleState& cycle);

// The candidates the request's placement plugin weighed, best first (empty
// when none places it).
std::vector<RankedPlacement> RankPlacements(const PluginSet& plugins,
                                            const Session& session,
                                            const CycleState& cycle);

// What the unit plugin says of each group of `groups` ("" ones left out;
// empty without a unit plugin).
std::vector<std::string> DescribeUnits(const PluginSet& plugins,
                                       const CycleState& cycle,
                                       const Groups& groups);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_FRAMEWORK_DIAGNOSIS_H_
