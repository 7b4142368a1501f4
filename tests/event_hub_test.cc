#include "core/event_hub.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::HasSubstr;

Event NodeEvent(const std::string& node) {
  return Event{
      Event::Type::kNodeRegistered, absl::UnixEpoch(), {}, node, "", 0};
}

TEST(EventHubTest, EveryWatcherGetsEveryEventInOrder) {
  EventHub hub(8);
  auto w1 = hub.Subscribe();
  auto w2 = hub.Subscribe();
  hub.Publish({NodeEvent("a"), NodeEvent("b")});
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

}  // namespace
}  // namespace accelsched
