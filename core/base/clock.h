// Time source, an interface so that lease and heartbeat logic is tested without
// sleeping.
#ifndef ACCELSCHED_CORE_BASE_CLOCK_H_
#define ACCELSCHED_CORE_BASE_CLOCK_H_

#include <atomic>
#include <cstdint>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace accelsched {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
};

class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
};

// This machine's clock corrected by an offset that another thread measures
// against a reference clock (the shared database's: a replica's clock may be
// off, and a leader's leases must mean the same to every replica). Thread-safe.
class OffsetClock final : public Clock {
 public:
  absl::Time Now() const override {
    return absl::Now() + absl::Nanoseconds(offset_ns_.load());
  }
  // The reference clock's time minus this machine's.
  void set_offset(absl::Duration offset) {
    offset_ns_.store(absl::ToInt64Nanoseconds(offset));
  }
  absl::Duration offset() const { return absl::Nanoseconds(offset_ns_.load()); }

 private:
  std::atomic<int64_t> offset_ns_{0};
};

// Thread-safe; time moves only when told.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start) : now_(start) {}
  absl::Time Now() const override {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_BASE_CLOCK_H_
