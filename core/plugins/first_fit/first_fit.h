// The first_fit plugin (Score: a --packing policy): the first node, in name
// order, with room; the pools in best fit's model order. O(nodes of the
// pools) at worst.
#ifndef ACCELSCHED_CORE_PLUGINS_FIRST_FIT_FIRST_FIT_H_
#define ACCELSCHED_CORE_PLUGINS_FIRST_FIT_FIRST_FIT_H_

#include <memory>
#include <optional>

#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"

namespace accelsched {

class FirstFitPlugin final : public PlacementPlugin {
 public:
  static constexpr char kName[] = "first_fit";
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }
  bool Places(const CycleState& cycle) const override;
  std::optional<Groups> Place(const Session& session,
                              const CycleState& cycle) const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_FIRST_FIT_FIRST_FIT_H_
