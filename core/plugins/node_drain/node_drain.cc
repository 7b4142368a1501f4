#include "core/plugins/node_drain/node_drain.h"

#include <string>

namespace accelsched {

std::unique_ptr<Plugin> NodeDrainPlugin::New() {
  return std::make_unique<NodeDrainPlugin>();
}

const char* NodeDrainPlugin::Filter(const CycleState& cycle,
                                    const NodeView& node) const {
  if (node.node == nullptr) return nullptr;
  // Made once: Labels' find takes a std::string, and this is the per-node
  // path.
  static const std::string* const key = new std::string(kDrainLabel);
  auto label = node.node->labels.find(*key);
  return label != node.node->labels.end() && label->second == "true" ? kDraining
                                                                     : nullptr;
}

}  // namespace accelsched
