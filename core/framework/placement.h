// What the placement plugins share: the request's pools in the capacity
// index, a node's free units in best-fit order, the units a group takes on a
// node (asking the cycle's filters and unit plugin), and the walk of the
// index by free count that best fit and spread take, and that fragmentation
// falls back to. Pure functions of the cycle: they change nothing.
#ifndef ACCELSCHED_CORE_FRAMEWORK_PLACEMENT_H_
#define ACCELSCHED_CORE_FRAMEWORK_PLACEMENT_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/catalog/capacity_index.h"
#include "core/framework/cycle_state.h"
#include "core/framework/session.h"
#include "core/model/unit.h"

namespace accelsched {

// One of a request's pools, as the index has it.
struct PoolCandidate {
  const PoolKey* key;
  const CapacityIndex::Pool* pool;
};
// A request names a few models at most: kept inline, as the per-request
// path allocates nothing for them.
using PoolCandidates = absl::InlinedVector<PoolCandidate, 4>;

// The pools that can serve `spec`, in model order: its models' that the
// index has, or, when it names none, every pool of its class and partition.
PoolCandidates CandidatePools(const CapacityIndex& index,
                              const RequestSpec& spec);

// CandidatePools in the tie order between models of best fit: most free
// units first, model order kept for equal counts (so that scarce models stay
// free for the requests that name them).
PoolCandidates PoolsInRuleOrder(const CapacityIndex& index,
                                const RequestSpec& spec);

// The most free units any home of `candidates` has.
int MostFree(const PoolCandidates& candidates);

// Free units of a home, best-fit order: groups (GPUs) with the fewest free
// units first, then by group and order.
std::vector<const Unit*> FreeUnitsBestFit(const CapacityIndex& index,
                                          const CapacityIndex::Home& home);

// Whether every node `unit` spans passes the cycle's filters of every host
// (FilterChain::HostPasses); its home's own filters are the caller's.
bool HostsEligible(const CycleState& cycle, const Unit& unit);

// `spec.count` free units of `candidate`'s pool on `home` for the cycle's
// request, or nullopt: none when the home fails the cycle's filters;
// otherwise of its free units in best-fit order those whose hosts pass, the
// first `count`, or, where the profile's unit plugin weighs more
// (UnitScorePlugin::Weighs), the ones it chooses among them.
std::optional<UnitGroup> UnitsIn(const Session& session,
                                 const CycleState& cycle,
                                 const PoolCandidate& candidate,
                                 const std::string& home);

// Best fit's walk (`most_free_first` false) or spread's (true): pairs of
// (pool, node) in the order fewest free units that fit (spread: most), then
// the pools' rule order, then the node's available CPU and name (the index's
// order within one free count), from the first node with the CPU the cycle's
// filters require, past every node short of the memory they require; the
// first whose UnitsIn serves. O(models x log nodes) plus the homes skipped as
// ineligible.
std::optional<UnitGroup> WalkByFree(const Session& session,
                                    const CycleState& cycle,
                                    const PoolCandidates& candidates,
                                    bool most_free_first);

// The placement of one group (a request that is not a gang), as a
// placement plugin returns it: made in place, without a copy (an initializer
// list would copy it) or a move of the groups.
inline std::optional<Groups> OneGroup(UnitGroup units) {
  std::optional<Groups> groups(std::in_place);
  groups->push_back(std::move(units));
  return groups;
}

// Whether `spec` asks whole units on one node (not a gang, not a share): what
// the packing policies place.
inline bool OneGroupOfWholeUnits(const RequestSpec& spec) {
  return spec.replicas <= 1 && !spec.share.has_value();
}

// Why a request of whole units for one node does not fit now, cheaply: "no
// node has 2 free nvidia-h100 devices (5 free of 16)", with the room its pod
// needs when it has pod_resources.
std::string WholeUnitsWhyNot(const CycleState& cycle);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_FRAMEWORK_PLACEMENT_H_
