// A Store that acknowledges every write at once and keeps nothing: the
// benchmarks that time the scheduler's own work under its lock use it, so
// that no commit's fsync is in their figures.
#ifndef ACCELSCHED_BENCH_NULL_STORE_H_
#define ACCELSCHED_BENCH_NULL_STORE_H_

#include <cstdint>
#include <vector>

#include "core/commit/store.h"

namespace accelsched {

class NullStore final : public Store {
 public:
  absl::StatusOr<std::vector<Node>> LoadNodes() override {
    return std::vector<Node>();
  }
  absl::StatusOr<std::vector<StoredAllocation>> LoadAllocations() override {
    return std::vector<StoredAllocation>();
  }
  absl::StatusOr<uint64_t> LoadEventSequence() override { return 0; }
  absl::Status Apply(absl::Span<const Mutation>) override {
    return absl::OkStatus();
  }
};

}  // namespace accelsched

#endif  // ACCELSCHED_BENCH_NULL_STORE_H_
