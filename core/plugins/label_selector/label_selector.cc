#include "core/plugins/label_selector/label_selector.h"

namespace accelsched {

std::unique_ptr<Plugin> LabelSelectorPlugin::New() {
  return std::make_unique<LabelSelectorPlugin>();
}

bool LabelSelectorPlugin::Prepare(CycleState& cycle) const {
  return !cycle.spec().selector.empty();
}

const char* LabelSelectorPlugin::Filter(const CycleState& cycle,
                                        const NodeView& node) const {
  if (node.node == nullptr || !cycle.spec().selector.Matches(node.node->labels)) {
    return kMismatch;
  }
  return nullptr;
}

}  // namespace accelsched
