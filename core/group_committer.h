// Group commit: writers enqueue their mutations and wait; one commit thread
// writes everything queued so far in one durable transaction, so throughput is
// not bounded by one fsync per request. Events are published only after their
// commit. Thread-safe.
#ifndef ACCELSCHED_CORE_GROUP_COMMITTER_H_
#define ACCELSCHED_CORE_GROUP_COMMITTER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/allocation_model.h"
#include "core/event_hub.h"
#include "core/store.h"

namespace accelsched {

class GroupCommitter {
 public:
  struct Ticket {
    bool done = false;
    absl::Status status;
  };
  struct Stats {
    uint64_t commits = 0;  // transactions
    uint64_t writes =
        0;  // enqueued writes committed (one per acknowledged call)
    uint64_t failures = 0;  // failed transactions
  };
  // Called on the commit thread after a failed transaction with its status. The
  // owner must, under the lock it enqueues under, call FailQueued and restore
  // its state from the store, since queued writes were built on the failed
  // ones.
  using FailureHandler = std::function<void(const absl::Status&)>;
  // Called after each commit with its batch size and duration (metrics).
  using CommitObserver =
      std::function<void(size_t writes, absl::Duration latency)>;

  // `store` and `hub` are not owned and must outlive this. Starts the commit
  // thread.
  GroupCommitter(Store* store, EventHub* hub, FailureHandler on_failure);
  // Commits what is queued, then stops the thread.
  ~GroupCommitter();
  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  void set_observer(CommitObserver observer);

  // Queues one write (an acknowledged call's worth of mutations) in order.
  std::shared_ptr<Ticket> Enqueue(std::vector<Mutation> mutations,
                                  std::vector<Event> events);
  // Blocks until the ticket's transaction committed or failed.
  absl::Status Wait(const std::shared_ptr<Ticket>& ticket);
  // Fails every queued, not yet taken write with `status`.
  void FailQueued(const absl::Status& status);

  Stats stats() const;

 private:
  struct Write {
    std::vector<Mutation> mutations;
    std::vector<Event> events;
    std::shared_ptr<Ticket> ticket;
  };

  void Run();
  void Finish(std::vector<Write>& batch, const absl::Status& status);

  Store* const store_;
  EventHub* const hub_;
  const FailureHandler on_failure_;

  mutable absl::Mutex mu_;
  std::vector<Write> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Stats stats_ ABSL_GUARDED_BY(mu_);
  CommitObserver observer_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_GROUP_COMMITTER_H_
