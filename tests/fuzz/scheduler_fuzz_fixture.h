// A scheduler over a fresh in-memory store with a small mixed cluster, shared
// by the proto fuzzers. Built anew for every input, so that each input runs on
// the same state and a crash reproduces from its input alone.
#ifndef ACCELSCHED_TESTS_FUZZ_SCHEDULER_FUZZ_FIXTURE_H_
#define ACCELSCHED_TESTS_FUZZ_SCHEDULER_FUZZ_FIXTURE_H_

#include "core/scheduler/scheduler.h"
#include "tests/support/blocking_scheduler.h"
#include "tests/support/fake_store.h"
#include "tests/support/scheduler_test_util.h"

namespace accelsched {

class FuzzCluster {
 public:
  FuzzCluster()
      : scheduler_(&store_, &clock_, BuiltinAcceleratorTypes(), Options()) {
    // The fixture is fixed: a failure here is a bug, not an input's doing.
    if (!scheduler_.Load().ok() ||
        !scheduler_
             .RegisterNode(MakeNode("t4",
                                    {Gpu("g0", "T4", 0), Gpu("g1", "T4", 1)},
                                    {{"pool", "a"}}))
             .ok() ||
        !scheduler_.RegisterNode(MakeNode("mig", {MigA100("M", 0)})).ok() ||
        !scheduler_
             .RegisterNode(MakeNode(
                 "tpu",
                 {Chip("c0", "s", "2x2x1", 0), Chip("c1", "s", "2x2x1", 1),
                  Chip("c2", "s", "2x2x1", 2), Chip("c3", "s", "2x2x1", 3)}))
             .ok()) {
      __builtin_trap();
    }
  }

  BlockingScheduler& scheduler() { return scheduler_; }

 private:
  static Scheduler::Options Options() {
    Scheduler::Options o;
    o.heartbeat_timeout = absl::ZeroDuration();
    return o;
  }

  FakeStore store_;
  FakeClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  BlockingScheduler scheduler_;
};

// Every unit's counts add up; a violation stops the fuzzer.
inline void CheckCapacity(const BlockingScheduler& s) {
  for (const CapacityEntry& e : s.GetCapacity()) {
    if (e.free + e.allocated + e.unhealthy != e.total || e.free < 0)
      __builtin_trap();
  }
}

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_FUZZ_SCHEDULER_FUZZ_FIXTURE_H_
