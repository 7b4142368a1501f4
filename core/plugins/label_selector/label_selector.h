// The label_selector plugin (Filter, gate): a node takes part only when its
// labels match the request's node_selector (every key=value present). Asked
// before schedulable, so that a node both mismatched and cordoned is counted
// as mismatched in Explain's summary.
#ifndef ACCELSCHED_CORE_PLUGINS_LABEL_SELECTOR_LABEL_SELECTOR_H_
#define ACCELSCHED_CORE_PLUGINS_LABEL_SELECTOR_LABEL_SELECTOR_H_

#include <memory>

#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"

namespace accelsched {

class LabelSelectorPlugin final : public FilterPlugin {
 public:
  static constexpr char kName[] = "label_selector";
  static constexpr char kMismatch[] = "node_selector mismatch";
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }
  Kind kind() const override { return Kind::kGate; }
  // Only for a request with a node_selector.
  bool Prepare(CycleState& cycle) const override;
  // kMismatch for a node (or an unregistered host) whose labels do not
  // match, else nullptr.
  const char* Filter(const CycleState& cycle,
                     const NodeView& node) const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_LABEL_SELECTOR_LABEL_SELECTOR_H_
