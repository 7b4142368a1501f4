// Group commit on its own: many writers, one transaction at a time, events
// numbered by the commit that records them, failures told to every writer
// queued behind them.
#include "core/commit/group_committer.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/fake_store.h"
#include "tests/support/status_matchers.h"

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

// Every test runs with a leader on the writers' threads and with a committer
// thread.
class GroupCommitterTest : public testing::TestWithParam<GroupCommitter::Mode> {
 protected:
  // The owner's duty on failure (see FailureHandler): fail the queue.
  std::unique_ptr<GroupCommitter> NewCommitter(size_t max_batch = 0) {
    return std::make_unique<GroupCommitter>(
        &store_, &hub_,
        [this](const absl::Status& s) {
          ++failures_;
          committer_->FailQueued(s);
        },
        GroupCommitter::Options{GetParam(), max_batch});
  }

  // Queues the write of node `name` under `mu`, the owner's lock, which
  // orders queueing as the scheduler's does, and notes `name` in `queued`.
  std::shared_ptr<GroupCommitter::Ticket> QueueUnder(
      absl::Mutex& mu, std::vector<std::string>& queued,
      const std::string& name) {
    auto [mutations, events] = NodeWrite(name);
    absl::MutexLock lock(&mu);
    queued.push_back(name);
    return committer_->Enqueue(std::move(mutations), std::move(events));
  }

  FakeStore store_;
  EventHub hub_{1 << 20};
  std::atomic<int> failures_{0};
  std::unique_ptr<GroupCommitter> committer_ = NewCommitter();
};

TEST_P(GroupCommitterTest, ConcurrentWritersCommitInBatchesWithNumberedEvents) {
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
TEST_P(GroupCommitterTest, FailedCommitFailsEveryWriterAndKeepsNumbering) {
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

TEST_P(GroupCommitterTest, CappedBatchIsOneWritePerTransaction) {
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
TEST_P(GroupCommitterTest, WritesWithoutEventsLeaveTheSequence) {
  Node n;
  n.name = "quiet";
  std::vector<Mutation> mutations;
  mutations.push_back(PutNodeMutation{n});
  ASSERT_OK(committer_->Wait(committer_->Enqueue(std::move(mutations), {})));
  EXPECT_EQ(*store_.LoadEventSequence(), 0u);
  EXPECT_EQ(store_.nodes().size(), 1u);
}

// Writers that do not wait: each queues, hands a completion over, flushes and
// goes on (as the gRPC handlers do). Every completion runs once, with its
// write committed.
TEST_P(GroupCommitterTest, CompletionsRunOnceWithoutWaiters) {
  constexpr int kThreads = 4;
  constexpr int kWrites = 200;
  store_.set_commit_delay(absl::Microseconds(300));
  absl::Mutex mu;
  std::vector<std::string> queued, completed;
  absl::Notification all_done;
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i) {
        const std::string name = absl::StrCat("w", t, "-", i);
        std::shared_ptr<GroupCommitter::Ticket> ticket =
            QueueUnder(mu, queued, name);
        committer_->OnDone(ticket, [&, name](const absl::Status& s) {
          EXPECT_OK(s);
          EXPECT_TRUE(store_.nodes().contains(name)) << name;
          absl::MutexLock lock(&mu);
          completed.push_back(name);
          if (completed.size() == size_t{kThreads * kWrites}) all_done.Notify();
        });
        committer_->Flush();
      }
    });
  }
  for (std::thread& w : writers) w.join();
  all_done.WaitForNotification();
  absl::MutexLock lock(&mu);
  EXPECT_THAT(completed, testing::UnorderedElementsAreArray(queued));
  EXPECT_LT(committer_->stats().commits, uint64_t{kThreads * kWrites});
}

// Completions handed over before their batch commits run in queue order. The
// store holds every commit until all are queued and handed over.
TEST_P(GroupCommitterTest, CompletionsRunInQueueOrder) {
  constexpr int kThreads = 4;
  constexpr int kWrites = 50;
  store_.HoldCommits(true);
  absl::Mutex mu;
  std::vector<std::string> queued, completed;
  absl::BlockingCounter done(kThreads * kWrites);
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i) {
        const std::string name = absl::StrCat("w", t, "-", i);
        std::shared_ptr<GroupCommitter::Ticket> ticket =
            QueueUnder(mu, queued, name);
        committer_->OnDone(ticket, [&, name](const absl::Status& s) {
          EXPECT_OK(s);
          {
            absl::MutexLock lock(&mu);
            completed.push_back(name);
          }
          done.DecrementCount();
        });
      }
    });
  }
  for (std::thread& w : writers) w.join();
  store_.HoldCommits(false);
  committer_->Flush();
  done.Wait();
  absl::MutexLock lock(&mu);
  EXPECT_EQ(completed, queued);
}

// A completion may queue another write and flush: it is committed too, and
// nothing deadlocks.
TEST_P(GroupCommitterTest, CompletionMayQueueAnotherWrite) {
  absl::Notification second_done;
  auto [mutations, events] = NodeWrite("first");
  auto first = committer_->Enqueue(std::move(mutations), std::move(events));
  committer_->OnDone(first, [&](const absl::Status& s) {
    EXPECT_OK(s);
    auto [m, e] = NodeWrite("second");
    auto second = committer_->Enqueue(std::move(m), std::move(e));
    committer_->OnDone(second, [&](const absl::Status& s2) {
      EXPECT_OK(s2);
      second_done.Notify();
    });
    committer_->Flush();
  });
  committer_->Flush();
  second_done.WaitForNotification();
  EXPECT_EQ(store_.nodes().size(), 2u);
  // A completion handed over after the commit runs at once, on this thread.
  bool ran = false;
  committer_->OnDone(first, [&](const absl::Status& s) {
    EXPECT_OK(s);
    ran = true;
  });
  EXPECT_TRUE(ran);
}

// Writes queued behind a failed one fail with it, completions included, even
// though the store would take them by then: they were built on the failed
// one (the owner restores its state from the store before anyone is told).
TEST_P(GroupCommitterTest, WritesQueuedBehindAFailureFailWithIt) {
  // The first commit waits at the store until all are queued behind it.
  store_.HoldCommits(true);
  store_.FailWrites(absl::DataLossError("disk gone"));
  committer_ = std::make_unique<GroupCommitter>(
      &store_, &hub_,
      [this](const absl::Status& s) {
        ++failures_;
        store_.FailWrites(absl::OkStatus());
        committer_->FailQueued(s);
      },
      GroupCommitter::Options{GetParam(), /*max_batch=*/1});
  constexpr int kWrites = 20;
  absl::BlockingCounter completed(kWrites);
  std::vector<absl::Status> outcome(kWrites);
  for (int i = 0; i < kWrites; ++i) {
    auto [mutations, events] = NodeWrite(absl::StrCat("n", i));
    committer_->OnDone(
        committer_->Enqueue(std::move(mutations), std::move(events)),
        [&, i](const absl::Status& s) {
          outcome[i] = s;
          completed.DecrementCount();
        });
  }
  store_.HoldCommits(false);
  committer_->Flush();
  completed.Wait();
  for (const absl::Status& s : outcome) {
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kDataLoss,
                            testing::HasSubstr("disk gone")));
  }
  EXPECT_EQ(failures_.load(), 1);
  EXPECT_TRUE(store_.nodes().empty());
  EXPECT_EQ(committer_->stats().commits, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, GroupCommitterTest,
    testing::Values(GroupCommitter::Mode::kLeader,
                    GroupCommitter::Mode::kThread),
    [](const testing::TestParamInfo<GroupCommitter::Mode>& info) {
      return info.param == GroupCommitter::Mode::kLeader ? "Leader" : "Thread";
    });

}  // namespace
}  // namespace accelsched
