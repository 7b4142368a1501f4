// Whether this server serves the scheduler, and, on PostgreSQL, the election
// loop that decides it. One server on SQLite is always the leader. Servers
// sharing a PostgreSQL database start as followers: a thread campaigns every
// retry period (storage/pg_leader_election.h); once elected it promotes the
// server (loads its state from the database) and renews the lease every
// retry period. A leader whose last renewal is older than the lease stops
// serving (another server may have taken over); one that sees another epoch
// has lost for good, and says so once through `lost`.
#ifndef ACCELSCHED_SERVICES_LEADERSHIP_H_
#define ACCELSCHED_SERVICES_LEADERSHIP_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace accelsched {

class PgLeaderElection;

class Leadership {
 public:
  struct Callbacks {
    // Called on the election thread once elected with the new epoch: fences
    // the store and loads the state. On error it is called again a retry
    // period later, while this server stays leader.
    std::function<absl::Status(int64_t epoch)> promote;
    // Called whenever serving starts or stops, with this server's epoch (the
    // health service, metrics). Under the leadership's lock: it must not call
    // back.
    std::function<void(bool serving, int64_t epoch)> serving;
    // Called once when another server has taken over.
    std::function<void(const std::string& why)> lost;
  };

  // The only server: serving from the start.
  Leadership();
  // A replica: a follower until elected once Start()ed.
  Leadership(absl::Duration lease, absl::Duration retry_period,
             Callbacks callbacks);
  // Stops the thread.
  ~Leadership();
  Leadership(const Leadership&) = delete;
  Leadership& operator=(const Leadership&) = delete;

  // Starts campaigning through `election` on a thread of its own.
  void Start(std::unique_ptr<PgLeaderElection> election);
  // Stops the thread (idempotent), and every callback: a leader stays leader
  // until Resign.
  void Stop();
  // After Stop, on shutdown once every write has committed: ends the lease so
  // that a follower takes over at once.
  void Resign();

  // OK when this server serves: the only one, or the leader with its state
  // loaded and its lease renewed within the lease. UNAVAILABLE otherwise,
  // naming the leader's address when known.
  absl::Status Check() const;
  // Records that another server has taken over (seen here, or by a fenced
  // write): stops serving, and calls `lost` the first time. Thread-safe.
  void Lose(const std::string& why);
  bool lost() const;
  int64_t epoch() const;

 private:
  void Run();
  // One step of the loop: campaign, or renew.
  void Campaign();
  void Renew();
  void Promote(int64_t epoch);
  // Logs `error` unless it is the one logged last (a database down for a
  // minute would otherwise log it every retry period).
  void LogOnce(const absl::Status& error);
  void SetServing(bool serving) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const bool replicated_;  // false: the only server
  std::unique_ptr<PgLeaderElection> election_;
  const absl::Duration lease_;
  const absl::Duration retry_period_;
  Callbacks callbacks_;
  std::thread thread_;
  absl::Notification stop_;

  mutable absl::Mutex mu_;
  int64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;  // ours once elected
  bool loaded_ ABSL_GUARDED_BY(mu_) = false;
  // The local time up to which our last renewal holds (its start + lease).
  absl::Time valid_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  bool serving_ ABSL_GUARDED_BY(mu_) = false;
  bool lost_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::string leader_address_ ABSL_GUARDED_BY(mu_);
  std::string last_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace accelsched

#endif  // ACCELSCHED_SERVICES_LEADERSHIP_H_
