#include "core/group_committer.h"

#include <utility>

#include "absl/time/clock.h"

namespace accelsched {

GroupCommitter::GroupCommitter(Store* store, EventHub* hub,
                               FailureHandler on_failure)
    : store_(store), hub_(hub), on_failure_(std::move(on_failure)) {
  thread_ = std::thread([this] { Run(); });
}

GroupCommitter::~GroupCommitter() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void GroupCommitter::set_observer(CommitObserver observer) {
  absl::MutexLock lock(&mu_);
  observer_ = std::move(observer);
}

std::shared_ptr<GroupCommitter::Ticket> GroupCommitter::Enqueue(
    std::vector<Mutation> mutations, std::vector<Event> events) {
  auto ticket = std::make_shared<Ticket>();
  absl::MutexLock lock(&mu_);
  queue_.push_back(Write{std::move(mutations), std::move(events), ticket});
  return ticket;
}

absl::Status GroupCommitter::Wait(const std::shared_ptr<Ticket>& ticket) {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&ticket->done));
  return ticket->status;
}

void GroupCommitter::FailQueued(const absl::Status& status) {
  std::vector<Write> queued;
  {
    absl::MutexLock lock(&mu_);
    queued.swap(queue_);
  }
  Finish(queued, status);
}

GroupCommitter::Stats GroupCommitter::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void GroupCommitter::Finish(std::vector<Write>& batch,
                            const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  for (Write& w : batch) {
    w.ticket->status = status;
    w.ticket->done = true;
  }
}

void GroupCommitter::Run() {
  for (;;) {
    std::vector<Write> batch;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !queue_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // stopping, and everything is committed
      batch.swap(queue_);
    }
    std::vector<Mutation> all;
    for (Write& w : batch) {
      for (Mutation& m : w.mutations) all.push_back(std::move(m));
    }
    const absl::Time start = absl::Now();
    absl::Status status = store_->Apply(all);
    const absl::Duration latency = absl::Now() - start;
    CommitObserver observer;
    {
      absl::MutexLock lock(&mu_);
      if (status.ok()) {
        ++stats_.commits;
        stats_.writes += batch.size();
        observer = observer_;
      } else {
        ++stats_.failures;
      }
    }
    if (!status.ok()) {
      // Restore the owner's state before anyone is told, so that no caller can
      // act on what was never written.
      on_failure_(status);
      Finish(batch, status);
      continue;
    }
    Finish(batch, status);
    if (observer) observer(batch.size(), latency);
    std::vector<Event> events;
    for (Write& w : batch) {
      for (Event& e : w.events) events.push_back(std::move(e));
    }
    if (!events.empty()) hub_->Publish(std::move(events));
  }
}

}  // namespace accelsched
