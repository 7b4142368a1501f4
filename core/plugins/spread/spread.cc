#include "core/plugins/spread/spread.h"

#include "core/framework/placement.h"

namespace accelsched {

std::unique_ptr<Plugin> SpreadPlugin::New() {
  return std::make_unique<SpreadPlugin>();
}

bool SpreadPlugin::Places(const CycleState& cycle) const {
  return OneGroupOfWholeUnits(cycle.spec());
}

std::optional<Groups> SpreadPlugin::Place(const Session& session,
                                          const CycleState& cycle) const {
  std::optional<UnitGroup> units = WalkByFree(
      session, cycle, PoolsInRuleOrder(*cycle.snapshot().index, cycle.spec()),
      /*most_free_first=*/true);
  if (!units.has_value()) return std::nullopt;
  return OneGroup(*std::move(units));
}

}  // namespace accelsched
