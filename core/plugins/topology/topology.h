// The topology plugin: required and preferred topology (Kueue's TAS), and the
// placement of gangs.
// - Filter (gate, home only): with a topology_key (a request's, or its
//   required_topology), only nodes that carry that label take part; the other
//   hosts of a multi-host slice need not. Explain's per-node account leaves
//   it out, as it always has.
// - Score, the placement of a gang (replicas > 1): replicas groups of count
//   units, each group on a distinct node, all of one pool; with a
//   topology_key all on nodes that share one value of that label. Within a
//   pool, the domain whose free units left over would be fewest wins (least
//   stranded capacity), then its name; within the domain, the nodes with the
//   fewest free units that fit. With a preferred_topology, a domain first
//   takes as few domains of that label as can hold the gang (a node without
//   the label is a domain of its own): the largest while none of the rest
//   holds what remains, then the smallest that does, the nodes with the
//   fewest free units in each; a domain needing fewer of them wins, then the
//   fewest left over on the nodes of those it takes. Pools are tried in best
//   fit's model order, and the same rule picks across them. O(nodes with
//   enough free units) per pool.
// - PostFilter (new requests): a gang with a topology_key that does not fit
//   now (or that its quota stops), when no domain of its level has replicas nodes that could ever hold
//   a group (count units of one of its pools, allocated or not, on a node its
//   selector matches), is refused (FAILED_PRECONDITION naming the level, with
//   the largest domain's name and size), not queued. Checked only then, as it
//   visits every node of the request's pools. O(nodes of its pools).
#ifndef ACCELSCHED_CORE_PLUGINS_TOPOLOGY_TOPOLOGY_H_
#define ACCELSCHED_CORE_PLUGINS_TOPOLOGY_TOPOLOGY_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"

namespace accelsched {

// For a gang with a topology_key: FAILED_PRECONDITION naming that level when
// no domain of it has spec.replicas nodes that could ever hold a group
// (spec.count units of one of its pools, allocated or not, on a node its
// selector matches), with the largest domain's name and size. OK for any
// other request. O(nodes of its pools).
absl::Status CheckGangDomains(const CapacityIndex& index, const NodeMap& nodes,
                              const MatchSpec& spec);

class TopologyPlugin final : public FilterPlugin,
                             public PlacementPlugin,
                             public PostFilterPlugin {
 public:
  static constexpr char kName[] = "topology";
  static constexpr char kNoDomain[] = "no topology domain label";
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }

  Kind kind() const override { return Kind::kGate; }
  bool Prepare(CycleState& cycle) const override;
  const char* Filter(const CycleState& cycle,
                     const NodeView& node) const override;
  bool in_account() const override { return false; }
  bool home_only() const override { return true; }

  bool Places(const CycleState& cycle) const override;
  std::optional<Groups> Place(const Session& session,
                              const CycleState& cycle) const override;
  // "no 4 nodes sharing one rack with 8 free nvidia-h100 devices each (5
  // free of 16)".
  std::string WhyNot(const Session& session,
                     const CycleState& cycle) const override;

  bool ForNewRequests() const override { return true; }
  PostFilterResult PostFilter(Session& session, CycleState& cycle,
                              const CycleFailure& failure) const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_TOPOLOGY_TOPOLOGY_H_
