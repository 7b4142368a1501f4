#include "core/plugins/node_drain/node_drain.h"

namespace accelsched {

std::unique_ptr<Plugin> NodeDrainPlugin::New() {
  return std::make_unique<NodeDrainPlugin>();
}

const char* NodeDrainPlugin::Filter(const CycleState& cycle,
                                    const NodeView& node) const {
  if (node.node == nullptr) return nullptr;
  auto label = node.node->labels.find(kDrainLabel);
  return label != node.node->labels.end() && label->second == "true"
             ? kDraining
             : nullptr;
}

}  // namespace accelsched
