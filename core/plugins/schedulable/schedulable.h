// The schedulable plugin (Filter, gate): a node takes new work only while it
// is schedulable (not cordoned, SetNodeSchedulable) and heard from: its last
// heartbeat (or registration) is no older than --heartbeat_timeout. A host
// that has not registered is stale. A device's health is the index's: an
// unhealthy unit is not free, so no placement takes it.
#ifndef ACCELSCHED_CORE_PLUGINS_SCHEDULABLE_SCHEDULABLE_H_
#define ACCELSCHED_CORE_PLUGINS_SCHEDULABLE_SCHEDULABLE_H_

#include <memory>

#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"

namespace accelsched {

class SchedulablePlugin final : public FilterPlugin {
 public:
  static constexpr char kName[] = "schedulable";
  static constexpr char kCordoned[] = "cordoned";
  static constexpr char kStale[] = "stale heartbeat";
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }
  Kind kind() const override { return Kind::kGate; }
  bool Prepare(CycleState& cycle) const override { return true; }
  // kStale for a node not registered or silent past the timeout, else
  // kCordoned for a cordoned one, else nullptr.
  const char* Filter(const CycleState& cycle,
                     const NodeView& node) const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_SCHEDULABLE_SCHEDULABLE_H_
