// Exponential backoff with jitter for retrying an unavailable server: each
// delay is drawn uniformly from [d/2, d] where d doubles from `initial` up to
// `max`, so that a fleet of agents restarted together does not retry in step.
// Not thread-safe.
#ifndef ACCELSCHED_AGENT_BACKOFF_H_
#define ACCELSCHED_AGENT_BACKOFF_H_

#include <algorithm>

#include "absl/random/random.h"
#include "absl/time/time.h"

namespace accelsched::agent {

class Backoff {
 public:
  Backoff(absl::Duration initial, absl::Duration max)
      : initial_(initial), max_(max), next_(initial) {}

  // The delay before the next attempt; the one after is twice as long, up to
  // `max`.
  absl::Duration Next() {
    const absl::Duration d = next_;
    next_ = std::min(next_ * 2, max_);
    return absl::Uniform(gen_, 0.5, 1.0) * d;
  }
  // After a success: the next failure waits `initial` again.
  void Reset() { next_ = initial_; }

 private:
  const absl::Duration initial_;
  const absl::Duration max_;
  absl::Duration next_;
  absl::BitGen gen_;
};

}  // namespace accelsched::agent

#endif  // ACCELSCHED_AGENT_BACKOFF_H_
