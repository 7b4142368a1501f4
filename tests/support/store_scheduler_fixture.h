// A typed fixture for scheduler tests on every store (StoreFactories): a
// BlockingScheduler on a store that Restart drops and opens again, as kill -9
// would.
#ifndef ACCELSCHED_TESTS_SUPPORT_STORE_SCHEDULER_FIXTURE_H_
#define ACCELSCHED_TESTS_SUPPORT_STORE_SCHEDULER_FIXTURE_H_

#include <memory>

#include "absl/time/time.h"
#include "config/accelerator_types_file.h"
#include "core/base/clock.h"
#include "core/scheduler/scheduler.h"
#include "gtest/gtest.h"
#include "tests/support/blocking_scheduler.h"
#include "tests/support/scheduler_test_util.h"
#include "tests/support/status_matchers.h"
#include "tests/support/store_factories.h"

namespace accelsched {

template <typename Factory>
class StoreSchedulerTest : public testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(Start()); }

  // Drops the scheduler and its store without another write, as kill -9
  // would (every acknowledged change is already committed), and starts both
  // again on what was committed, with options_.
  void Restart() {
    scheduler_.reset();
    store_.reset();
    ASSERT_NO_FATAL_FAILURE(Start());
  }

  BlockingScheduler& s() { return *scheduler_; }

  Scheduler::Options options_;
  Factory factory_;
  FakeClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  std::unique_ptr<Store> store_;
  std::unique_ptr<BlockingScheduler> scheduler_;

 private:
  void Start() {
    store_ = factory_.Open();
    ASSERT_NE(store_, nullptr);
    scheduler_ = std::make_unique<BlockingScheduler>(
        store_.get(), &clock_, BuiltinAcceleratorTypes(), options_);
    ASSERT_OK(scheduler_->Load());
  }
};

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_STORE_SCHEDULER_FIXTURE_H_
