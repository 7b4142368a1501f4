#include "core/plugins/schedulable/schedulable.h"

namespace accelsched {

std::unique_ptr<Plugin> SchedulablePlugin::New() {
  return std::make_unique<SchedulablePlugin>();
}

const char* SchedulablePlugin::Filter(const CycleState& cycle,
                                      const NodeView& view) const {
  const Node* node = view.node;
  if (node == nullptr) return kStale;  // a host that has not registered yet
  if (!node->schedulable) return kCordoned;
  const Snapshot& snap = cycle.snapshot();
  if (snap.heartbeat_timeout > absl::ZeroDuration() &&
      snap.now - node->last_heartbeat > snap.heartbeat_timeout) {
    return kStale;
  }
  return nullptr;
}

}  // namespace accelsched
