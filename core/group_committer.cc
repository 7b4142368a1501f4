#include "core/group_committer.h"

#include <iterator>
#include <utility>

#include "absl/time/clock.h"

namespace accelsched {
namespace {

void Appoint(GroupCommitter::Ticket& ticket) {
  absl::MutexLock lock(&ticket.mu);
  ticket.lead = true;
}

}  // namespace

GroupCommitter::GroupCommitter(Store* store, EventHub* hub,
                               FailureHandler on_failure, size_t max_batch)
    : store_(store),
      hub_(hub),
      on_failure_(std::move(on_failure)),
      max_batch_(max_batch) {}

GroupCommitter::~GroupCommitter() {
  // Drain: wait for a running leader, then lead whatever is left.
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !leader_active_;
      };
      mu_.Await(absl::Condition(&idle));
      if (queue_.empty()) return;
      leader_active_ = true;
    }
    LeadOneBatch();
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
  if (!leader_active_) {
    // Nobody is committing: this write's waiter leads.
    leader_active_ = true;
    Appoint(*ticket);
  }
  queue_.push_back(Write{std::move(mutations), std::move(events), ticket});
  return ticket;
}

absl::Status GroupCommitter::Wait(const std::shared_ptr<Ticket>& ticket) {
  for (;;) {
    {
      absl::MutexLock lock(&ticket->mu);
      auto woken = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(ticket->mu) {
        return ticket->done || ticket->lead;
      };
      ticket->mu.Await(absl::Condition(&woken));
      if (ticket->done) return ticket->status;
      ticket->lead = false;
    }
    LeadOneBatch();
  }
}

void GroupCommitter::FailQueued(const absl::Status& status) {
  std::vector<Write> queued;
  {
    absl::MutexLock lock(&mu_);
    queued.assign(std::make_move_iterator(queue_.begin()),
                  std::make_move_iterator(queue_.end()));
    queue_.clear();
  }
  Finish(queued, status);
}

GroupCommitter::Stats GroupCommitter::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void GroupCommitter::Finish(std::vector<Write>& batch,
                            const absl::Status& status) {
  for (Write& w : batch) {
    absl::MutexLock lock(&w.ticket->mu);
    w.ticket->status = status;
    w.ticket->done = true;
  }
}

void GroupCommitter::LeadOneBatch() {
  std::vector<Write> batch;
  uint64_t sequence;
  {
    absl::MutexLock lock(&mu_);
    sequence = last_sequence_;
    const size_t n =
        max_batch_ == 0 ? queue_.size() : std::min(max_batch_, queue_.size());
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
  absl::MutexLock lock(&mu_);
  if (queue_.empty()) {
    leader_active_ = false;
  } else {
    Appoint(*queue_.front().ticket);
  }
}

}  // namespace accelsched
