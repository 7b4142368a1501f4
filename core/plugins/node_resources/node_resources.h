// The node_resources plugin: a request's pod_resources (the CPU, memory and
// pod slot each group's pod needs besides its accelerators) must fit in what
// the node has available (allocatable less what live allocations hold), on
// every node a unit spans; a node whose resources are not accounted, or a
// request without pod_resources, is not limited.
// - PreFilter (new requests): FAILED_PRECONDITION when every node of the
//   request's pools is accounted and none offers both the CPU and the memory
//   in allocatable (the message names the field and the most a node offers).
//   A node's pod limit is not considered.
// - Filter (room): the first resource short ("insufficient cpu_milli"),
//   counting what a PostFilter action would free there; it states the pod's
//   CPU and memory as the least room a node must have, so that the index's
//   order skips nodes short of CPU (a lower bound) and those short of memory
//   (its per-subtree largest memory).
#ifndef ACCELSCHED_CORE_PLUGINS_NODE_RESOURCES_NODE_RESOURCES_H_
#define ACCELSCHED_CORE_PLUGINS_NODE_RESOURCES_NODE_RESOURCES_H_

#include <memory>
#include <optional>

#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"

namespace accelsched {

class NodeResourcesPlugin final : public PreFilterPlugin, public FilterPlugin {
 public:
  static constexpr char kName[] = "node_resources";
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }
  bool ForNewRequests() const override { return true; }
  Verdict PreFilter(Session& session, CycleState& cycle) const override;

  Kind kind() const override { return Kind::kRoom; }
  bool Prepare(CycleState& cycle) const override;
  const char* Filter(const CycleState& cycle,
                     const NodeView& node) const override;
  // "insufficient cpu_milli" with "1500 of 8000 cpu_milli free, the request
  // needs 4000".
  std::optional<NodeReason> Describe(const CycleState& cycle,
                                     const NodeView& node) const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_NODE_RESOURCES_NODE_RESOURCES_H_
