#include "storage/pg_leader_election.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "storage/pg_schema.h"

namespace accelsched {
namespace {

// Starts the lease ($2 microseconds from now, by the database's clock) and
// records this session as its holder's: its pid, with its start since pids
// are reused. Followed by the WHERE clause.
constexpr char kLeaseUpdate[] =
    "UPDATE leader_lease SET expires_at = clock_timestamp() + $2 * interval "
    "'1 microsecond', backend_pid = pg_backend_pid(), backend_start = (SELECT "
    "backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()) ";

}  // namespace

absl::StatusOr<std::unique_ptr<PgLeaderElection>> PgLeaderElection::Open(
    const std::string& uri, Options options) {
  // A takeover waits for the old leader's write transaction to end; never
  // longer than this, so that the loop keeps its pace.
  options.connection.settings.emplace_back("lock_timeout", "1s");
  ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> db,
                   PgConnection::Open(uri, options.connection));
  RETURN_IF_ERROR(PgMigrate(*db));
  return std::unique_ptr<PgLeaderElection>(
      new PgLeaderElection(std::move(db), std::move(options)));
}

absl::StatusOr<int64_t> PgLeaderElection::TryAcquire() {
  RETURN_IF_ERROR(db_->Reconnect());
  RETURN_IF_ERROR(db_->Exec("BEGIN"));
  absl::StatusOr<int64_t> epoch = TryAcquireInTransaction();
  absl::Status s = epoch.status();
  if (s.ok()) s = db_->Exec(*epoch != 0 ? "COMMIT" : "ROLLBACK");
  if (!s.ok()) {
    db_->RollbackIfOpen();
    return s;
  }
  return epoch;
}

absl::StatusOr<int64_t> PgLeaderElection::TryAcquireInTransaction() {
  // The lease row locked first: two followers trying at once take turns, and
  // the second sees the first's lease.
  ASSIGN_OR_RETURN(
      PgResult lease,
      db_->Run("SELECT l.expires_at < clock_timestamp(), NOT EXISTS (SELECT 1 "
               "FROM pg_stat_activity a WHERE a.pid = l.backend_pid AND "
               "a.backend_start = l.backend_start) FROM leader_lease l WHERE "
               "l.id = 1 FOR UPDATE",
               {}));
  if (lease.rows() != 1) {
    return absl::DataLossError(absl::StrCat("database ", db_->description(),
                                            " has no leader_lease row"));
  }
  const bool expired = lease.Bool(0, 0);
  const bool holder_gone = lease.Bool(0, 1);
  if (!expired && !holder_gone) return 0;
  // Waits for the share lock of the old leader's write in progress, if any.
  ASSIGN_OR_RETURN(
      PgResult leader,
      db_->Run("UPDATE leader SET epoch = epoch + 1, address = $1, "
               "elected_at = clock_timestamp() WHERE id = 1 RETURNING epoch",
               {options_.address}));
  if (leader.rows() != 1) {
    return absl::DataLossError(
        absl::StrCat("database ", db_->description(), " has no leader row"));
  }
  ASSIGN_OR_RETURN(const int64_t epoch, leader.Int(0, 0));
  ASSIGN_OR_RETURN(
      PgResult renewed,
      db_->Run(absl::StrCat(kLeaseUpdate, ", epoch = $1 WHERE id = 1"),
               {epoch, absl::ToInt64Microseconds(options_.lease)}));
  return epoch;
}

absl::Status PgLeaderElection::Renew(int64_t epoch) {
  RETURN_IF_ERROR(db_->Reconnect());
  // The session too: after a reconnect this is a new one.
  ASSIGN_OR_RETURN(
      PgResult r,
      db_->Run(absl::StrCat(kLeaseUpdate, "WHERE id = 1 AND epoch = $1"),
               {epoch, absl::ToInt64Microseconds(options_.lease)}));
  if (r.affected() == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("epoch ", epoch, " is no longer the leader's"));
  }
  return absl::OkStatus();
}

absl::Status PgLeaderElection::Resign(int64_t epoch) {
  RETURN_IF_ERROR(db_->Reconnect());
  return db_
      ->Run(
          "UPDATE leader_lease SET expires_at = '-infinity' WHERE id = 1 "
          "AND epoch = $1",
          {epoch})
      .status();
}

absl::StatusOr<PgLeaderElection::Leader> PgLeaderElection::Current() {
  RETURN_IF_ERROR(db_->Reconnect());
  ASSIGN_OR_RETURN(
      PgResult r,
      db_->Run("SELECT epoch, address FROM leader WHERE id = 1", {}));
  if (r.rows() != 1) {
    return absl::DataLossError(
        absl::StrCat("database ", db_->description(), " has no leader row"));
  }
  Leader leader;
  ASSIGN_OR_RETURN(leader.epoch, r.Int(0, 0));
  leader.address = r.Text(0, 1);
  return leader;
}

}  // namespace accelsched
