// How long a request is expected to run once admitted, and where that comes
// from: packing's lease term (core/plugins/lease_term) weighs when a node's
// allocations come free, and a Flyte task's lease is a renewal period, not
// its runtime. In order of trust: the duration the caller gave
// (AllocateRequest.expected_duration), the one learned from the tenant's
// finished allocations of the same shape (DurationLearner), else the lease.
#ifndef ACCELSCHED_CORE_PACKING_EXPECTED_DURATION_H_
#define ACCELSCHED_CORE_PACKING_EXPECTED_DURATION_H_

#include <string>

#include "absl/time/time.h"

namespace accelsched {

enum class DurationSource {
  kGiven = 0,    // the request's expected_duration
  kLearned = 1,  // DurationLearner's estimate for its tenant and shape
  kLease = 2,    // neither: its lease (or the server's default lease)
};

struct DurationEstimate {
  absl::Duration duration = absl::ZeroDuration();
  DurationSource source = DurationSource::kLease;
  // kLearned: how many finished allocations the estimate is drawn from.
  int samples = 0;

  bool operator==(const DurationEstimate&) const = default;
};

// "expected duration 2h (given)", "expected duration 25m (learned from 12
// finished allocations)", "expected duration 1h (the lease)": Explain's
// words.
std::string DescribeDuration(const DurationEstimate& estimate);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PACKING_EXPECTED_DURATION_H_
