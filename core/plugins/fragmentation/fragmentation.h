// The fragmentation plugin (Score: the default --packing policy): a request of
// whole units for one node goes where it adds least to the expected
// fragmentation under the recent mix of requests (FGD, Weng et al., USENIX
// ATC'23: the free capacity the mix's requests could not use where it lies;
// ScorePlacement, core/packing/placement_score.h), plus the weighted scores
// of the profile's Score plugins (the lease term), lowest first; ties in
// best fit's order.
//
// It weighs at most kCandidatesPerCount eligible nodes per free count and
// pool, and kMaxScored in all, so that a decision stays bounded: free counts
// are taken in the order of the change they would make on a node limited by
// units alone (which the shapes give without visiting a node), and a count is
// visited only while the lower bound of that change on any node
// (ChangeOfTaking) is below the best score found: the Score plugins' terms
// are never negative, so no node of that count could win (nodes whose CPU or
// memory is over-committed, available below 0, aside). With a pod's CPU and a
// mix that asks CPU, the first node from the pod's CPU (best fit's) and the
// first from the pod's CPU plus the most a shape of the mix asks (so that a
// node left with CPU for every shape is weighed). When none of the nodes
// weighed has its units eligible (a multi-host slice's other hosts), best
// fit's walk.
#ifndef ACCELSCHED_CORE_PLUGINS_FRAGMENTATION_FRAGMENTATION_H_
#define ACCELSCHED_CORE_PLUGINS_FRAGMENTATION_FRAGMENTATION_H_

#include <memory>
#include <optional>
#include <vector>

#include "core/catalog/capacity_index.h"
#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"
#include "core/packing/request_mix.h"

namespace accelsched {

// The share (0 to 1) of `pool`'s free units that a request drawn from
// `shapes` could not use where they lie: Fragmentation summed over the pool's
// nodes with free units (their available CPU and memory as the index keeps
// them), over those units. 0 when none is free. O(nodes with free units x
// shapes). What the fragmentation metric reports.
double FragmentationRatio(const CapacityIndex::Pool& pool,
                          const std::vector<RequestShape>& shapes);

class FragmentationPlugin final : public PlacementPlugin {
 public:
  static constexpr char kName[] = "fragmentation";
  static constexpr int kCandidatesPerCount = 2;
  static constexpr size_t kMaxScored = 4;
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }
  bool Places(const CycleState& cycle) const override;
  std::optional<Groups> Place(const Session& session,
                              const CycleState& cycle) const override;
  // The candidates weighed, best first (Place takes the first whose units
  // are eligible). A node whose fragmentation change alone was no better than
  // the best found so far is not kept (the other scores only add).
  std::vector<RankedPlacement> Rank(const Session& session,
                                    const CycleState& cycle) const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_FRAGMENTATION_FRAGMENTATION_H_
