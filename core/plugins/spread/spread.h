// The spread plugin (Score: a --packing policy): as best_fit, but the node
// with the most free units first (least allocated first).
#ifndef ACCELSCHED_CORE_PLUGINS_SPREAD_SPREAD_H_
#define ACCELSCHED_CORE_PLUGINS_SPREAD_SPREAD_H_

#include <memory>
#include <optional>

#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"

namespace accelsched {

class SpreadPlugin final : public PlacementPlugin {
 public:
  static constexpr char kName[] = "spread";
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }
  bool Places(const CycleState& cycle) const override;
  std::optional<Groups> Place(const Session& session,
                              const CycleState& cycle) const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_SPREAD_SPREAD_H_
