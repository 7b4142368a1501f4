#include "core/packing/placement_score.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace accelsched {

double Fragmentation(const NodeRoom& room,
                     const std::vector<RequestShape>& shapes) {
  if (room.free <= 0) return 0;
  // A node over-committed (available below 0, allocatable lowered under
  // what is held) still takes a pod that asks none: as the matcher places
  // it.
  const int64_t cpu = std::max<int64_t>(room.cpu, 0);
  const int64_t memory = std::max<int64_t>(room.memory, 0);
  double stranded = 0;
  for (const RequestShape& s : shapes) {
    if (room.free < s.count || cpu < s.cpu_milli || memory < s.memory_bytes) {
      stranded += s.weight;
    }
  }
  return stranded * room.free;
}

FragmentationChange ChangeOfTaking(int free, int count,
                                   const std::vector<RequestShape>& shapes) {
  FragmentationChange change;
  change.units_only = Fragmentation(NodeRoom{free - count}, shapes) -
                      Fragmentation(NodeRoom{free}, shapes);
  change.lower_bound = change.units_only;
  for (const RequestShape& s : shapes) {
    if ((s.cpu_milli > 0 || s.memory_bytes > 0) && free >= s.count) {
      change.lower_bound -= s.weight * free;
    }
  }
  return change;
}

double LeaseMismatch(const NodeLeases& leases, int size, int count,
                     absl::Time now, absl::Time ends_at) {
  if (size <= 0 || ends_at == absl::InfiniteFuture()) return 0;
  // When the node would come free whole without the request.
  const absl::Time whole =
      leases.held > 0 ? std::max(leases.busy_until, now) : now;
  const absl::Duration horizon =
      std::max({ends_at, whole, now + absl::Minutes(1)}) - now;
  const absl::Duration later = std::max(ends_at - whole, absl::ZeroDuration());
  const absl::Duration earlier =
      std::max(whole - ends_at, absl::ZeroDuration());
  // The node's other units stay in a node partly taken for `later` more;
  // the request's own wait `earlier` after their end for the node's others.
  const double waited = (size - count) * absl::FDivDuration(later, horizon) +
                        count * absl::FDivDuration(earlier, horizon);
  return std::clamp(waited, 0.0, static_cast<double>(size));
}

PlacementScore ScorePlacement(const NodeRoom& room, int size,
                              const std::vector<RequestShape>& shapes,
                              int count, int64_t cpu_milli,
                              int64_t memory_bytes, const NodeLeases* leases,
                              absl::Time now, absl::Time ends_at) {
  PlacementScore score;
  NodeRoom after = room;
  after.free -= count;
  if (after.cpu != kUnlimited) after.cpu -= cpu_milli;
  if (after.memory != kUnlimited) after.memory -= memory_bytes;
  score.before = Fragmentation(room, shapes);
  score.after = Fragmentation(after, shapes);
  score.free_before = room.free;
  score.free_after = after.free;
  score.total = score.after - score.before;
  if (leases != nullptr) {
    AddLeaseTerm(*leases, size, count, now, ends_at, score);
  }
  return score;
}

void AddLeaseTerm(const NodeLeases& leases, int size, int count, absl::Time now,
                  absl::Time ends_at, PlacementScore& score) {
  score.lease = LeaseMismatch(leases, size, count, now, ends_at);
  score.total = score.after - score.before + kLeaseWeight * score.lease;
}

std::string DescribeScore(const PlacementScore& score) {
  return absl::StrFormat(
      "strands %.2f of %d free units (was %.2f of %d); lease mismatch %.2f",
      score.after, score.free_after, score.before, score.free_before,
      score.lease);
}

}  // namespace accelsched
