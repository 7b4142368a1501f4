// Placements on a bare capacity index (no allocation book, no holds) with the
// default profile's plugins for a --packing policy: exactly the Filter and
// Score steps an Allocate runs, for the benchmarks that replay streams on an
// index of their own and for the placement plugins' tests. Not thread-safe;
// the index, nodes, mix and leases are not owned and must outlive it.
#ifndef ACCELSCHED_CORE_PLUGINS_INDEX_PLACER_H_
#define ACCELSCHED_CORE_PLUGINS_INDEX_PLACER_H_

#include <memory>
#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "core/catalog/capacity_index.h"
#include "core/framework/framework.h"
#include "core/framework/holds.h"
#include "core/framework/session.h"
#include "core/framework/snapshot.h"
#include "core/framework/statement.h"
#include "core/matching/match_spec.h"
#include "core/model/catalog_model.h"
#include "core/packing/packing_policy.h"
#include "core/packing/placement_score.h"
#include "core/packing/request_mix.h"

namespace accelsched {

class IndexPlacer {
 public:
  struct Options {
    Packing packing = Packing::kBestFit;
    absl::Duration heartbeat_timeout = absl::ZeroDuration();
    // The recent mix (null: none) and the leases (null: no lease term).
    const RequestMix* mix = nullptr;
    const LeaseView* leases = nullptr;
  };
  IndexPlacer(const CapacityIndex* index, const NodeMap* nodes,
              Options options);
  IndexPlacer(const IndexPlacer&) = delete;
  IndexPlacer& operator=(const IndexPlacer&) = delete;

  // The units `spec` would take now, a group per replica (a share's GPU in
  // one group), as of `now` for a lease that ends at `ends_at`
  // (InfiniteFuture: not known); nullopt when nothing fits. Changes nothing.
  std::optional<Groups> Place(const MatchSpec& spec, absl::Time now,
                              absl::Time ends_at = absl::InfiniteFuture());
  // Place's one group, for a request that is not a gang.
  std::optional<UnitGroup> PlaceOne(
      const MatchSpec& spec, absl::Time now,
      absl::Time ends_at = absl::InfiniteFuture());
  // The fragmentation policy's candidates, best first (empty for another
  // policy).
  std::vector<RankedPlacement> Rank(
      const MatchSpec& spec, absl::Time now,
      absl::Time ends_at = absl::InfiniteFuture());

 private:
  std::unique_ptr<const Framework> framework_;
  Snapshot snapshot_;
  Holds holds_;
  DryStatement statement_;
  Session session_;
  Allocation request_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_INDEX_PLACER_H_
