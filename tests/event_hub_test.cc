#include "core/event_hub.h"

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/status_matchers.h"

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

}  // namespace
}  // namespace accelsched
