#include "core/plugins/lease_term/lease_term.h"

#include <algorithm>

namespace accelsched {

NodeLeases LeasesOf(const CapacityIndex::Home& home, const LeaseView& view,
                    absl::Time now) {
  NodeLeases leases;
  for (const auto& [allocation, units] : home.holders) {
    leases.held += units;
    leases.busy_until =
        std::max(leases.busy_until, view.FreeAt(allocation, now));
  }
  return leases;
}

std::unique_ptr<Plugin> LeaseTermPlugin::New() {
  return std::make_unique<LeaseTermPlugin>();
}

double LeaseTermPlugin::Score(const CycleState& cycle,
                              const ScoredNode& candidate) const {
  const Snapshot& snap = cycle.snapshot();
  if (snap.leases == nullptr) return 0;
  return LeaseMismatch(LeasesOf(*candidate.home, *snap.leases, snap.now),
                       static_cast<int>(candidate.home->units.size()),
                       candidate.count, snap.now, cycle.ends().expected_end());
}

}  // namespace accelsched
