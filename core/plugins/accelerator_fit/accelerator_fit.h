// The accelerator_fit plugin (PreFilter, new requests): a request no node
// could ever hold, whatever is released, is refused (FAILED_PRECONDITION),
// not queued: when no node has any unit of its pools ("no node has any
// nvidia-h100 device"), when no node has `count` units of one of them, or,
// for a gang, when fewer than `replicas` nodes of one pool could hold a
// group. O(pools x log nodes). Whether units are free now is the
// placement's to find (the index walks only homes with enough free).
#ifndef ACCELSCHED_CORE_PLUGINS_ACCELERATOR_FIT_ACCELERATOR_FIT_H_
#define ACCELSCHED_CORE_PLUGINS_ACCELERATOR_FIT_ACCELERATOR_FIT_H_

#include <memory>

#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"

namespace accelsched {

class AcceleratorFitPlugin final : public PreFilterPlugin {
 public:
  static constexpr char kName[] = "accelerator_fit";
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }
  bool ForNewRequests() const override { return true; }
  Verdict PreFilter(Session& session, CycleState& cycle) const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_ACCELERATOR_FIT_ACCELERATOR_FIT_H_
