// The pending requests' admission order as readers see it (queue_position,
// GetQueue): sorting the queue costs O(pending x log pending), so an order is
// computed once per change of the scheduler's memory (its version) when
// asked fresh, and otherwise reused for up to kMaxAge of real time (what one
// allocation's queue_position shows; GetQueue's is exact). Readers hold the
// scheduler's lock shared only and so cannot keep it in the state that lock
// guards. Thread-safe (its own mutex, taken after the scheduler's).
#ifndef ACCELSCHED_CORE_SCHEDULER_QUEUE_ORDER_H_
#define ACCELSCHED_CORE_SCHEDULER_QUEUE_ORDER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace accelsched {

class QueueOrder {
 public:
  static constexpr absl::Duration kMaxAge = absl::Milliseconds(200);

  QueueOrder() = default;
  QueueOrder(const QueueOrder&) = delete;
  QueueOrder& operator=(const QueueOrder&) = delete;

  // The order of the memory at `version`: `compute`'s, called (under this
  // class's mutex) when the one kept is of another version and `fresh` is
  // asked, none is kept, or it is older than kMaxAge.
  std::shared_ptr<const std::vector<std::string>> Get(
      uint64_t version, bool fresh,
      absl::FunctionRef<std::vector<std::string>()> compute);
  // Where pending `id` stands (1-based) in the order last computed; nullopt
  // when it was queued since.
  std::optional<int> PositionOf(absl::string_view id) const;

 private:
  mutable absl::Mutex mu_;
  uint64_t version_ ABSL_GUARDED_BY(mu_) = ~0ull;
  absl::Time computed_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const std::vector<std::string>> order_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int> positions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_SCHEDULER_QUEUE_ORDER_H_
