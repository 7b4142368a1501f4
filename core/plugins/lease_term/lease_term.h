// The lease_term plugin (Score, beside fragmentation): how badly the request's
// expected end (CycleEnds::expected_end: its given or learned duration, else
// its lease) matches when the node's held units of the pool come free
// (LeaseMismatch, core/packing/placement_score.h): a node whose allocations
// end together comes free whole; one that mixes a five-minute job with a
// three-day one stays partly taken for three days. In units of the pool, so
// the profile's weight (kLeaseWeight, tuned on bench/packing_bench's
// synthetic stream) weighs it against fragmentation directly. 0 without
// leases (a bare index) or for a request whose end is not known.
#ifndef ACCELSCHED_CORE_PLUGINS_LEASE_TERM_LEASE_TERM_H_
#define ACCELSCHED_CORE_PLUGINS_LEASE_TERM_LEASE_TERM_H_

#include <memory>

#include "core/catalog/capacity_index.h"
#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"
#include "core/packing/placement_score.h"

namespace accelsched {

// How many of `home`'s units are held whole, and when the last of them
// is expected to come free as of `now`: O(allocations holding units there).
NodeLeases LeasesOf(const CapacityIndex::Home& home, const LeaseView& view,
                    absl::Time now);

class LeaseTermPlugin final : public ScorePlugin {
 public:
  static constexpr char kName[] = "lease_term";
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }
  double Score(const CycleState& cycle,
               const ScoredNode& candidate) const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_LEASE_TERM_LEASE_TERM_H_
