// Matching a request to free units: best fit over the capacity index, and
// Explain's per-node account of why a node cannot serve. Pure functions of
// their inputs.
#ifndef ACCELSCHED_CORE_MATCHER_H_
#define ACCELSCHED_CORE_MATCHER_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/capacity_index.h"
#include "core/catalog_model.h"
#include "core/labels.h"

namespace accelsched {

using NodeMap = std::map<std::string, Node, std::less<>>;

struct MatchSpec {
  PoolKey pool;
  int count = 1;
  LabelSelector selector;
};

// What makes a node eligible beyond its free units.
struct EligibilityRules {
  absl::Time now;
  // Nodes whose last heartbeat is older get nothing; zero disables the check.
  absl::Duration heartbeat_timeout = absl::ZeroDuration();
};

// FAILED_PRECONDITION when no node could ever hold `spec.count` units of the
// pool (it is not a matter of waiting for releases).
absl::Status CheckSatisfiable(const CapacityIndex& index,
                              const MatchSpec& spec);

// The units to allocate, all on one node (a TPU slice: on its hosts), chosen
// best-fit: the eligible node with the fewest free units that still fit, and
// within it the GPUs with the fewest free slices, so that large requests still
// fit later. Ties go to the smaller name. nullopt when nothing fits now.
std::optional<std::vector<const Unit*>> Match(const CapacityIndex& index,
                                              const NodeMap& nodes,
                                              const MatchSpec& spec,
                                              const EligibilityRules& rules);

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

Explanation Explain(const CapacityIndex& index, const NodeMap& nodes,
                    const MatchSpec& spec, const EligibilityRules& rules);

// A human name for a pool's unit: "nvidia-tesla-t4 device", "1g.10gb slice",
// "tpu-v5p-slice 2x2x2 slice".
std::string UnitName(const PoolKey& pool);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_MATCHER_H_
