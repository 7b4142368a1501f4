#include "core/commit/event_hub.h"

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::HasSubstr;

Event NodeEvent(const std::string& node, uint64_t sequence = 0) {
  return Event{
      Event::Type::kNodeRegistered, absl::UnixEpoch(), {}, node, "", sequence};
}

// The committer numbers events; the hub passes the numbers on as they are.
TEST(EventHubTest, EveryWatcherGetsEveryEventInOrder) {
  EventHub hub(8);
  auto w1 = hub.Subscribe();
  auto w2 = hub.Subscribe();
  hub.Publish({NodeEvent("a", 1), NodeEvent("b", 2)});
  for (auto& w : {w1, w2}) {
    auto first = w->Next(absl::Seconds(1));
    auto second = w->Next(absl::Seconds(1));
    ASSERT_OK(first);
    ASSERT_OK(second);
    EXPECT_EQ((*first)->node, "a");
    EXPECT_EQ((*first)->sequence, 1u);
    EXPECT_EQ((*second)->sequence, 2u);
    auto none = w->Next(absl::Milliseconds(1));
    ASSERT_OK(none);
    EXPECT_FALSE(none->has_value());
  }
}

TEST(EventHubTest, SlowWatcherIsDroppedWithoutBlockingOthers) {
  EventHub hub(4);
  auto slow = hub.Subscribe();
  auto fast = hub.Subscribe();
  for (int i = 0; i < 10; ++i) {
    hub.Publish({NodeEvent("n" + std::to_string(i))});
    ASSERT_OK(fast->Next(absl::Seconds(1)));
  }
  EXPECT_THAT(slow->Next(absl::Seconds(1)),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("watcher fell behind")));
  EXPECT_EQ(hub.watchers(), 1u);
  EXPECT_EQ(hub.dropped(), 1u);
  hub.Unsubscribe(fast);
  EXPECT_EQ(hub.watchers(), 0u);
}

// Publishing, reading, subscribing and unsubscribing at once: every watcher
// sees every event once, in order, and listeners see each event once.
TEST(EventHubTest, ConcurrentPublishReadAndSubscribe) {
  constexpr uint64_t kEvents = 3000;
  EventHub hub(kEvents);  // no watcher here falls behind
  std::atomic<uint64_t> listened{0};
  hub.AddListener([&](const Event&) { ++listened; });
  std::vector<std::shared_ptr<EventHub::Watcher>> readers;
  for (int i = 0; i < 3; ++i) readers.push_back(hub.Subscribe());
  std::atomic<bool> published{false};
  std::vector<std::thread> threads;
  for (const auto& w : readers) {
    threads.emplace_back([w] {
      for (uint64_t next = 1; next <= kEvents; ++next) {
        absl::StatusOr<std::optional<Event>> e = w->Next(absl::Seconds(30));
        ASSERT_OK(e);
        ASSERT_TRUE(e->has_value()) << "waiting for event " << next;
        ASSERT_EQ((*e)->sequence, next);
      }
    });
  }
  // Watchers come and go while events flow, and another thread counts them.
  threads.emplace_back([&] {
    while (!published.load()) {
      auto w = hub.Subscribe();
      EXPECT_OK(w->Next(absl::ZeroDuration()));
      hub.Unsubscribe(w);
    }
  });
  threads.emplace_back([&] {
    while (!published.load()) {
      EXPECT_EQ(hub.dropped(), 0u);
      EXPECT_GE(hub.watchers(), readers.size());
    }
  });
  for (uint64_t first = 1; first <= kEvents; first += 10) {
    std::vector<Event> batch;
    for (uint64_t s = first; s < first + 10 && s <= kEvents; ++s) {
      batch.push_back(NodeEvent("n", s));
    }
    hub.Publish(std::move(batch));
  }
  published = true;
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(listened.load(), kEvents);
  EXPECT_EQ(hub.watchers(), readers.size());
}

Event AllocationEvent(const std::string& id, const std::string& tenant,
                      const std::vector<std::string>& nodes,
                      uint64_t sequence) {
  Event e{Event::Type::kAllocated,
          absl::UnixEpoch(),
          {},
          nodes.front(),
          "",
          sequence};
  e.allocation.id = id;
  e.allocation.request_id = "req-" + id;
  e.allocation.tenant = tenant;
  for (const std::string& n : nodes) {
    e.allocation.devices.push_back(AllocatedDevice{n, "GPU-" + n, "", ""});
  }
  return e;
}

// The sequence numbers a watcher has waiting.
std::vector<uint64_t> Sequences(EventHub::Watcher& w) {
  std::vector<uint64_t> out;
  for (;;) {
    absl::StatusOr<std::shared_ptr<const Event>> e = w.TryNext();
    EXPECT_OK(e);
    if (!e.ok() || *e == nullptr) return out;
    out.push_back((*e)->sequence);
  }
}

// Each filter field narrows what a watcher gets; catalog events carry no
// tenant or request; a node filter sees every host of a multi-host allocation.
TEST(EventHubTest, FiltersSelectEvents) {
  EventHub hub(64);
  auto all = hub.Subscribe();
  auto tenant_a = hub.Subscribe({.tenant = "a"});
  auto request = hub.Subscribe({.request_id = "req-x2"});
  auto node_n2 = hub.Subscribe({.node = "n2"});
  auto tenant_a_on_n1 = hub.Subscribe({.tenant = "a", .node = "n1"});
  auto nobody = hub.Subscribe({.tenant = "b", .request_id = "req-x1"});
  hub.Publish({AllocationEvent("x1", "a", {"n1"}, 1),
               AllocationEvent("x2", "b", {"n1", "n2"}, 2), NodeEvent("n2", 3),
               NodeEvent("n1", 4), AllocationEvent("x3", "a", {"n2"}, 5)});
  EXPECT_THAT(Sequences(*all), testing::ElementsAre(1, 2, 3, 4, 5));
  EXPECT_THAT(Sequences(*tenant_a), testing::ElementsAre(1, 5));
  EXPECT_THAT(Sequences(*request), testing::ElementsAre(2));
  EXPECT_THAT(Sequences(*node_n2), testing::ElementsAre(2, 3, 5));
  EXPECT_THAT(Sequences(*tenant_a_on_n1), testing::ElementsAre(1));
  EXPECT_THAT(Sequences(*nobody), testing::IsEmpty());
  EXPECT_EQ(hub.watchers(), 6u);
  for (const auto& w :
       {all, tenant_a, request, node_n2, tenant_a_on_n1, nobody}) {
    hub.Unsubscribe(w);
  }
  EXPECT_EQ(hub.watchers(), 0u);
}

// A watcher read without a thread: quiet until its first TryNext, then called
// back once when something arrives after it found nothing, never after
// Unsubscribe.
TEST(EventHubTest, ReadyCallbackAfterTryNextFindsNothing) {
  EventHub hub(64);
  int calls = 0;
  auto w = hub.Subscribe({}, [&] { ++calls; });
  hub.Publish({NodeEvent("a", 1)});
  EXPECT_EQ(calls, 0) << "no callback before the first TryNext";
  EXPECT_THAT(Sequences(*w), testing::ElementsAre(1));  // armed at the end
  hub.Publish({NodeEvent("b", 2), NodeEvent("c", 3)});
  hub.Publish({NodeEvent("d", 4)});
  EXPECT_EQ(calls, 1) << "once until the reader finds nothing again";
  EXPECT_THAT(Sequences(*w), testing::ElementsAre(2, 3, 4));
  hub.Publish({NodeEvent("e", 5)});
  EXPECT_EQ(calls, 2);
  hub.Unsubscribe(w);
  EXPECT_THAT(Sequences(*w), testing::ElementsAre(5));
  hub.Publish({NodeEvent("f", 6)});
  EXPECT_EQ(calls, 2);
  EXPECT_THAT(Sequences(*w), testing::IsEmpty());
}

// A reader that falls behind is told through its callback too; Close ends
// every watcher, and later ones, with UNAVAILABLE.
TEST(EventHubTest, FallingBehindAndCloseEndWatchers) {
  EventHub hub(2);
  int slow_calls = 0, idle_calls = 0;
  auto slow = hub.Subscribe({}, [&] { ++slow_calls; });
  auto idle = hub.Subscribe({.tenant = "quiet"}, [&] { ++idle_calls; });
  EXPECT_THAT(Sequences(*slow), testing::IsEmpty());
  EXPECT_THAT(Sequences(*idle), testing::IsEmpty());
  hub.Publish({NodeEvent("a", 1), NodeEvent("b", 2), NodeEvent("c", 3)});
  EXPECT_EQ(slow_calls, 1);
  EXPECT_THAT(slow->TryNext(), StatusIs(absl::StatusCode::kResourceExhausted,
                                        HasSubstr("watcher fell behind")));
  EXPECT_EQ(hub.dropped(), 1u);
  EXPECT_EQ(hub.watchers(), 1u);
  hub.Close();
  EXPECT_EQ(idle_calls, 1);
  EXPECT_THAT(idle->TryNext(), StatusIs(absl::StatusCode::kUnavailable,
                                        HasSubstr("server is stopping")));
  EXPECT_EQ(hub.watchers(), 0u);
  auto late = hub.Subscribe();
  EXPECT_THAT(late->TryNext(), StatusIs(absl::StatusCode::kUnavailable,
                                        HasSubstr("server is stopping")));
}

}  // namespace
}  // namespace accelsched
