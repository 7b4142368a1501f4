// Every kind of scheduler call at once, on every store: allocations and
// releases, lease expiry on a moving clock, node registration, heartbeats and
// cordons, readers, and a watcher. Afterwards no unit is in two live
// allocations, counts add up, every event arrived once and in order, and a
// restart finds exactly the same state. Under ThreadSanitizer
// (scripts/sanitize.sh thread) this is what exercises the scheduler's,
// committer's, hub's, clock's and stores' locks from many threads.
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/scheduler/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/blocking_scheduler.h"
#include "tests/support/scheduler_test_util.h"
#include "tests/support/status_matchers.h"
#include "tests/support/store_factories.h"

namespace accelsched {
namespace {

template <typename Factory>
class SchedulerConcurrencyTest : public testing::Test {
 protected:
  static Scheduler::Options Opts() {
    Scheduler::Options o;
    o.heartbeat_timeout = absl::ZeroDuration();  // the clock runs ahead
    o.watch_buffer = 1 << 20;  // the watcher here never falls behind
    return o;
  }

  std::unique_ptr<BlockingScheduler> Start() {
    store_ = factory_.Open();
    if (store_ == nullptr) return nullptr;
    auto s = std::make_unique<BlockingScheduler>(
        store_.get(), &clock_, BuiltinAcceleratorTypes(), Opts());
    EXPECT_OK(s->Load());
    return s;
  }

  Factory factory_;
  FakeClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  std::unique_ptr<Store> store_;
};

TYPED_TEST_SUITE(SchedulerConcurrencyTest, StoreFactories, StoreFactoryNames);

// Unit -> live allocation, failing the test for a unit held twice.
std::map<std::string, std::string> LiveUnits(const BlockingScheduler& s) {
  std::map<std::string, std::string> holder;
  // Every allocation that holds devices: ACTIVE, or PREEMPTED in its grace.
  absl::StatusOr<AllocationPage> page = s.ListAllocations(
      {AllocationState::kUnspecified, "", ""}, kMaxPageSize, "");
  EXPECT_OK(page);
  if (!page.ok()) return holder;
  EXPECT_TRUE(page->next_page_token.empty());
  for (const Allocation& a : page->allocations) {
    if (!a.live()) continue;
    for (const AllocatedDevice& d : a.devices) {
      const std::string unit =
          d.mig_slice_id.empty() ? d.device_id : d.mig_slice_id;
      EXPECT_TRUE(holder.emplace(unit, a.id).second)
          << unit << " is in two live allocations";
    }
  }
  return holder;
}

TYPED_TEST(SchedulerConcurrencyTest, EveryCallAtOnceKeepsEveryInvariant) {
  std::unique_ptr<BlockingScheduler> s = this->Start();
  ASSERT_NE(s, nullptr);
  std::vector<Device> t4s;
  for (int i = 0; i < 6; ++i) t4s.push_back(Gpu(absl::StrCat("t", i), "T4", i));
  ASSERT_OK(s->RegisterNode(MakeNode("n1", t4s)));
  ASSERT_OK(s->RegisterNode(MakeNode("n2", {MigA100("M", 0)})));
  ASSERT_OK(s->RegisterNode(
      MakeNode("n3", {Gpu("h0", "T4", 0), Gpu("h1", "T4", 1)})));
  ASSERT_OK(s->RegisterNode(MakeNode("flap", {Gpu("f0", "T4", 0)})));

  // Nothing commits until the threads start, so the store may be read here.
  absl::StatusOr<uint64_t> registered = this->store_->LoadEventSequence();
  ASSERT_OK(registered);
  auto watcher = s->events().Subscribe();
  std::atomic<int> writers_left{0};
  std::atomic<int> allocated{0};
  std::vector<std::thread> threads;
  auto writer = [&](auto body) {
    ++writers_left;
    threads.emplace_back([&, body] {
      body();
      --writers_left;
    });
  };

  // Allocators: some leases short enough for the clock below to expire.
  for (int t = 0; t < 4; ++t) {
    writer([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < 60; ++i) {
        AllocationRequest r =
            rng() % 3 == 0
                ? Want(absl::StrCat(t, "-", i), "A100", 1 + rng() % 2, "1g.5gb")
                : Want(absl::StrCat(t, "-", i), "T4", 1 + rng() % 2);
        r.tenant = absl::StrCat("team-", t % 2);
        if (rng() % 4 == 0) r.lease = absl::Seconds(1);
        absl::StatusOr<Allocation> a = s->Allocate(r);
        if (!a.ok()) {
          EXPECT_EQ(a.status().code(), absl::StatusCode::kResourceExhausted)
              << a.status();
          continue;
        }
        ++allocated;
        absl::StatusOr<Allocation> renewed = s->RenewLease(a->id, r.lease);
        if (!renewed.ok()) {  // it may have expired already
          EXPECT_EQ(renewed.status().code(),
                    absl::StatusCode::kFailedPrecondition)
              << renewed.status();
        }
        if (i % 3 != 0) {
          EXPECT_OK(s->Release({"", r.request_id}));
        }
      }
    });
  }
  // Queued requests of three priorities and tenants: admitted, preempting,
  // withdrawn, expiring; the queue read meanwhile.
  writer([&] {
    std::mt19937 rng(99);
    for (int i = 0; i < 60; ++i) {
      AllocationRequest r = Want(absl::StrCat("q-", i), "T4", 1 + rng() % 3);
      r.queue = true;
      r.tenant = absl::StrCat("team-q", i % 3);
      r.priority = static_cast<int>(rng() % 3);
      r.lease = absl::Seconds(1 + rng() % 2);
      EXPECT_OK(s->Allocate(r));
      if (i % 4 == 0) EXPECT_OK(s->Release({"", r.request_id}));
      EXPECT_OK(s->GetQueue("", 5, ""));
    }
  });
  // Time passes; expired leases are swept.
  writer([&] {
    for (int i = 0; i < 100; ++i) {
      this->clock_.Advance(absl::Milliseconds(100));
      EXPECT_OK(s->Sweep());
    }
  });
  // The catalog changes: health, cordon, and a node whose second GPU comes
  // and goes (kept as removed while allocated).
  writer([&] {
    for (int i = 0; i < 60; ++i) {
      EXPECT_OK(s->Heartbeat("n3", i % 2 == 0 ? std::vector<std::string>{"h1"}
                                              : std::vector<std::string>{}));
      EXPECT_OK(s->SetNodeSchedulable("n3", i % 3 != 0));
      std::vector<Device> flap = {Gpu("f0", "T4", 0)};
      if (i % 2 == 0) flap.push_back(Gpu("f1", "T4", 1));
      EXPECT_OK(s->RegisterNode(MakeNode("flap", flap)));
    }
  });
  // Readers, until the writers are done.
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      while (writers_left.load() > 0) {
        for (const CapacityEntry& e : s->GetCapacity()) {
          EXPECT_EQ(e.free + e.allocated + e.unhealthy, e.total);
        }
        EXPECT_OK(s->ListNodes(LabelSelector(), 2, ""));
        EXPECT_OK(s->GetNode("n1"));
        EXPECT_OK(s->Explain(Want("explain", "T4", 2)));
        EXPECT_OK(s->ListAllocations({}, 10, ""));
        absl::StatusOr<Allocation> a = s->GetAllocation({"", "0-0"});
        if (!a.ok()) {
          EXPECT_EQ(a.status().code(), absl::StatusCode::kNotFound);
        }
        const SchedulerStats stats = s->Stats();
        s->TenantStandings("");
        EXPECT_EQ(stats.schedulable_nodes + stats.cordoned_nodes, 4);
        s->committer().stats();
        s->events().watchers();
      }
    });
  }
  // The watcher: every committed event, once, numbered without a gap.
  uint64_t events = *registered;
  std::thread watch([&] {
    for (;;) {
      absl::StatusOr<std::optional<Event>> e =
          watcher->Next(absl::Milliseconds(50));
      ASSERT_OK(e);
      if (!e->has_value()) {
        if (writers_left.load() == 0) return;
        continue;
      }
      ASSERT_EQ((*e)->sequence, ++events);
    }
  });
  for (std::thread& t : threads) t.join();
  watch.join();

  EXPECT_GT(allocated.load(), 0);
  const std::map<std::string, std::string> live = LiveUnits(*s);
  int64_t allocated_units = 0;
  for (const CapacityEntry& e : s->GetCapacity()) {
    EXPECT_EQ(e.free + e.allocated + e.unhealthy, e.total);
    allocated_units += e.allocated;
  }
  EXPECT_EQ(allocated_units, static_cast<int64_t>(live.size()));
  // Events left after the last writer are read here: the total is exact.
  for (;;) {
    absl::StatusOr<std::optional<Event>> e =
        watcher->Next(absl::ZeroDuration());
    ASSERT_OK(e);
    if (!e->has_value()) break;
    ASSERT_EQ((*e)->sequence, ++events);
  }
  EXPECT_EQ(*this->store_->LoadEventSequence(), events);

  // A restart finds what was acknowledged, and numbers events on from there.
  const std::vector<CapacityEntry> capacity = s->GetCapacity();
  const Node flap = *s->GetNode("flap");
  s.reset();
  s = this->Start();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(LiveUnits(*s), live);
  EXPECT_EQ(s->GetCapacity(), capacity);
  EXPECT_EQ(*s->GetNode("flap"), flap);
  watcher = s->events().Subscribe();
  ASSERT_OK(s->SetNodeSchedulable("n1", false));
  absl::StatusOr<std::optional<Event>> next = watcher->Next(absl::Seconds(5));
  ASSERT_OK(next);
  ASSERT_TRUE(next->has_value());
  EXPECT_EQ((*next)->sequence, events + 1);
}

}  // namespace
}  // namespace accelsched
