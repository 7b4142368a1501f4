// A scheduler over an in-memory store with a small mixed cluster, shared by the
// proto fuzzers. Built once per fuzzing process.
#ifndef ACCELSCHED_TESTS_FUZZ_SCHEDULER_FUZZ_FIXTURE_H_
#define ACCELSCHED_TESTS_FUZZ_SCHEDULER_FUZZ_FIXTURE_H_

#include "core/scheduler.h"
#include "tests/fake_store.h"
#include "tests/scheduler_test_util.h"

namespace accelsched {

inline Scheduler& FuzzScheduler() {
  static FakeStore* store = new FakeStore;
  static FakeClock* clock = new FakeClock(absl::FromUnixSeconds(1'700'000'000));
  static Scheduler* s = [] {
    Scheduler::Options o;
    o.heartbeat_timeout = absl::ZeroDuration();
    auto* sched = new Scheduler(store, clock, o);
    (void)sched->Load();
    (void)sched->RegisterNode(MakeNode(
        "t4", {Gpu("g0", "T4", 0), Gpu("g1", "T4", 1)}, {{"pool", "a"}}));
    (void)sched->RegisterNode(MakeNode("mig", {MigA100("M", 0)}));
    (void)sched->RegisterNode(MakeNode(
        "tpu", {Chip("c0", "s", "2x2x1", 0), Chip("c1", "s", "2x2x1", 1),
                Chip("c2", "s", "2x2x1", 2), Chip("c3", "s", "2x2x1", 3)}));
    return sched;
  }();
  return *s;
}

// Every unit's counts add up; a violation stops the fuzzer.
inline void CheckCapacity(const Scheduler& s) {
  for (const CapacityEntry& e : s.GetCapacity()) {
    if (e.free + e.allocated + e.unhealthy != e.total || e.free < 0)
      __builtin_trap();
  }
}

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_FUZZ_SCHEDULER_FUZZ_FIXTURE_H_
