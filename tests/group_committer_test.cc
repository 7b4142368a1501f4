// Group commit on its own: many writers, one transaction at a time, events
// numbered by the commit that records them, failures told to every writer
// queued behind them.
#include "core/group_committer.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fake_store.h"
#include "tests/status_matchers.h"

namespace accelsched {
namespace {

// One write: a node registration and its event.
std::pair<std::vector<Mutation>, std::vector<Event>> NodeWrite(
    const std::string& name) {
  Node n;
  n.name = name;
  std::vector<Mutation> mutations;
  mutations.push_back(PutNodeMutation{n});
  return {
      std::move(mutations),
      {Event{
          Event::Type::kNodeRegistered, absl::UnixEpoch(), {}, name, "", 0}}};
}

absl::Status Write(GroupCommitter& c, const std::string& name) {
  auto [mutations, events] = NodeWrite(name);
  return c.Wait(c.Enqueue(std::move(mutations), std::move(events)));
}

// Every event waiting for `watcher` now.
std::vector<Event> Drain(EventHub::Watcher& watcher) {
  std::vector<Event> out;
  for (;;) {
    absl::StatusOr<std::optional<Event>> e = watcher.Next(absl::ZeroDuration());
    EXPECT_OK(e);
    if (!e.ok() || !e->has_value()) return out;
    out.push_back(**e);
  }
}

class GroupCommitterTest : public testing::Test {
 protected:
  // The owner's duty on failure (see FailureHandler): fail the queue.
  std::unique_ptr<GroupCommitter> NewCommitter(size_t max_batch = 0) {
    return std::make_unique<GroupCommitter>(
        &store_, &hub_,
        [this](const absl::Status& s) {
          ++failures_;
          committer_->FailQueued(s);
        },
        max_batch);
  }

  FakeStore store_;
  EventHub hub_{1 << 20};
  std::atomic<int> failures_{0};
  std::unique_ptr<GroupCommitter> committer_ = NewCommitter();
};

TEST_F(GroupCommitterTest, ConcurrentWritersCommitInBatchesWithNumberedEvents) {
  constexpr int kThreads = 8;
  constexpr int kWrites = 100;
  store_.set_commit_delay(absl::Microseconds(300));  // like an fsync
  committer_->set_last_event_sequence(41);
  auto watcher = hub_.Subscribe();
  std::atomic<bool> done{false};
  // Reads the stats while writers commit.
  std::thread reader([&] {
    uint64_t last = 0;
    while (!done.load()) {
      const GroupCommitter::Stats stats = committer_->stats();
      EXPECT_GE(stats.writes, last);
      last = stats.writes;
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i) {
        EXPECT_OK(Write(*committer_, absl::StrCat("w", t, "-", i)));
      }
    });
  }
  for (std::thread& w : writers) w.join();
  done = true;
  reader.join();

  const std::vector<Event> events = Drain(*watcher);
  ASSERT_EQ(events.size(), size_t{kThreads * kWrites});
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].sequence, 42 + i);
  }
  EXPECT_EQ(*store_.LoadEventSequence(), 41u + kThreads * kWrites);
  EXPECT_EQ(store_.nodes().size(), size_t{kThreads * kWrites});
  const GroupCommitter::Stats stats = committer_->stats();
  EXPECT_EQ(stats.writes, uint64_t{kThreads * kWrites});
  EXPECT_LT(stats.commits, stats.writes);  // writes shared transactions
  EXPECT_EQ(stats.commits, static_cast<uint64_t>(store_.transactions()));
  EXPECT_EQ(stats.failures, 0u);
}

// A failed transaction fails its writers and every write queued behind it;
// event numbers are not used up by it.
TEST_F(GroupCommitterTest, FailedCommitFailsEveryWriterAndKeepsNumbering) {
  auto watcher = hub_.Subscribe();
  ASSERT_OK(Write(*committer_, "first"));
  store_.FailWrites(absl::UnavailableError("disk gone"));
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        EXPECT_THAT(Write(*committer_, absl::StrCat("w", t, "-", i)),
                    StatusIs(absl::StatusCode::kUnavailable,
                             testing::HasSubstr("disk gone")));
      }
    });
  }
  for (std::thread& w : writers) w.join();
  EXPECT_GE(failures_.load(), 1);
  store_.FailWrites(absl::OkStatus());
  ASSERT_OK(Write(*committer_, "after"));
  const std::vector<Event> events = Drain(*watcher);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].node, "first");
  EXPECT_EQ(events[0].sequence, 1u);
  EXPECT_EQ(events[1].node, "after");
  EXPECT_EQ(events[1].sequence, 2u);
  EXPECT_EQ(store_.nodes().size(), 2u);
}

TEST_F(GroupCommitterTest, CappedBatchIsOneWritePerTransaction) {
  committer_ = NewCommitter(/*max_batch=*/1);
  store_.set_commit_delay(absl::Microseconds(300));
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        EXPECT_OK(Write(*committer_, absl::StrCat("w", t, "-", i)));
      }
    });
  }
  for (std::thread& w : writers) w.join();
  const GroupCommitter::Stats stats = committer_->stats();
  EXPECT_EQ(stats.writes, 80u);
  EXPECT_EQ(stats.commits, 80u);
}

// Writes with no events record no sequence.
TEST_F(GroupCommitterTest, WritesWithoutEventsLeaveTheSequence) {
  Node n;
  n.name = "quiet";
  std::vector<Mutation> mutations;
  mutations.push_back(PutNodeMutation{n});
  ASSERT_OK(committer_->Wait(committer_->Enqueue(std::move(mutations), {})));
  EXPECT_EQ(*store_.LoadEventSequence(), 0u);
  EXPECT_EQ(store_.nodes().size(), 1u);
}

}  // namespace
}  // namespace accelsched
