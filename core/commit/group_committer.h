// Group commit: writers enqueue their mutations and go on; whatever is queued
// is committed in one durable transaction, and each write's completion runs
// once its transaction committed or failed. No writer waits for a commit that
// another thread does: a gRPC handler queues its write and returns its thread,
// and the committing thread finishes the call (the callback API needs exactly
// that).
//
// Who commits is the Mode:
// - kLeader (leveldb's DBImpl::Write pattern): the writer that queues into an
//   idle committer leads, on its own thread (for the server, a gRPC callback
//   thread, fsync included), and commits batch after batch until the queue is
//   empty. The serial commit path never waits for another thread to be
//   scheduled; at one caller the commit runs on the caller's thread.
// - kThread: a dedicated committer thread commits while anything is queued.
// bench/loadgen measures both (bench/README.md).
//
// Only one batch commits at a time, so Store::Apply calls are serialised, and
// batches commit in queue order: a completion handed over before its batch
// commits runs after those of every write queued before it (one handed over
// later runs at once). Events are numbered in the transaction that records
// their sequence (so numbering continues after a restart) and published once
// it committed, before its completions run (a caller told of a write can find
// its event published). Thread-safe.
#ifndef ACCELSCHED_CORE_COMMIT_GROUP_COMMITTER_H_
#define ACCELSCHED_CORE_COMMIT_GROUP_COMMITTER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/commit/event_hub.h"
#include "core/commit/store.h"
#include "core/model/allocation_model.h"

namespace accelsched {

class GroupCommitter {
 public:
  enum class Mode { kLeader, kThread };
  // Runs once with the outcome of a write's transaction.
  using Completion = absl::AnyInvocable<void(const absl::Status&) &&>;
  // One queued write's outcome and the completions waiting for it.
  class Ticket {
   private:
    friend class GroupCommitter;
    absl::Mutex mu_;
    bool done_ ABSL_GUARDED_BY(mu_) = false;
    absl::Status status_ ABSL_GUARDED_BY(mu_);
    std::vector<Completion> completions_ ABSL_GUARDED_BY(mu_);
  };
  struct Stats {
    uint64_t commits = 0;   // transactions
    uint64_t writes = 0;    // writes committed (one per acknowledged call)
    uint64_t failures = 0;  // failed transactions
  };
  struct Options {
    Mode mode = Mode::kLeader;
    // Caps the writes per transaction (0: no cap; 1: one commit per write,
    // the baseline group commit is measured against).
    size_t max_batch = 0;
  };
  // Called by the committing thread after a failed transaction, before any
  // completion runs. The owner must, under the lock it enqueues under, call
  // FailQueued and restore its state from the store, since queued writes were
  // built on the failed ones.
  using FailureHandler = std::function<void(const absl::Status&)>;
  // Called after each commit with its batch size and duration (metrics).
  using CommitObserver =
      std::function<void(size_t writes, absl::Duration latency)>;

  // `store` and `hub` are not owned and must outlive this. kThread starts the
  // committer thread here.
  GroupCommitter(Store* store, EventHub* hub, FailureHandler on_failure,
                 Options options);
  // Commits whatever is still queued, runs its completions, and stops the
  // committer thread.
  ~GroupCommitter();
  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  void set_observer(CommitObserver observer);
  // The sequence number of the last event already published (the store's);
  // the next committed event gets one more. Call before the first Enqueue,
  // and when the owner reloads from the store (from the failure handler, or
  // under its lock after FailQueued: no batch of its own is then queued).
  void set_last_event_sequence(uint64_t sequence);

  // Queues one write (an acknowledged call's worth of mutations) in order.
  // Call it under the lock that orders the owner's memory changes, then,
  // with that lock released, Flush (Wait flushes too): in kLeader mode the
  // write is not committed until someone flushes.
  std::shared_ptr<Ticket> Enqueue(std::vector<Mutation> mutations,
                                  std::vector<Event> events);
  // kLeader: unless a leader is at work, leads: commits batch after batch,
  // running their completions, until the queue is empty; then returns.
  // kThread: nothing (the committer thread is at work).
  void Flush();
  // Runs `completion` with the ticket's outcome: now, on this thread, when
  // it is done; otherwise on the committing thread once it is. Completions
  // run outside every lock of this class and may enqueue, flush and register
  // completions, but must not Wait: the commit they would wait for may be
  // queued behind them on their own thread.
  void OnDone(const std::shared_ptr<Ticket>& ticket, Completion completion);
  // Flushes, then blocks until the ticket's transaction committed or failed.
  absl::Status Wait(const std::shared_ptr<Ticket>& ticket);
  // Fails every queued, not yet taken write with `status` (from the failure
  // handler); their completions run when the handler has returned.
  void FailQueued(const absl::Status& status);
  // A ticket already done with `status` (not OK), for a write the owner
  // refuses to queue: OnDone runs at once, Wait returns `status`.
  static std::shared_ptr<Ticket> Refused(absl::Status status);

  Stats stats() const;

 private:
  struct Write {
    std::vector<Mutation> mutations;
    std::vector<Event> events;
    std::shared_ptr<Ticket> ticket;
  };

  // Takes a batch from the queue, commits it, publishes its events and runs
  // its completions. Called by the one committing thread only.
  void CommitOneBatch();
  // The committer thread's loop (kThread).
  void Run();
  static void Finish(std::vector<Write>& batch, const absl::Status& status);

  Store* const store_;
  EventHub* const hub_;
  const FailureHandler on_failure_;
  const Options options_;

  mutable absl::Mutex mu_;
  std::deque<Write> queue_ ABSL_GUARDED_BY(mu_);
  // Writes failed by FailQueued, told once the failure handler returned.
  struct Failed {
    std::vector<Write> writes;
    absl::Status status;
  };
  Failed failed_ ABSL_GUARDED_BY(mu_);
  // A thread is committing (kLeader: a leader is at work).
  bool committing_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;  // kThread: the destructor ran
  Stats stats_ ABSL_GUARDED_BY(mu_);
  CommitObserver observer_ ABSL_GUARDED_BY(mu_);
  // Advanced by the committing thread only after a commit that recorded it.
  uint64_t last_sequence_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;  // kThread only; last, started in the constructor
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_COMMIT_GROUP_COMMITTER_H_
