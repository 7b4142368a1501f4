// Matching a request to free units: best fit over the capacity index, and
// Explain's per-node account of why a node cannot serve. Pure functions of
// their inputs.
//
// The rule, for one model or several (a set of acceptable models, or any model
// of a device class): best fit over every eligible (model, node) pair. The
// pair whose node has the fewest free units of that model that still fit
// wins; ties go to the model with the most free units in the cluster, so that
// scarce models stay free for the requests that name them, then to the model's
// name, then to the node with the least available CPU (nodes whose CPU is not
// accounted last), so that CPU-rich nodes stay for CPU-hungry requests, then
// to the node's name. bench/replay_bench measures it against first fit.
//
// A node is eligible only when its available CPU, memory and pods (the
// capacity index's NodeAccount) hold spec.pod_resources; a node that is not
// accounted, or a request without pod_resources, is not limited by them.
#ifndef ACCELSCHED_CORE_MATCHING_MATCHER_H_
#define ACCELSCHED_CORE_MATCHING_MATCHER_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/base/labels.h"
#include "core/catalog/capacity_index.h"
#include "core/model/catalog_model.h"
#include "core/model/gpu_share.h"
#include "core/model/node_resources.h"
#include "core/model/request_spec.h"
#include "core/packing/packing_policy.h"
#include "core/packing/placement_score.h"
#include "core/packing/request_mix.h"

namespace accelsched {

// A request as the matcher reads it: its spec (what quota may narrow the
// models of), with its node_selector parsed.
struct MatchSpec : RequestSpec {
  LabelSelector selector;

  // `spec` with its node_selector parsed: what the matcher reads of a
  // request.
  static MatchSpec Of(const RequestSpec& spec);
  // A request for exactly one pool's units.
  static MatchSpec ForPool(const PoolKey& pool, int count,
                           Labels node_selector = {});
};

// A node held for a queued request (conservative backfill): from `start`,
// its units of one pool go to `holder` or to a request whose lease ends by
// then, so that nothing admitted ahead of the holder delays it.
struct Reservation {
  absl::Time start;
  std::string holder;  // allocation id
  // Held for a preemptor, on its victims' nodes (Kubernetes' nominated
  // node): kept from pass to pass until it is admitted, against requests of
  // its priority or lower only.
  bool nominated = false;
  int priority = 0;
  // Held for a MIG re-layout planned ahead (ReservationPlanner::HoldPools):
  // against requests of its priority or lower only, as a nominated hold.
  bool ahead = false;

  // Whether a request of `requester_priority` (not the holder) may take what
  // this holds regardless: a nominated or planned-ahead hold yields to a
  // higher priority.
  bool YieldsTo(int requester_priority) const {
    return (nominated || ahead) && requester_priority > priority;
  }
};
// pool -> node -> reservation.
using Reservations =
    std::map<PoolKey, absl::flat_hash_map<std::string, Reservation>>;

// How Match chooses among the nodes that could take a request (the server's
// --packing flag).
struct PackingRules {
  Packing policy = Packing::kBestFit;
  // For kFragmentation: the recent mix of requests (null: none, so that
  // fragmentation weighs nothing) and when allocations' units come free
  // (null: no lease term). Not owned.
  const RequestMix* mix = nullptr;
  const LeaseView* leases = nullptr;
  // kFragmentation scores at most this many eligible nodes per free count
  // and pool, in best-fit order, and this many in all, so that a decision
  // stays bounded.
  static constexpr int kCandidatesPerCount = 2;
  static constexpr size_t kMaxScored = 4;
};

// Counts `spec` in `mix` as of `now`: each of its groups (spec.replicas) as
// one shape of spec.count units and its pod, for each model it accepts
// (weight 1 / their number) or for any model. Shares are not counted: they
// are placed per GPU, not by units.
void CountInMix(const MatchSpec& spec, absl::Time now, RequestMix& mix);

// What makes a node eligible beyond its free units.
struct EligibilityRules {
  absl::Time now;
  // Nodes whose last heartbeat is older get nothing; zero disables the check.
  absl::Duration heartbeat_timeout = absl::ZeroDuration();
  // Reserved nodes are left out unless the request is their holder or its
  // lease ends (at `ends_at`) by the reservation's start.
  const Reservations* reservations = nullptr;
  absl::string_view requester;  // the request's allocation id, if it has one
  absl::Time ends_at = absl::InfiniteFuture();
  int priority = 0;  // the request's
  PackingRules packing;
};

// Why `node` cannot take part in a match for `spec` ("node_selector
// mismatch", "cordoned", "stale heartbeat"; a node not registered is stale),
// or nullptr when it can. Reservations are not considered.
const char* Ineligible(const Node* node, const MatchSpec& spec,
                       const EligibilityRules& rules);

// FAILED_PRECONDITION when no node could ever hold `spec.count` units of one
// of the request's pools, or fewer than `spec.replicas` nodes of one pool
// could (it is not a matter of waiting for releases), or, for a share, when
// no unit of its pools takes shares (naming `share`) or none has the memory
// it asks (naming `share.memory_bytes`), or, with
// `spec.pod_resources`, when every node of the request's pools is accounted
// and none offers both its CPU and its memory in allocatable: the message
// names the field and the most a node offers. O(pools x log nodes). A
// node's pod limit is not considered.
absl::Status CheckSatisfiable(const CapacityIndex& index,
                              const MatchSpec& spec);

// The units to allocate, all of one pool and on one node (a TPU slice: on its
// hosts), chosen by rules.packing.policy:
// - kBestFit: the rule above;
// - kFragmentation: the eligible (pool, node) pair with the lowest
//   ScorePlacement (core/packing/placement_score.h) among at most
//   PackingRules::kCandidatesPerCount per free count and pool, taken in the
//   rule's order, which also breaks ties (RankPlacements); when none of
//   them has its units eligible (a multi-host slice's other hosts), best
//   fit;
// - kFirstFit: the first eligible node in name order, pools in the rule's
//   model order;
// - kSpread: as the rule, but the most free units first.
// Within the node, the GPUs with the fewest free slices first, so that large
// requests still fit later; whole devices of a node that reports links, the
// best-linked set of its first kMaxLinkedCandidates eligible free ones
// (ChooseLinkedSet: at most kMaxExhaustiveSets subsets weighed, each
// O(count)). nullopt when nothing fits now. Visits only pools
// of the request and, in each, homes in free-count order: O(models x log
// nodes) plus the homes skipped as ineligible (each O(log nodes) to reach
// when the request has pod_resources); nodes short of CPU are skipped by the
// index's order (a lower bound), those short of memory by its per-subtree
// largest memory (each skipped run costs O(log nodes)); those short only of
// pods are visited. kFragmentation visits at most kCandidatesPerCount eligible
// nodes per free count and pool more, each O(units on the node + shapes);
// kFirstFit visits nodes in name order, O(nodes of the pools) at worst.
std::optional<std::vector<const Unit*>> Match(const CapacityIndex& index,
                                              const NodeMap& nodes,
                                              const MatchSpec& spec,
                                              const EligibilityRules& rules);

// For a share (spec.share): the GPU to put it on, best fit per GPU: the one
// left with the least free compute that still holds the share's compute and
// the memory it takes of that GPU (ShareMemory), on an eligible node (as
// Match: Ineligible, pod_resources, reservations of its pool); ties to the
// model order, then the unit key. Only units that take shares
// (Unit::shareable) and hold no share of another group (GpuShare::group) are
// considered. nullptr when none fits now. O(models x
// log GPUs) plus the GPUs skipped as ineligible or short of memory for a
// share of a fraction of memory (those short of a given memory_bytes are
// skipped by the index, O(log GPUs) per run).
const Unit* MatchShare(const CapacityIndex& index, const NodeMap& nodes,
                       const MatchSpec& spec, const EligibilityRules& rules);

// For a gang (spec.replicas groups of spec.count units, each group on a
// distinct node, all of one pool; with spec.topology_key all on nodes that
// share one value of that label): the groups, or nullopt when the whole gang
// does not fit now. Within a pool, the domain whose free units left over
// would be fewest wins (least stranded capacity), then its name; within the
// domain, the nodes with the fewest free units that fit. With
// spec.preferred_topology, a domain first takes as few domains of that label
// as can hold the gang (a node without the label is a domain of its own):
// the largest while none of the rest holds what remains, then the smallest
// that does (Kueue's TAS), the nodes with the fewest free units in each; a
// domain needing fewer of them wins, then the fewest left over on the nodes
// of those it takes. Pools are tried as Match orders them, and the same
// rule picks across them ("left over": free units on the nodes that could
// take a group, after the gang). O(nodes with enough free units) per pool.
std::optional<std::vector<std::vector<const Unit*>>> MatchGang(
    const CapacityIndex& index, const NodeMap& nodes, const MatchSpec& spec,
    const EligibilityRules& rules);

// For a gang with spec.topology_key: FAILED_PRECONDITION naming that level
// when no domain of it has spec.replicas nodes that could ever hold a group
// (spec.count units of one of its pools, allocated or not, on a node its
// selector matches), with the largest domain's name and size. OK for any
// other request. O(nodes of its pools).
absl::Status CheckGangDomains(const CapacityIndex& index, const NodeMap& nodes,
                              const MatchSpec& spec);

// A candidate placement as kFragmentation weighs it.
struct RankedPlacement {
  PoolKey pool;
  std::string node;
  PlacementScore score;
};

// The candidates kFragmentation keeps for a request of whole units
// (spec.replicas 1, no share), best first (Match takes the first whose
// units are eligible), whatever rules.packing.policy says: what Explain
// shows. A node weighed whose fragmentation change alone was no better than
// the best found so far is not kept (the lease term only adds).
std::vector<RankedPlacement> RankPlacements(const CapacityIndex& index,
                                            const NodeMap& nodes,
                                            const MatchSpec& spec,
                                            const EligibilityRules& rules);

// The share (0 to 1) of `pool`'s free units that a request drawn from
// `shapes` could not use where they lie: Fragmentation summed over the
// pool's nodes with free units (their available CPU and memory as the index
// keeps them), over those units. 0 when none is free. O(nodes with free
// units x shapes).
double FragmentationRatio(const CapacityIndex::Pool& pool,
                          const std::vector<RequestShape>& shapes);

struct NodeVerdict {
  std::string node;
  std::vector<std::string> reasons;  // empty: the node can serve
};

struct Explanation {
  std::vector<NodeVerdict> nodes;  // every node that cannot serve, by name
  int available = 0;               // nodes that can serve
  // "0/12 nodes available: 7 no free 1g.10gb slice, 5 node_selector mismatch"
  std::string summary;
};

Explanation ExplainNodes(const CapacityIndex& index, const NodeMap& nodes,
                         const MatchSpec& spec, const EligibilityRules& rules);

// For Explain: which GPUs `group` (one group of a match of whole devices,
// not a share, on one node, not yet allocated) takes and why, when links
// chose them ("GPUs
// 0, 2 of n1 (all NVLinked, 8 NVLinks among them): the best-linked 2 of its
// 6 free GPUs"); empty when they did not (no links among the node's free
// GPUs, or as many asked as weighed). O(free units of its node + their
// links).
std::string DescribeLinkChoice(const CapacityIndex& index, const NodeMap& nodes,
                               const std::vector<const Unit*>& group);

// A human name for a pool's unit: "nvidia-tesla-t4 device", "1g.10gb slice",
// "tpu-v5p-slice 2x2x2 slice".
std::string UnitName(const PoolKey& pool);

// A human name for what a request asks for: as UnitName for one model;
// "nvidia-tesla-t4 or nvidia-l4 device", "nvidia-tesla-a100 or
// nvidia-a100-80gb 1g.10gb slice" for several; "whole NVIDIA_GPU device" for
// any.
std::string RequestUnitName(DeviceClass device_class,
                            const std::vector<std::string>& models,
                            absl::string_view partition);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_MATCHING_MATCHER_H_
