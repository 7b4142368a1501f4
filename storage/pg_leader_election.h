// Leader election on the database itself, for servers sharing one PostgreSQL
// database: a leader row with an epoch, and a lease the holder renews. No
// consensus of our own: PostgreSQL's row locks and transactions decide.
//
// A server takes over when the holder's lease has run out (by the database's
// clock, so the servers' clocks do not matter), or when the holder's session
// is gone (a process killed: its backend exits) and its renew deadline has
// passed since its last renewal. A holder serves only within its renew
// deadline of its last renewal (services/leadership.h), so a server that took
// over never overlaps one that still serves, even when the old holder lives
// on and lost only its session. Sessions the database lost in a restart do
// not count as gone: their holders reconnect and renew within the lease.
//
// Taking over ends the sessions that hold locks on the leader row (an old
// leader frozen in the middle of a write: its transaction rolls back) and
// raises the epoch; PgStore fences every write on it, so after a takeover
// nothing the old leader sends commits. Every replica must connect as one
// role: the check of the holder's session needs to see it in
// pg_stat_activity. Not thread-safe: one thread campaigns and renews.
#ifndef ACCELSCHED_STORAGE_PG_LEADER_ELECTION_H_
#define ACCELSCHED_STORAGE_PG_LEADER_ELECTION_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/base/clock.h"
#include "storage/pg_connection.h"

namespace accelsched {

class PgLeaderElection {
 public:
  struct Options {
    // What followers tell clients: this server's gRPC address.
    std::string address;
    // How long a leader that stops renewing while its session lives stays
    // leader.
    absl::Duration lease = absl::Seconds(10);
    // How long after its last renewal a leader whose session is gone may
    // still serve (services/leadership.h stops it there): a takeover of a
    // gone session waits this long. Less than `lease`.
    absl::Duration renew_deadline = absl::Seconds(2);
    PgConnection::Options connection;
    // When set (not owned), given the database's clock at every renewal and
    // winning attempt: the offset of the database's clock from this machine's,
    // measured at the middle of the round trip (a sample whose round trip is
    // over twice the quickest recent one, plus a millisecond, is dropped). A
    // leader's leases are then on the clock every replica reads.
    OffsetClock* clock = nullptr;
  };
  struct Leader {
    int64_t epoch = 0;  // 0: there has never been one
    std::string address;
  };

  // Connects (its own connection: renewals never queue behind writes) and
  // migrates the schema as PgStore::Open does. Errors as PgConnection::Open
  // and PgMigrate; INVALID_ARGUMENT when renew_deadline is not below the
  // lease; FAILED_PRECONDITION when the holder's session is one this role
  // cannot see (another role's).
  static absl::StatusOr<std::unique_ptr<PgLeaderElection>> Open(
      const std::string& uri, Options options);

  // The election session's options: `options.connection` with the lock and
  // idle-in-transaction timeouts the election needs.
  static PgConnection::Options ConnectionOptions(const Options& options);

  // One attempt to become leader: when the lease has run out, or the holder's
  // session is gone and its renew deadline has passed, ends the sessions
  // holding locks on the leader row, raises the epoch, records this server's
  // address and starts its lease, in one transaction. Returns the new epoch,
  // or 0 when the holder is still there (then next_attempt() says when its
  // lease or deadline ends). UNAVAILABLE when the database cannot be reached
  // or the leader row stays locked beyond a second (try again);
  // FAILED_PRECONDITION when the holder's session belongs to a role this one
  // cannot see.
  absl::StatusOr<int64_t> TryAcquire();
  // After TryAcquire returned 0: how long until the holder's lease, or its
  // renew deadline when its session is gone, runs out by the database's
  // clock (at least zero, at most the lease).
  absl::Duration next_attempt() const { return next_attempt_; }
  // Extends the lease of `epoch` by Options::lease from now.
  // FAILED_PRECONDITION when `epoch` is no longer current (another server took
  // over); UNAVAILABLE when the database cannot be reached.
  absl::Status Renew(int64_t epoch);
  // Ends the lease of `epoch` now so that a follower takes over at once (on
  // shutdown). Not an error when `epoch` is no longer current.
  absl::Status Resign(int64_t epoch);
  // The current leader as recorded.
  absl::StatusOr<Leader> Current();

 private:
  PgLeaderElection(std::unique_ptr<PgConnection> db, Options options)
      : db_(std::move(db)), options_(std::move(options)) {}
  absl::StatusOr<int64_t> TryAcquireInTransaction();
  // The holder's row as kHolder reads it, `lock` appended to the query.
  // DATA_LOSS without the row; FAILED_PRECONDITION when the lease is live
  // and the holder's session is hidden from this role.
  absl::StatusOr<PgResult> ReadHolder(absl::string_view lock);
  // Runs the lease update with `where`, `epoch` its $1; sets
  // Options::clock from the database's time it returns.
  absl::StatusOr<PgResult> UpdateLease(absl::string_view where, int64_t epoch);

  std::unique_ptr<PgConnection> db_;
  Options options_;
  absl::Duration next_attempt_ = absl::ZeroDuration();
  // UpdateLease's clock samples.
  absl::Duration best_round_trip_ = absl::InfiniteDuration();
  bool clock_set_ = false;
};

}  // namespace accelsched

#endif  // ACCELSCHED_STORAGE_PG_LEADER_ELECTION_H_
