// The node_drain plugin (Filter, gate): a node labelled
// accelsched.io/drain=true takes no new work, whatever it asks; what runs
// there keeps running until released. The label is what an operator, or the
// tooling that writes a node agent's labels file, sets to drain a node
// without the admin token SetNodeSchedulable needs; Explain counts such a
// node as "draining".
#ifndef ACCELSCHED_CORE_PLUGINS_NODE_DRAIN_NODE_DRAIN_H_
#define ACCELSCHED_CORE_PLUGINS_NODE_DRAIN_NODE_DRAIN_H_

#include <memory>

#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"

namespace accelsched {

inline constexpr char kDrainLabel[] = "accelsched.io/drain";

class NodeDrainPlugin final : public FilterPlugin {
 public:
  static constexpr char kName[] = "node_drain";
  static constexpr char kDraining[] = "draining";
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }
  Kind kind() const override { return Kind::kGate; }
  bool Prepare(CycleState& cycle) const override { return true; }
  // kDraining for a node labelled kDrainLabel=true, else nullptr (an
  // unregistered host is the schedulable plugin's).
  const char* Filter(const CycleState& cycle,
                     const NodeView& node) const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_NODE_DRAIN_NODE_DRAIN_H_
