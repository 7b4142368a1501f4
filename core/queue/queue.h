// The queue of PENDING allocations and the order they are admitted in:
// higher priority first; within a priority, the tenant of the lowest rank
// (the profile's QueueSort plugin: the weighted dominant resource share)
// first; then first come, first served. Each entry keeps its request's
// MatchSpec, made once when it is entered. Not thread-safe: it relies on the
// scheduler's lock, as the catalog and the allocation book do.
//
// Requests wait in groups: one per (priority, tenant, shape), a shape being
// everything that decides where a request can go (device class, models,
// partition, count, replicas, topology key, node selector, and the lease
// rounded down to a power of two seconds). Within a shape a later request
// cannot go where an earlier one could not (but for a slightly shorter lease
// in the same bucket, which then waits for its turn), so an admission pass
// gives up on a whole group, or for want of room on a whole shape, at its
// first miss: a pass costs O(groups) to file them plus O(shapes x log) to
// visit, not O(pending).
#ifndef ACCELSCHED_CORE_QUEUE_QUEUE_H_
#define ACCELSCHED_CORE_QUEUE_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "core/matching/match_spec.h"
#include "core/model/allocation_model.h"

namespace accelsched {

// What decides where a request can go (RequestSpec::KeyFor(kShape)); equal
// shapes compete for the same units.
std::string ShapeOf(const Allocation& pending);

class Queue {
 public:
  enum class Verdict {
    kTaken,      // admitted (or, in a simulation, counted): go on in its group
    kSkipGroup,  // blocked: the rest of its group waits for the next pass
    kSkipShape,  // blocked for want of room: so is every group of its shape
                 // at this priority
    kPassed,     // waits for room under way (a MIG re-layout planned for
                 // it), not blocked: go on in its group
  };
  // A tenant's rank now (lower first); the walk asks again after each
  // kTaken.
  using RankFn = absl::FunctionRef<double(const std::string& tenant)>;
  using VisitFn = absl::FunctionRef<Verdict(const std::string& id)>;

  // Enters a PENDING allocation (one entered already is filed anew). Ids
  // sort by creation, so a group's order is its ids' order.
  void Add(const Allocation& pending);
  // Takes it out (admitted, withdrawn, expired); no-op for an unknown id.
  void Remove(const std::string& id);
  bool contains(absl::string_view id) const { return entries_.contains(id); }
  size_t size() const { return entries_.size(); }
  void Clear();

  // Visits pending ids in admission order. `visit` must not change the
  // queue; remove the ids it took once the walk is over.
  void Walk(RankFn rank, VisitFn visit) const;

  // Every pending id in admission order, with `added(id)` added to its
  // tenant's rank as each is counted (what admitting them all in turn would
  // do): the order queue_position reports.
  std::vector<std::string> Order(
      RankFn rank,
      absl::FunctionRef<double(const std::string& id)> added) const;

  // What keeps a pending request waiting, as the last pass found it ("" until
  // a pass saw it).
  void SetReason(const std::string& id, const std::string& reason);
  const std::string& Reason(absl::string_view id) const;
  // ShapeOf the pending allocation `id`, as entered; "" when unknown.
  const std::string& Shape(absl::string_view id) const;
  // The MatchSpec of pending `id`, made when it was entered. `id` must be
  // queued.
  const MatchSpec& Spec(absl::string_view id) const;
  // Pending requests per tenant.
  std::map<std::string, int64_t> CountByTenant() const;

 private:
  struct Entry {
    int priority = 0;
    std::string tenant;
    std::string shape;
    uint32_t shape_id = 0;  // `shape` interned
    std::string reason;
    MatchSpec spec;
  };
  // Ids of one group, oldest first.
  using Group = std::set<std::string>;
  // priority (highest first) -> tenant -> interned shape -> group.
  using Levels = std::map<int, std::map<std::string, std::map<uint32_t, Group>>,
                          std::greater<int>>;

  Levels levels_;
  absl::flat_hash_map<std::string, Entry> entries_;
  // Shapes interned to small dense ids, so that a walk files each tenant's
  // groups by index instead of hashing every group's shape every pass:
  // shape -> id, the entries of each id, and the ids free for reuse.
  absl::flat_hash_map<std::string, uint32_t> shape_ids_;
  std::vector<uint32_t> shape_refs_;
  std::vector<uint32_t> free_shape_ids_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_QUEUE_QUEUE_H_
