// Leader election on the database itself, for servers sharing one PostgreSQL
// database: a leader row with an epoch, and a lease the holder renews. No
// consensus of our own: PostgreSQL's row locks and transactions decide.
//
// A server takes over when the holder's lease has run out (by the database's
// clock, so the servers' clocks do not matter) or at once when the holder's
// session is gone (a process killed: its backend exits). Taking over raises
// the epoch, and PgStore fences every write on it: a takeover waits for the
// old leader's write in progress, and after it nothing the old leader sends
// commits. Not thread-safe: one thread campaigns and renews.
#ifndef ACCELSCHED_STORAGE_PG_LEADER_ELECTION_H_
#define ACCELSCHED_STORAGE_PG_LEADER_ELECTION_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "storage/pg_connection.h"

namespace accelsched {

class PgLeaderElection {
 public:
  struct Options {
    // What followers tell clients: this server's gRPC address.
    std::string address;
    // How long a leader that stops renewing stays leader.
    absl::Duration lease = absl::Seconds(10);
    PgConnection::Options connection;
  };
  struct Leader {
    int64_t epoch = 0;  // 0: there has never been one
    std::string address;
  };

  // Connects (its own connection: renewals never queue behind writes) and
  // migrates the schema as PgStore::Open does. Errors as PgConnection::Open
  // and PgMigrate.
  static absl::StatusOr<std::unique_ptr<PgLeaderElection>> Open(
      const std::string& uri, Options options);

  // One attempt to become leader: when the lease has run out or its holder's
  // session is gone, raises the epoch, records this server's address and
  // starts its lease, in one transaction. Returns the new epoch, or 0 when
  // the holder is still there. UNAVAILABLE when the database cannot be
  // reached or the leader row is locked beyond a second (a write of the old
  // leader in progress: try again).
  absl::StatusOr<int64_t> TryAcquire();
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

  std::unique_ptr<PgConnection> db_;
  Options options_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_STORAGE_PG_LEADER_ELECTION_H_
