#include "core/plugins/first_fit/first_fit.h"

#include "core/framework/placement.h"

namespace accelsched {

std::unique_ptr<Plugin> FirstFitPlugin::New() {
  return std::make_unique<FirstFitPlugin>();
}

bool FirstFitPlugin::Places(const CycleState& cycle) const {
  return OneGroupOfWholeUnits(cycle.spec());
}

std::optional<Groups> FirstFitPlugin::Place(const Session& session,
                                            const CycleState& cycle) const {
  const int count = cycle.spec().count;
  for (const PoolCandidate& c :
       PoolsInRuleOrder(*cycle.snapshot().index, cycle.spec())) {
    for (const auto& [name, home] : c.pool->homes) {
      if (home.free < count) continue;
      if (auto units = UnitsIn(session, cycle, c, name)) {
        return OneGroup(*std::move(units));
      }
    }
  }
  return std::nullopt;
}

}  // namespace accelsched
