// Whether this server serves the scheduler, and, on PostgreSQL, the election
// loop that decides it. One server on SQLite is always the leader. Servers
// sharing a PostgreSQL database start as followers: a thread campaigns every
// retry period (storage/pg_leader_election.h); once elected it promotes the
// server (loads its state from the database) and renews the lease every
// retry period. A leader serves only within the renew deadline of the start
// of its last successful renewal, by this machine's monotonic clock: a
// follower takes over a leader whose session is gone only once that deadline
// has passed since the renewal by the database's clock, so the two never
// serve at once, and a renewal that hangs (a cut network, a frozen database)
// stops the serving, health included, on time. One that sees another epoch,
// or cannot load the state it was elected with, has lost for good and says so
// once through `lost` (after resigning, in the second case).
#ifndef ACCELSCHED_SERVICES_LEADERSHIP_H_
#define ACCELSCHED_SERVICES_LEADERSHIP_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "services/monotonic_notification.h"

namespace accelsched {

class PgLeaderElection;

class Leadership {
 public:
  struct Callbacks {
    // Called on the election thread once elected with the new epoch: loads
    // the state and fences the store. On DATA_LOSS, INVALID_ARGUMENT or
    // FAILED_PRECONDITION (a state this server cannot load, such as a type
    // its --accelerator_types lacks) the server resigns and loses; on any
    // other error it is called again a retry period later, while this server
    // stays leader.
    std::function<absl::Status(int64_t epoch)> promote;
    // Called whenever serving starts or stops, with this server's epoch (the
    // health service, metrics): from the election thread, the watch thread
    // (at the renew deadline) or a thread calling Lose. Under the
    // leadership's lock: it must not call back.
    std::function<void(bool serving, int64_t epoch)> serving;
    // Called once when another server has taken over.
    std::function<void(const std::string& why)> lost;
  };

  // The only server: serving from the start.
  Leadership();
  // A replica: a follower until elected once Start()ed. `renew_deadline`
  // must be the election's (PgLeaderElection::Options) and longer than
  // `retry_period` (Server checks both).
  Leadership(absl::Duration renew_deadline, absl::Duration retry_period,
             Callbacks callbacks);
  // Stops both threads.
  ~Leadership();
  Leadership(const Leadership&) = delete;
  Leadership& operator=(const Leadership&) = delete;

  // Starts campaigning through `election` on a thread of its own, and the
  // thread that ends the serving at the renew deadline.
  void Start(std::unique_ptr<PgLeaderElection> election);
  // Stops both threads (idempotent), and every callback: a leader stays
  // leader until Resign.
  void Stop();
  // After Stop, on shutdown once every write has committed: ends the lease so
  // that a follower takes over at once.
  void Resign();

  // OK when this server serves: the only one, or the leader with its state
  // loaded and its lease renewed within the renew deadline. UNAVAILABLE
  // otherwise, naming the leader's address when known.
  absl::Status Check() const;
  // Records that another server has taken over (seen here, or by a fenced
  // write): stops serving, and calls `lost` the first time. Thread-safe.
  void Lose(const std::string& why);
  bool lost() const;
  int64_t epoch() const;

 private:
  using SteadyTime = std::chrono::steady_clock::time_point;
  void Run();
  // Ends the serving when the renew deadline passes without a renewal, while
  // the election thread may be stuck in one.
  void Watch();
  // One step of the loop: campaign (returns how long to wait before the
  // next), or renew.
  absl::Duration Campaign();
  void Renew();
  void Promote(int64_t epoch);
  // Logs `error` unless it is the one logged last (a database down for a
  // minute would otherwise log it every retry period).
  void LogOnce(const absl::Status& error);
  void SetServing(bool serving) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // What the constructor fixed.
  struct Config {
    bool replicated = false;  // false: the only server
    absl::Duration renew_deadline;
    absl::Duration retry_period;
  };
  // Where this server stands; every field under mu_.
  struct Term {
    int64_t epoch = 0;  // ours once elected
    bool loaded = false;
    // Up to when our last renewal holds: its start + the renew deadline, on
    // the monotonic clock (a step of the wall clock changes nothing).
    SteadyTime valid_until = SteadyTime::min();
    bool serving = false;
    bool lost = false;
    bool stopped = false;
    std::string leader_address;
    std::string last_error;
  };

  const Config config_;
  std::unique_ptr<PgLeaderElection> election_;
  Callbacks callbacks_;
  std::thread thread_;
  std::thread watch_thread_;
  // The election thread's waits, on the monotonic clock
  // (monotonic_notification.h); the watch thread waits on watch_cv_ with a
  // deadline of the monotonic clock.
  MonotonicNotification stop_;

  mutable absl::Mutex mu_;
  Term term_ ABSL_GUARDED_BY(mu_);
  // term_.valid_until, .serving or .stopped changed; waited on with mu_ held.
  std::condition_variable_any watch_cv_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_SERVICES_LEADERSHIP_H_
