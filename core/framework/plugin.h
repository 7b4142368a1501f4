// The scheduling framework's extension points and the interface a plugin
// implements at each (after Kubernetes' pkg/scheduler/framework/interface.go:
// QueueSort, PreFilter, Filter, Score, Reserve and PostFilter; and
// KAI-Scheduler's actions, which PostFilter plugins are here). A plugin is
// one policy: a class implementing the interfaces of the points it acts at,
// built once per profile (core/framework/registry.h) and then read only, so
// that concurrent readers (Explain) may run cycles; what it keeps for one
// pass lives in the session (Session::StateOf), what it keeps for one
// request in the cycle state (CycleState::data).
//
// Calls on the per-node path (Filter, Score, UnitScore) allocate nothing and
// are made only for the nodes a placement visits: the placement walks the
// capacity index in its own order and stops at the first node that serves
// (core/framework/placement.h), so a batch over all candidates would do more
// work, not less.
#ifndef ACCELSCHED_CORE_FRAMEWORK_PLUGIN_H_
#define ACCELSCHED_CORE_FRAMEWORK_PLUGIN_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/catalog/capacity_index.h"
#include "core/framework/holds.h"
#include "core/model/catalog_model.h"
#include "core/model/node_resources.h"
#include "core/model/unit.h"
#include "core/packing/placement_score.h"

namespace accelsched {

class CycleState;
class Session;
struct Snapshot;

// The units one replica takes. A share's one GPU, and the one group of most
// requests, are held inline: a cycle that places one allocates nothing for
// them.
using UnitGroup = absl::InlinedVector<const Unit*, 1>;
// A group of units per replica (one for a request that is not a gang); for
// a share, one group of the one GPU it goes on.
using Groups = absl::InlinedVector<UnitGroup, 1>;

enum class ExtensionPoint {
  kQueueSort,
  kPreFilter,
  kFilter,
  kScore,
  kReserve,
  kPostFilter,
};
// "QueueSort", "PreFilter", "Filter", "Score", "Reserve", "PostFilter":
// ExplainResponse's CycleStep.extension_point.
absl::string_view ExtensionPointName(ExtensionPoint point);

class Plugin {
 public:
  virtual ~Plugin() = default;
  // The name it is registered and profiled under ("node_resources").
  virtual absl::string_view name() const = 0;
};

// What a PreFilter plugin says of a request (Kubernetes' framework.Status).
struct Verdict {
  enum class Code {
    kSuccess,
    // Not now: the request may wait, and PostFilter plugins may make room
    // (RESOURCE_EXHAUSTED for one that does not queue).
    kUnschedulable,
    // Never, as the cluster is (FAILED_PRECONDITION), unless a PostFilter
    // plugin may some day make room (PostFilterPlugin::MayResolve).
    kUnresolvable,
  };
  Code code = Code::kSuccess;
  std::string reason;
  // For Explain's step: what the plugin did when it let the request through
  // ("narrowed to nvidia-l4"); "" for nothing worth a word.
  std::string detail;

  bool ok() const { return code == Code::kSuccess; }
  static Verdict Success(std::string detail = "") {
    return {Code::kSuccess, "", std::move(detail)};
  }
  static Verdict Unschedulable(std::string reason) {
    return {Code::kUnschedulable, std::move(reason), ""};
  }
  static Verdict Unresolvable(std::string reason) {
    return {Code::kUnresolvable, std::move(reason), ""};
  }
};

// QueueSort: within a priority, which tenant's requests go first (then the
// oldest request). One per profile.
class QueueSortPlugin : public virtual Plugin {
 public:
  // `tenant`'s rank now: the lower goes first. Asked again after each
  // admission in a pass (Reserve may tell the plugin what changed).
  virtual double TenantRank(Session& session,
                            const std::string& tenant) const = 0;
  // What admitting `request` would add to its tenant's rank: the queue's
  // positions (GetQueue) count each request as admitted in turn.
  virtual double RankAdded(const Snapshot& snapshot,
                           const Allocation& request) const = 0;
};

// PreFilter: once per cycle, before any node is looked at. It may refuse the
// request (Verdict) or narrow what it may take (CycleState::Narrow). (The
// least room a node must have is the Filter plugins' to state, in Prepare,
// which runs after every PreFilter.)
class PreFilterPlugin : public virtual Plugin {
 public:
  virtual Verdict PreFilter(Session& session, CycleState& cycle) const = 0;
  // Whether it is asked of new requests only (Allocate, Explain), not of
  // queued ones (a pass): a check made once, when the request is accepted
  // (whether any node could ever hold it; counting it in the recent mix).
  virtual bool ForNewRequests() const { return false; }
};

// One reason in Explain's per-node account: its category, which the summary
// counts nodes by ("insufficient cpu_milli"), and its detail ("" for none).
struct NodeReason {
  std::string category;
  std::string detail;
};

// A node as a Filter plugin sees it.
struct NodeView {
  absl::string_view name;
  // For a filter of kGate kind: the node, nullptr when it is not registered
  // (yet). The other kinds are not given it.
  const Node* node = nullptr;
  // For a filter of kHeld kind: the pool whose units of the node are
  // weighed.
  const PoolKey* pool = nullptr;
  // What a PostFilter action would free there (victims, leases that end),
  // for the filters of kRoom kind.
  NodeResources freed;
};

// Filter: whether a node may take part in a placement of the request.
class FilterPlugin : public virtual Plugin {
 public:
  enum class Kind {
    // Decided by the node alone (labels, cordon, heartbeat): the same for
    // every placement of the request.
    kGate,
    // Decided by what is free on the node (CPU, memory, pods): a PostFilter
    // action asks it again with what it would free (NodeView::freed).
    kRoom,
    // Decided by what is held on the node, per pool, for other requests:
    // asked of a unit's home only; PostFilter actions read the holds
    // themselves.
    kHeld,
  };
  virtual Kind kind() const = 0;
  // Whether the plugin has anything to say of this request (Kubernetes'
  // PreFilter Skip): asked once per cycle; a plugin that has not is not
  // asked of any node. One that has may state the least available CPU and
  // memory a node must have to pass it (FilterChain::SetMinimumRoom), by
  // which the placements' walks skip nodes.
  virtual bool Prepare(CycleState& cycle) const = 0;
  // Why `node` cannot take part (a static string: "cordoned"), or nullptr.
  // Called per node a placement visits.
  virtual const char* Filter(const CycleState& cycle,
                             const NodeView& node) const = 0;
  // Explain's account of `node`: the reason with its detail, or nullopt
  // when it passes. The default: Filter's reason, without detail.
  virtual std::optional<NodeReason> Describe(const CycleState& cycle,
                                             const NodeView& node) const;
  // Whether Explain's per-node account weighs it. A hold for another
  // request is for a time, not a reason a node cannot serve: the account
  // leaves the reservations filter out (and the topology one, as it always
  // has), and a request refused only for holds says so apart
  // (ExcludedNote).
  virtual bool in_account() const { return true; }
  // For a filter the account leaves out: what a refusal adds when the
  // request would fit but for this filter; "" for nothing.
  virtual absl::string_view ExcludedNote() const { return ""; }
  // For a filter of kGate kind: whether it weighs a unit's home alone (the
  // node a multi-host slice is listed on), not the slice's other hosts. A
  // topology domain is the home's: the other hosts need not carry its label.
  virtual bool home_only() const { return false; }
};

// A Filter plugin with its kind and home_only, asked once when the profile is
// built: a cycle's Prepare sorts the filters that apply without asking again.
struct FilterEntry {
  const FilterPlugin* plugin = nullptr;
  FilterPlugin::Kind kind = FilterPlugin::Kind::kGate;
  bool home_only = false;
};

// One candidate a placement weighs, as a Score plugin sees it.
struct ScoredNode {
  const PoolKey* pool = nullptr;
  const std::string* name = nullptr;  // the index's key
  const CapacityIndex::Home* home = nullptr;
  int count = 0;  // units the request takes there
};

// Score: which placement of a request wins. A placement plugin walks the
// index in its policy's order and asks the cycle's filters of each node it
// would take; the Score plugins beside it add their weighted scores to the
// candidates it weighs (lower is better; every score is in units of the
// pool, so the profile's weights combine them with no normalisation).
class PlacementPlugin : public virtual Plugin {
 public:
  // Whether it places this request: the first placement plugin of the
  // profile that does places it (topology a gang, shares a share, the
  // packing policy the rest).
  virtual bool Places(const CycleState& cycle) const = 0;
  // The units for the request, or nullopt when nothing fits now. Changes
  // nothing.
  virtual std::optional<Groups> Place(const Session& session,
                                      const CycleState& cycle) const = 0;
  // The candidates it weighed, best first, for Explain's scores: empty for
  // a policy that walks in an order and takes the first that serves.
  virtual std::vector<RankedPlacement> Rank(const Session& session,
                                            const CycleState& cycle) const {
    return {};
  }
  // Why the request does not fit now, cheaply (no per-node account): the
  // pending reason's start ("no node has 2 free nvidia-h100 devices (5 free
  // of 16)").
  virtual std::string WhyNot(const Session& session,
                             const CycleState& cycle) const;
  // Explain's word on the request's units of `pool` on `node` (`units`:
  // every unit of the pool that spans the node, none of them empty): nullopt
  // when they serve it, else why not. The default counts the free whole
  // units whose other hosts pass the cycle's filters: "no free X" (with the
  // slice whose other host cannot serve), "too few free Xs".
  virtual std::optional<NodeReason> DescribePool(
      const CycleState& cycle, absl::string_view node, const PoolKey& pool,
      absl::Span<const Unit* const> units) const;
};

class ScorePlugin : public virtual Plugin {
 public:
  // What the candidate adds to its score, before the profile's weight.
  virtual double Score(const CycleState& cycle,
                       const ScoredNode& candidate) const = 0;
};

// Score within a node: which of its free units a group takes.
class UnitScorePlugin : public virtual Plugin {
 public:
  // How many of the node's eligible free units (in best-fit order) it weighs
  // for a group of `count` of `pool`: `count` when it does not choose there.
  virtual int Weighs(const CycleState& cycle, const Node& node,
                     const PoolKey& pool, int count) const = 0;
  // Which `count` of `units` (more than `count`, eligible, in best-fit
  // order) the group takes, by index; empty: the first `count`.
  virtual std::vector<int> Choose(const CycleState& cycle, const Node& node,
                                  absl::Span<const Unit* const> units,
                                  int count) const = 0;
  // Explain's word on one group of the placement (not yet booked): which
  // units it chose and why, or "" when it did not choose them.
  virtual std::string Describe(const CycleState& cycle,
                               absl::Span<const Unit* const> group) const = 0;
};

// Reserve: the request is being given `groups` (the statement books them
// right after): what a plugin keeps for the session changes with it.
class ReservePlugin : public virtual Plugin {
 public:
  virtual void Reserve(Session& session, const CycleState& cycle,
                       const Groups& groups) const = 0;
};

// Where a cycle stopped, for the PostFilter plugins.
struct CycleFailure {
  enum class Kind {
    kRefused,  // a PreFilter plugin refused it (Verdict kUnschedulable)
    kNoFit,    // no placement serves it now
  };
  Kind kind = Kind::kNoFit;
  const Plugin* refused_by = nullptr;
  std::string reason;  // the refusal's, or the placement's WhyNot
};

// What a PostFilter plugin did.
struct PostFilterResult {
  enum class Code {
    // Nothing that settles it: the next plugin is asked (`reason` still
    // adds to the pending reason).
    kContinue,
    // The request waits for what this plugin did (preempted, held): no
    // plugin after it is asked.
    kWaiting,
    // The request waits for room under way (a MIG re-layout) and does not
    // block the requests of its shape; `reason` replaces the pending reason.
    kUnderWay,
    // The request can never be placed (FAILED_PRECONDITION, `reason`).
    kRefused,
  };
  Code code = Code::kContinue;
  std::string reason;  // added to the pending reason ("; preempted 2 ...")
  // For Explain's step ("preempted 2 allocations"); "" when it did nothing.
  std::string detail;
  // What Explain's summary adds ("a MIG re-layout would serve it ...").
  std::string summary;
};

// PostFilter: what is tried, in profile order, for a request that nothing
// fits: KAI-Scheduler's actions (MIG re-layout, preemption, reclaim,
// planning ahead, the backfill reservation). In a pass they act through the
// session's statement and holds; in Explain's dry run the statement records
// and the holds are a scratch copy.
class PostFilterPlugin : public virtual Plugin {
 public:
  virtual PostFilterResult PostFilter(Session& session, CycleState& cycle,
                                      const CycleFailure& failure) const = 0;
  // Whether it is asked of new requests (Allocate, and Explain whether or
  // not the request queues) instead of queued ones (admission passes, and
  // Explain of a request that queues): a check that refuses for good what
  // no placement finds (a gang no domain could ever hold).
  virtual bool ForNewRequests() const { return false; }
  // Whether it may some day make room for a request no node could ever hold
  // as the cluster is (a MIG re-layout): a PreFilter's kUnresolvable then
  // lets the request through.
  virtual bool MayResolve(const Session& session,
                          const CycleState& cycle) const {
    return false;
  }
  // Whether it may still make room for a request whose shape found none
  // this pass (a tenant taking back what its cohort borrows): the request
  // is then tried though its shape is blocked.
  virtual bool MayHelpBlocked(const Session& session,
                              const CycleState& cycle) const {
    return false;
  }
  // The pending reason of pending `id`, whose cycle a pass skips (its shape
  // is blocked), when this plugin's action is under way for it (a MIG
  // re-layout in flight); nullopt otherwise.
  virtual std::optional<std::string> ReasonWhileSkipped(
      Session& session, const std::string& id) const {
    return std::nullopt;
  }
  // Adds to what the pass leaves for the next (the start of a request whose
  // MIG re-layout is under way), when the session closes.
  virtual void OnSessionClose(Session& session, ReservationState& next) const {}
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_FRAMEWORK_PLUGIN_H_
