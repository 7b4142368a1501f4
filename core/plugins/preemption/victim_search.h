// The victims of preemption (Kubernetes' default preemption, Kueue's reclaim
// within a cohort): which ACTIVE allocations a request that cannot be placed
// may displace. Not thread-safe: one session keeps one, under the
// scheduler's lock. It chooses only; the preemption and reclaim plugins
// preempt the victims (through the session's statement) and hold their
// nodes (Holds), and the scheduler gives each victim its grace (never past
// its lease).
//
// A victim is an ACTIVE allocation of a preemptible tenant, not placed in this
// very session, that is either of lower priority than the request, or,
// when the request's tenant may reclaim (quota_planner.h: ReclaimPossible),
// of a cohort member that borrows the pool (such a borrower goes first, and
// a tenant's allocations are taken only while it still borrows, when they
// are not of lower priority anyway: the last taken may leave it under its
// nominal quota, by up to that allocation's size less one thousandth). A GPU
// held in shares is freed only by taking every share on it, all of lower
// priority, as one candidate, and not by a reclaim on one node; a reclaim from
// anywhere (ChooseReclaimVictims) takes shares as their fraction of a unit. A
// share preempts only shares of lower priority on one GPU
// (docs/concepts/sharing.md).
#ifndef ACCELSCHED_CORE_PLUGINS_PREEMPTION_VICTIM_SEARCH_H_
#define ACCELSCHED_CORE_PLUGINS_PREEMPTION_VICTIM_SEARCH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "core/framework/cycle_state.h"
#include "core/framework/session.h"
#include "core/plugins/quota/quota.h"

namespace accelsched {

// Whom to preempt for a request, and the node it will then fit on.
struct VictimChoice {
  std::vector<std::string> victims;  // in the order they were taken
  std::string node;
};

class VictimSearch : public SessionState {
 public:
  // `session` is not owned and must outlive the search.
  explicit VictimSearch(Session& session)
      : session_(session), snap_(session.snapshot()), index_(*snap_.index) {}

  // The fewest victims that let pending `request` (allocation `id`, asking
  // for `spec`, in `cycle`, whose filters it passes nodes through) fit on
  // one node, or nullopt when none would do (or `spec` is a gang: it waits).
  // A share takes only shares of lower priority on one GPU
  // (ChooseShareVictims), and nothing in a reclaim (`borrowed_only` or
  // `quota_milli`). On each node whose gates pass that is not held for
  // another request (a preemptor's hold yields to a higher priority; a
  // backfill reservation never does), victims are taken in order: borrowers
  // first, then the lowest priority, then the fewest allocations (a GPU's
  // shares count as many), then the most recently admitted (the later id on
  // a tie), until the request fits (its units, and its pod_resources in the
  // node's available CPU, memory and pods with the victims' freed: the
  // cycle's room filters) and, with `quota_milli`, that much of the pool
  // (thousandths of a unit) comes back (a reclaim). Between nodes: the
  // fewest victims, then the lowest highest-victim priority, then the
  // node's name. `borrowed_only`: cohort borrowers only (a reclaim, where
  // nothing else would free quota). A search that finds nothing is not made
  // again in the session for the same pool, priority, rights and shape.
  std::optional<VictimChoice> ChooseVictims(const CycleState& cycle,
                                            const std::string& id,
                                            const Allocation& request,
                                            const MatchSpec& spec,
                                            bool borrowed_only = false,
                                            int64_t quota_milli = 0);

  // The borrowers' allocations of `reclaim.pool` in `request`'s cohort to
  // preempt, from anywhere, so that `reclaim.milli` comes back (a share
  // gives back its compute_milli, a unit 1000): the lowest
  // priority first, then the most recently admitted (the later id on a tie),
  // a tenant's only while it still borrows (the last may leave it under its
  // nominal quota). Empty when what they borrow is not enough.
  std::vector<std::string> ChooseReclaimVictims(const Allocation& request,
                                                const Reclaim& reclaim) const;

 private:
  // Whether `a` may go for a share of `priority`: ACTIVE, of lower priority,
  // of a preemptible tenant, not placed in this session.
  bool IsShareVictim(const Allocation& a, int priority) const;
  // ChooseVictims for a share: the fewest shares of lower priority on one
  // GPU (units that take shares and are held by none whole) whose going
  // leaves room for it: its compute, the memory it takes of that GPU, its
  // pod_resources on the node, and its group (shares of another group must
  // all go). On one GPU the lowest priority goes first, then the most
  // recently admitted; between GPUs the fewest victims, then the lowest
  // highest-victim priority, then the GPU's key. Nodes held for another
  // request and nodes whose gates fail are passed by.
  std::optional<VictimChoice> ChooseShareVictims(const CycleState& cycle,
                                                 const std::string& id,
                                                 const Allocation& request,
                                                 const MatchSpec& spec);

  Session& session_;
  const Snapshot& snap_;
  const CapacityIndex& index_;
  // Preemption searches (pool, rights, shape) that found no victims.
  absl::flat_hash_set<std::string> no_victims_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_PREEMPTION_VICTIM_SEARCH_H_
