// How the fragmentation policy weighs one candidate placement: the change in
// expected fragmentation it makes on the node (FGD, Weng et al., "Beware of
// Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient
// Descent", USENIX ATC'23, section 4: a node's fragmentation under a workload
// is the expected free capacity that a request drawn from the workload could
// not use there; the placement that increases it least wins), plus how badly
// the request's expected end (core/packing/expected_duration.h: its given or
// learned duration, else its lease) matches those of the node's other
// allocations (a
// node whose allocations end together comes free whole; one that mixes a
// five-minute job with a three-day one stays partly taken for three days).
// Pure functions.
//
// The score, lower is better, is one number per candidate, in units of the
// pool:
//   score = F(after) - F(before) + kLeaseWeight * lease
// where F is Fragmentation and `lease` LeaseMismatch. Ties go to the
// matcher's best-fit order.
#ifndef ACCELSCHED_CORE_PACKING_PLACEMENT_SCORE_H_
#define ACCELSCHED_CORE_PACKING_PLACEMENT_SCORE_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/model/unit.h"
#include "core/packing/request_mix.h"

namespace accelsched {

// CPU or memory of a node that is not accounted: never short.
inline constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();

// What one node offers a request of one pool: its free units, and its
// available CPU and memory (kUnlimited where not accounted).
struct NodeRoom {
  int free = 0;
  int64_t cpu = kUnlimited;
  int64_t memory = kUnlimited;
};

// When the units of one pool held on a node come free: how many are held,
// and the latest expected end among them (LeaseView; InfinitePast when none
// is held).
struct NodeLeases {
  int held = 0;
  absl::Time busy_until = absl::InfinitePast();
};

// When an allocation's units are expected to come free, as of `now` (its
// expected end, core/book/book_records.h BookLeases; else its lease end; a
// PREEMPTED one's grace end), for the lease term. The allocation book
// answers it.
class LeaseView {
 public:
  virtual ~LeaseView() = default;
  // InfinitePast when `allocation` is unknown or holds nothing.
  virtual absl::Time FreeAt(absl::string_view allocation,
                            absl::Time now) const = 0;
};

// The weight of the lease term against fragmentation (both in units): tuned
// on bench/packing_bench's synthetic stream.
inline constexpr double kLeaseWeight = 1.0;

// The expected units of `room` that a request drawn from `shapes` could not
// use there: sum over shapes of weight * free, for the shapes whose count,
// CPU or memory the node cannot give (CPU or memory below 0 counts as 0).
// 0 for an empty mix.
double Fragmentation(const NodeRoom& room,
                     const std::vector<RequestShape>& shapes);

// The change in Fragmentation that taking `count` of a node's `free` units
// makes when nothing but units limits the node (CPU and memory kUnlimited),
// and a lower bound of the change on any node with `free` units whatever its
// CPU and memory (not below 0): a shape that asks CPU or memory and fits
// the units may count all `free` units as stranded before and none after.
struct FragmentationChange {
  double units_only = 0;
  double lower_bound = 0;
};
FragmentationChange ChangeOfTaking(int free, int count,
                                   const std::vector<RequestShape>& shapes);

// How badly `ends_at`, the expected end of a request for `count` of the node's
// `size` units, matches when the node's held units come free (`leases`), in
// units (0 to size): the node's other units stay in a node partly taken for
// as long as the request outlasts its others ((size - count) * later /
// horizon), or the request's units, once free, wait in one for the others
// to end (count * earlier / horizon), where the horizon is the time until
// both have ended. A node where nothing is held counts as one that comes
// free now: taking part of it costs size - count. 0 when `ends_at` is
// InfiniteFuture (no end known).
double LeaseMismatch(const NodeLeases& leases, int size, int count,
                     absl::Time now, absl::Time ends_at);

struct PlacementScore {
  double before = 0;    // F(before), units
  double after = 0;     // F(after), units
  int free_before = 0;  // the node's free units
  int free_after = 0;   // after the request
  double lease = 0;     // LeaseMismatch
  double total = 0;     // the score above
};

// The score of putting `count` units of a request whose pod needs
// `cpu_milli` and `memory_bytes` on a node with `room`, `size` units of the
// pool and `leases`. `leases` null: no lease term.
PlacementScore ScorePlacement(const NodeRoom& room, int size,
                              const std::vector<RequestShape>& shapes,
                              int count, int64_t cpu_milli,
                              int64_t memory_bytes, const NodeLeases* leases,
                              absl::Time now, absl::Time ends_at);

// Adds the lease term of a node with `size` units and `leases` to `score`
// (ScorePlacement's, computed without leases).
void AddLeaseTerm(const NodeLeases& leases, int size, int count, absl::Time now,
                  absl::Time ends_at, PlacementScore& score);

// A candidate placement as the fragmentation policy weighs it (Explain's
// scores).
struct RankedPlacement {
  PoolKey pool;
  std::string node;
  PlacementScore score;
};

// What a candidate would strand, for Explain: "strands 0.50 of 4 free units
// (was 1.25 of 5); lease mismatch 0.10".
std::string DescribeScore(const PlacementScore& score);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PACKING_PLACEMENT_SCORE_H_
