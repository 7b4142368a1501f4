#include "core/plugins/best_fit/best_fit.h"

#include "core/framework/placement.h"

namespace accelsched {

std::unique_ptr<Plugin> BestFitPlugin::New() {
  return std::make_unique<BestFitPlugin>();
}

bool BestFitPlugin::Places(const CycleState& cycle) const {
  return OneGroupOfWholeUnits(cycle.spec());
}

std::optional<Groups> BestFitPlugin::Place(const Session& session,
                                           const CycleState& cycle) const {
  std::optional<UnitGroup> units = WalkByFree(
      session, cycle, PoolsInRuleOrder(*cycle.snapshot().index, cycle.spec()),
      /*most_free_first=*/false);
  if (!units.has_value()) return std::nullopt;
  return OneGroup(*std::move(units));
}

}  // namespace accelsched
