#include "storage/pg_store.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "storage/pg_schema.h"
#include "storage/rows.h"

namespace accelsched {

absl::StatusOr<std::unique_ptr<PgStore>> PgStore::Open(const std::string& uri,
                                                       Options options) {
  // An acknowledged write must survive the database's crash whatever the
  // database's or the role's default (synchronous_commit = off loses the last
  // commits; https://www.postgresql.org/docs/15/wal-async-commit.html).
  options.connection.settings.emplace_back("synchronous_commit", "on");
  ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> db,
                   PgConnection::Open(uri, options.connection));
  RETURN_IF_ERROR(PgMigrate(*db));
  return std::unique_ptr<PgStore>(
      new PgStore(std::move(db), std::move(options)));
}

absl::StatusOr<std::vector<Node>> PgStore::LoadNodes() {
  RETURN_IF_ERROR(db_->Reconnect());
  return LoadNodeRows(*db_);
}

absl::StatusOr<std::vector<StoredAllocation>> PgStore::LoadAllocations() {
  RETURN_IF_ERROR(db_->Reconnect());
  return LoadAllocationRows(*db_);
}

absl::StatusOr<uint64_t> PgStore::LoadEventSequence() {
  RETURN_IF_ERROR(db_->Reconnect());
  return ReadEventSequence();
}

absl::StatusOr<uint64_t> PgStore::ReadEventSequence() {
  ASSIGN_OR_RETURN(const std::optional<uint64_t> last,
                   LoadEventSequenceRow(*db_));
  if (!last.has_value()) {
    return absl::DataLossError(absl::StrCat("database ", db_->description(),
                                            " has no event sequence row"));
  }
  return *last;
}

absl::StatusOr<StoredState> PgStore::Load() {
  RETURN_IF_ERROR(db_->Reconnect());
  // REPEATABLE READ takes its snapshot at the first SELECT and keeps it for
  // every one after (https://www.postgresql.org/docs/15/transaction-iso.html,
  // 13.2.2): a commit between two SELECTs is in neither.
  RETURN_IF_ERROR(db_->Exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
  // Building the rows between two SELECTs counts as idle in the transaction:
  // a large state would be ended by the write session's idle timeout.
  const absl::Status unlimited =
      db_->Exec("SET LOCAL idle_in_transaction_session_timeout = 0");
  absl::StatusOr<StoredState> state =
      unlimited.ok() ? ReadState() : absl::StatusOr<StoredState>(unlimited);
  if (state.ok()) {
    absl::Status committed = db_->Exec("COMMIT");
    if (!committed.ok()) state = committed;
  }
  if (!state.ok()) db_->RollbackIfOpen();
  return state;
}

absl::StatusOr<StoredState> PgStore::ReadState() {
  StoredState state;
  ASSIGN_OR_RETURN(state.event_sequence, ReadEventSequence());
  ASSIGN_OR_RETURN(state.nodes, LoadNodeRows(*db_));
  ASSIGN_OR_RETURN(state.allocations, LoadAllocationRows(*db_));
  return state;
}

void PgStore::CheckEpoch() {
  const int64_t mine = epoch_.load();
  // FOR SHARE: a takeover's UPDATE of this row waits for this transaction to
  // end, and this one, if the takeover came first, reads its epoch.
  PgConnection::Statement fence;
  fence.sql = "SELECT epoch, address FROM leader WHERE id = 1 FOR SHARE";
  fence.check = [this, mine](const PgResult& r) -> absl::Status {
    if (r.rows() != 1) {
      return absl::DataLossError(
          absl::StrCat("database ", db_->description(), " has no leader row"));
    }
    ASSIGN_OR_RETURN(const int64_t current, r.Int(0, 0));
    if (mine != 0 && current == mine) return absl::OkStatus();
    if (mine != 0 && options_.on_fenced) options_.on_fenced();
    return absl::UnavailableError(absl::StrCat(
        "this server is not the leader (its epoch ", mine, ", the database's ",
        current, "); the leader is at ", r.Text(0, 1)));
  };
  batch_.Add(std::move(fence));
}

absl::Status PgStore::Apply(absl::Span<const Mutation> mutations) {
  RETURN_IF_ERROR(db_->Reconnect());
  batch_.Clear();
  CheckEpoch();
  for (const Mutation& m : mutations) {
    // Queued: the batch's run returns the statements' errors.
    RETURN_IF_ERROR(WriteMutationRows(m, batch_));
  }
  RETURN_IF_ERROR(db_->Exec("BEGIN"));
  absl::Status s = db_->RunBatch(batch_.statements());
  batch_.Clear();
  if (s.ok()) s = db_->Exec("COMMIT");
  if (!s.ok()) db_->RollbackIfOpen();
  return s;
}

}  // namespace accelsched
