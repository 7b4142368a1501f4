// The best_fit plugin (Score: a --packing policy): a request of whole units
// for one node goes to the (model, node) pair whose node has the fewest free
// units of that model that still fit; ties go to the model with the most
// free units in the cluster (so that scarce models stay free for the
// requests that name them), then to the model's name, then to the node with
// the least available CPU (nodes whose CPU is not accounted last), so that
// CPU-rich nodes stay for CPU-hungry requests, then to the node's name.
// bench/replay_bench measures it against first fit. O(models x log nodes)
// plus the homes the filters refuse (WalkByFree).
#ifndef ACCELSCHED_CORE_PLUGINS_BEST_FIT_BEST_FIT_H_
#define ACCELSCHED_CORE_PLUGINS_BEST_FIT_BEST_FIT_H_

#include <memory>
#include <optional>

#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"

namespace accelsched {

class BestFitPlugin final : public PlacementPlugin {
 public:
  static constexpr char kName[] = "best_fit";
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }
  bool Places(const CycleState& cycle) const override;
  std::optional<Groups> Place(const Session& session,
                              const CycleState& cycle) const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_BEST_FIT_BEST_FIT_H_
