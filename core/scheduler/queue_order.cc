#include "core/scheduler/queue_order.h"

#include <utility>

#include "absl/time/clock.h"

namespace accelsched {

std::shared_ptr<const std::vector<std::string>> QueueOrder::Get(
    uint64_t version, bool fresh,
    absl::FunctionRef<std::vector<std::string>()> compute) {
  absl::MutexLock lock(&mu_);
  // Real time, not the scheduler's clock: this bounds CPU, not semantics.
  const absl::Time now = absl::Now();
  if (version_ != version &&
      (fresh || order_ == nullptr || now - computed_ > kMaxAge)) {
    auto order = std::make_shared<std::vector<std::string>>(compute());
    positions_.clear();
    for (size_t i = 0; i < order->size(); ++i) {
      positions_[(*order)[i]] = static_cast<int>(i) + 1;
    }
    order_ = std::move(order);
    version_ = version;
    computed_ = now;
  }
  return order_;
}

std::optional<int> QueueOrder::PositionOf(absl::string_view id) const {
  absl::MutexLock lock(&mu_);
  auto it = positions_.find(id);
  if (it == positions_.end()) return std::nullopt;
  return it->second;
}

}  // namespace accelsched
