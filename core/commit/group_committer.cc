#include "core/commit/group_committer.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/time/clock.h"

namespace accelsched {

GroupCommitter::GroupCommitter(Store* store, EventHub* hub,
                               FailureHandler on_failure, Options options)
    : store_(store),
      hub_(hub),
      on_failure_(std::move(on_failure)),
      options_(options) {
  if (options_.mode == Mode::kThread) thread_ = std::thread([this] { Run(); });
}

GroupCommitter::~GroupCommitter() {
  if (thread_.joinable()) {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    thread_.join();  // it commits what is queued before it stops
    return;
  }
  // kLeader: let a leader at work finish, then lead whatever is left.
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !committing_;
      };
      mu_.Await(absl::Condition(&idle));
      if (queue_.empty()) return;
      committing_ = true;  // taken under the same lock: no other leader
    }
    CommitOneBatch();
    absl::MutexLock lock(&mu_);
    committing_ = false;
  }
}

void GroupCommitter::set_observer(CommitObserver observer) {
  absl::MutexLock lock(&mu_);
  observer_ = std::move(observer);
}

void GroupCommitter::set_last_event_sequence(uint64_t sequence) {
  absl::MutexLock lock(&mu_);
  last_sequence_ = sequence;
}

std::shared_ptr<GroupCommitter::Ticket> GroupCommitter::Enqueue(
    std::vector<Mutation> mutations, std::vector<Event> events) {
  auto ticket = std::make_shared<Ticket>();
  absl::MutexLock lock(&mu_);
  // kThread: the committer thread waits on a condition of queue_, which
  // absl::Mutex evaluates when this lock is released.
  queue_.push_back(Write{std::move(mutations), std::move(events), ticket});
  return ticket;
}

void GroupCommitter::Flush() {
  if (options_.mode != Mode::kLeader) return;
  {
    absl::MutexLock lock(&mu_);
    if (committing_ || queue_.empty()) return;
    committing_ = true;
  }
  for (;;) {
    CommitOneBatch();
    absl::MutexLock lock(&mu_);
    // Checked under the lock Enqueue takes: a write queued before this sees
    // is committed here; one queued after finds no leader and leads.
    if (queue_.empty()) {
      committing_ = false;
      return;
    }
  }
}

void GroupCommitter::Run() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || stopping_;
      };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // stopping, and nothing left
      committing_ = true;
    }
    CommitOneBatch();
    absl::MutexLock lock(&mu_);
    committing_ = false;
  }
}

void GroupCommitter::OnDone(const std::shared_ptr<Ticket>& ticket,
                            Completion completion) {
  absl::Status status;
  {
    absl::MutexLock lock(&ticket->mu_);
    if (!ticket->done_) {
      ticket->completions_.push_back(std::move(completion));
      return;
    }
    status = ticket->status_;
  }
  std::move(completion)(status);
}

absl::Status GroupCommitter::Wait(const std::shared_ptr<Ticket>& ticket) {
  Flush();
  absl::MutexLock lock(&ticket->mu_);
  ticket->mu_.Await(absl::Condition(&ticket->done_));
  return ticket->status_;
}

void GroupCommitter::FailQueued(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  // Their events were never committed: the next commit reuses the numbers.
  for (Write& w : queue_) failed_.writes.push_back(std::move(w));
  queue_.clear();
  failed_.status = status;
}

std::shared_ptr<GroupCommitter::Ticket> GroupCommitter::Refused(
    absl::Status status) {
  auto ticket = std::make_shared<Ticket>();
  absl::MutexLock lock(&ticket->mu_);
  ticket->status_ = std::move(status);
  ticket->done_ = true;
  return ticket;
}

GroupCommitter::Stats GroupCommitter::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void GroupCommitter::Finish(std::vector<Write>& batch,
                            const absl::Status& status) {
  for (Write& w : batch) {
    std::vector<Completion> completions;
    {
      absl::MutexLock lock(&w.ticket->mu_);
      w.ticket->status_ = status;
      w.ticket->done_ = true;
      completions.swap(w.ticket->completions_);
    }
    for (Completion& c : completions) std::move(c)(status);
  }
}

void GroupCommitter::CommitOneBatch() {
  std::vector<Write> batch;
  uint64_t sequence;
  {
    absl::MutexLock lock(&mu_);
    sequence = last_sequence_;
    const size_t n = options_.max_batch == 0
                         ? queue_.size()
                         : std::min(options_.max_batch, queue_.size());
    batch.assign(std::make_move_iterator(queue_.begin()),
                 std::make_move_iterator(queue_.begin() +
                                         static_cast<std::ptrdiff_t>(n)));
    queue_.erase(queue_.begin(),
                 queue_.begin() + static_cast<std::ptrdiff_t>(n));
  }
  std::vector<Mutation> all;
  const uint64_t before = sequence;
  for (Write& w : batch) {
    for (Mutation& m : w.mutations) all.push_back(std::move(m));
    for (Event& e : w.events) e.sequence = ++sequence;
  }
  if (sequence != before) all.push_back(PutEventSequenceMutation{sequence});
  absl::Status status = absl::OkStatus();
  absl::Duration latency;
  if (!all.empty()) {
    const absl::Time start = absl::Now();
    status = store_->Apply(all);
    latency = absl::Now() - start;
  }
  CommitObserver observer;
  {
    absl::MutexLock lock(&mu_);
    if (status.ok()) {
      ++stats_.commits;
      stats_.writes += batch.size();
      last_sequence_ = sequence;
      observer = observer_;
    } else {
      ++stats_.failures;
    }
  }
  if (!status.ok()) {
    // Restore the owner's state before anyone is told, so that no caller can
    // act on what was never written.
    on_failure_(status);
  } else {
    if (observer) observer(batch.size(), latency);
    std::vector<Event> events;
    for (Write& w : batch) {
      for (Event& e : w.events) events.push_back(std::move(e));
    }
    if (!events.empty()) hub_->Publish(std::move(events));
  }
  Finish(batch, status);
  Failed failed;
  {
    absl::MutexLock lock(&mu_);
    failed.writes.swap(failed_.writes);
    failed.status = failed_.status;
  }
  Finish(failed.writes, failed.status);
}

}  // namespace accelsched
