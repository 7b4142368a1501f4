#include "storage/pg_leader_election.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "storage/pg_schema.h"

namespace accelsched {
namespace {

// Starts the lease ($2 microseconds from now, by the database's clock), and
// the holder's renew deadline ($3 microseconds: its own, which followers
// honour whatever theirs), and records this session as its holder's: its
// pid, with its start since pids are reused. Followed by the WHERE clause
// and kReturnNow.
constexpr char kLeaseUpdate[] =
    "UPDATE leader_lease SET serves_until = clock_timestamp() + $3 * "
    "interval '1 microsecond', expires_at = clock_timestamp() + $2 * "
    "interval '1 microsecond', backend_pid = pg_backend_pid(), backend_start "
    "= (SELECT backend_start FROM pg_stat_activity WHERE pid = "
    "pg_backend_pid()) ";
// The database's clock in microseconds since the Unix epoch.
constexpr char kReturnNow[] =
    " RETURNING (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::bigint";

// The holder's session as this one sees it in pg_stat_activity, and its
// lease: expired; gone (no session with its pid and start, counting only a
// session that started after the database did: one lost in a restart of the
// database comes back and renews); past the deadline up to which it may
// serve; hidden (a session with its pid whose details this role may not
// see); that session's role and ours; microseconds until the lease ends and
// until the deadline ends (0 when not finite); its pid.
constexpr char kHolder[] =
    "SELECT l.expires_at < clock_timestamp(), (a.pid IS NULL OR "
    "(a.backend_start IS NOT NULL AND a.backend_start <> l.backend_start)) "
    "AND COALESCE(l.backend_start >= pg_postmaster_start_time(), true), "
    "l.serves_until < clock_timestamp(), a.pid IS NOT NULL AND "
    "a.backend_start IS NULL, COALESCE(a.usename::text, ''), "
    "current_user::text, CASE WHEN isfinite(l.expires_at) THEN (EXTRACT(EPOCH "
    "FROM l.expires_at - clock_timestamp()) * 1000000)::bigint ELSE 0 END, "
    "CASE WHEN isfinite(l.serves_until) THEN (EXTRACT(EPOCH FROM "
    "l.serves_until - clock_timestamp()) * 1000000)::bigint ELSE 0 END, "
    "l.backend_pid FROM leader_lease l LEFT JOIN pg_stat_activity a ON a.pid = "
    "l.backend_pid WHERE l.id = 1";

absl::Status HiddenHolderError(const PgResult& holder) {
  return absl::FailedPreconditionError(absl::StrCat(
      "the leader's database session (pid ", holder.Text(0, 8), ", role ",
      holder.Text(0, 4), ") is hidden from role ", holder.Text(0, 5),
      " in pg_stat_activity, so this server cannot tell whether the leader "
      "is alive: every replica must connect as the same role (or as a member "
      "of pg_read_all_stats)"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<PgLeaderElection>> PgLeaderElection::Open(
    const std::string& uri, Options options) {
  if (options.renew_deadline >= options.lease ||
      options.renew_deadline <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the renew deadline (", absl::FormatDuration(options.renew_deadline),
        ") must be positive and below the lease (",
        absl::FormatDuration(options.lease), ")"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> db,
                   PgConnection::Open(uri, ConnectionOptions(options)));
  RETURN_IF_ERROR(PgMigrate(*db));
  std::unique_ptr<PgLeaderElection> election(
      new PgLeaderElection(std::move(db), std::move(options)));
  RETURN_IF_ERROR(election->ReadHolder("").status());
  return election;
}

PgConnection::Options PgLeaderElection::ConnectionOptions(
    const Options& options) {
  PgConnection::Options connection = options.connection;
  // A takeover acknowledged here must survive a crash of the database, or
  // the old leader would renew an epoch that a new one already serves.
  connection.settings.emplace_back("synchronous_commit", "on");
  // A takeover waits for the old leader's write transaction to end; never
  // longer than this, so that the loop keeps its pace.
  connection.settings.emplace_back("lock_timeout", "1s");
  // A server frozen (SIGSTOP, a VM paused) inside its takeover transaction
  // holds the lease row, and after its UPDATE the leader row, which the
  // leader's renewals and writes wait for: the database ends that session,
  // well within the renew deadline, and the transaction rolls back.
  connection.settings.emplace_back(
      "idle_in_transaction_session_timeout",
      absl::StrCat(
          std::max<int64_t>(
              absl::ToInt64Milliseconds(options.renew_deadline) / 4, 1),
          "ms"));
  return connection;
}

absl::StatusOr<PgResult> PgLeaderElection::ReadHolder(absl::string_view lock) {
  ASSIGN_OR_RETURN(PgResult holder, db_->Run(absl::StrCat(kHolder, lock), {}));
  if (holder.rows() != 1) {
    return absl::DataLossError(absl::StrCat("database ", db_->description(),
                                            " has no leader_lease row"));
  }
  // A live lease whose session this role cannot see: neither gone nor alive.
  if (!holder.Bool(0, 0) && holder.Bool(0, 3)) {
    return HiddenHolderError(holder);
  }
  return holder;
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
  ASSIGN_OR_RETURN(PgResult holder, ReadHolder(" FOR UPDATE OF l"));
  const bool expired = holder.Bool(0, 0);
  const bool gone = holder.Bool(0, 1);
  const bool past_deadline = holder.Bool(0, 2);
  if (!expired && !(gone && past_deadline)) {
    ASSIGN_OR_RETURN(const int64_t lease_left_us, holder.Int(0, 6));
    ASSIGN_OR_RETURN(const int64_t deadline_left_us, holder.Int(0, 7));
    const int64_t left_us =
        gone ? std::min(lease_left_us, deadline_left_us) : lease_left_us;
    next_attempt_ = std::clamp(absl::Microseconds(left_us),
                               absl::ZeroDuration(), options_.lease);
    return 0;
  }
  // An old leader frozen in the middle of a write holds the share lock on the
  // leader row that the UPDATE below needs, idle or busy sending a batch
  // (which no idle timeout ends): its session is ended, and its transaction
  // rolls back. Its lease has run out or its session is gone, so it no longer
  // serves (services/leadership.h).
  ASSIGN_OR_RETURN(
      PgResult ended,
      db_->Run("SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE "
               "locktype = 'relation' AND relation = 'leader'::regclass AND "
               "mode = 'RowShareLock' AND granted AND pid <> pg_backend_pid() "
               "AND pid IN (SELECT pid FROM pg_stat_activity WHERE usename = "
               "current_user) "
               "AND database = (SELECT oid FROM pg_database WHERE datname = "
               "current_database())",
               {}));
  // Waits for the share lock of the old leader's write, if any, to go.
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
  RETURN_IF_ERROR(UpdateLease(", epoch = $1 WHERE id = 1", epoch).status());
  return epoch;
}

absl::Status PgLeaderElection::Renew(int64_t epoch) {
  RETURN_IF_ERROR(db_->Reconnect());
  // The session too: after a reconnect this is a new one.
  ASSIGN_OR_RETURN(PgResult r,
                   UpdateLease("WHERE id = 1 AND epoch = $1", epoch));
  if (r.rows() == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("epoch ", epoch, " is no longer the leader's"));
  }
  return absl::OkStatus();
}

absl::StatusOr<PgResult> PgLeaderElection::UpdateLease(absl::string_view where,
                                                       int64_t epoch) {
  const absl::Time sent = absl::Now();
  ASSIGN_OR_RETURN(
      PgResult r,
      db_->Run(absl::StrCat(kLeaseUpdate, where, kReturnNow),
               {epoch, absl::ToInt64Microseconds(options_.lease),
                absl::ToInt64Microseconds(options_.renew_deadline)}));
  if (options_.clock != nullptr && r.rows() == 1) {
    const absl::Time received = absl::Now();
    ASSIGN_OR_RETURN(const int64_t database_us, r.Int(0, 0));
    // The estimate is off by at most half the round trip: a sample from a
    // slow one (a stalled network, this thread descheduled) is dropped
    // unless it is the first, so the clock does not jump by half a stall.
    // The bound follows the quickest round trip seen, which forgets itself
    // by a tenth at each sample (the network may get slower for good).
    const absl::Duration round_trip = received - sent;
    best_round_trip_ = std::min(best_round_trip_ * 1.1, round_trip);
    if (!clock_set_ ||
        round_trip <= 2 * best_round_trip_ + absl::Milliseconds(1)) {
      options_.clock->set_offset(absl::FromUnixMicros(database_us) -
                                 (sent + round_trip / 2));
      clock_set_ = true;
    }
  }
  return r;
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
