// absl::Notification's contract, with the timed wait on the monotonic clock.
// abseil 20220623 (Debian 12) sleeps a timed wait until a time of the wall
// clock (absl/synchronization/internal/futex.h:99, FUTEX_CLOCK_REALTIME), so
// a step of the wall clock back stretches the wait by the step: a leader's
// renewals, or its sweeps, would stop for that long.
#ifndef ACCELSCHED_SERVICES_MONOTONIC_NOTIFICATION_H_
#define ACCELSCHED_SERVICES_MONOTONIC_NOTIFICATION_H_

#include <condition_variable>
#include <mutex>

#include "absl/time/time.h"

namespace accelsched {

class MonotonicNotification {
 public:
  // Wakes every waiter, now and later. Idempotent.
  void Notify() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      notified_ = true;
    }
    cv_.notify_all();
  }
  bool HasBeenNotified() const {
    std::lock_guard<std::mutex> lock(mu_);
    return notified_;
  }
  // Blocks until Notify() or until `timeout` passes on the monotonic clock;
  // true when notified.
  bool WaitForNotificationWithTimeout(absl::Duration timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    if (timeout == absl::InfiniteDuration()) {
      cv_.wait(lock, [this] { return notified_; });
      return true;
    }
    return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                        [this] { return notified_; });
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool notified_ = false;  // guarded by mu_
};

}  // namespace accelsched

#endif  // ACCELSCHED_SERVICES_MONOTONIC_NOTIFICATION_H_
