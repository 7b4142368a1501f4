#include "storage/sqlite_store.h"

#include <cstdio>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/base/status_macros.h"
#include "storage/migrations.h"
#include "storage/rows.h"

namespace accelsched {

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(
    const std::string& path, const Options& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path));
  RETURN_IF_ERROR(Migrate(*db, SchemaMigrations()));
  if (options.max_pages > 0) {
    // A PRAGMA takes no bound parameters; the value is an integer.
    RETURN_IF_ERROR(db->Exec(
        absl::StrCat("PRAGMA max_page_count = ", options.max_pages).c_str()));
  }
  // Checkpoints would otherwise run inside whichever commit crosses the WAL
  // threshold, stalling every caller in that group; a second connection does
  // them instead.
  RETURN_IF_ERROR(db->Exec("PRAGMA wal_autocheckpoint = 0"));
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> checkpoint_db,
                   SqliteDb::Open(path));
  std::unique_ptr<SqliteStore> store(new SqliteStore(std::move(db)));
  store->StartCheckpointer(std::move(checkpoint_db),
                           options.checkpoint_interval);
  return store;
}

void SqliteStore::StartCheckpointer(std::unique_ptr<SqliteDb> db,
                                    absl::Duration interval) {
  checkpointer_ = std::thread([this, interval, db = std::move(db)] {
    // PASSIVE never blocks the writer; it copies what it can and tries again
    // later.
    while (!stop_checkpointer_.WaitForNotificationWithTimeout(interval)) {
      absl::Status s = db->Exec("PRAGMA wal_checkpoint(PASSIVE)");
      if (!s.ok() && s.code() != absl::StatusCode::kUnavailable) {
        std::fprintf(stderr, "accelsched: WAL checkpoint: %s\n",
                     std::string(s.message()).c_str());
      }
    }
  });
}

SqliteStore::~SqliteStore() {
  stop_checkpointer_.Notify();
  if (checkpointer_.joinable()) checkpointer_.join();
}

absl::StatusOr<std::vector<Node>> SqliteStore::LoadNodes() {
  return LoadNodeRows(*db_);
}

absl::StatusOr<std::vector<StoredAllocation>> SqliteStore::LoadAllocations() {
  return LoadAllocationRows(*db_);
}

absl::StatusOr<uint64_t> SqliteStore::LoadEventSequence() {
  ASSIGN_OR_RETURN(const std::optional<uint64_t> last,
                   LoadEventSequenceRow(*db_));
  if (!last.has_value()) {
    return absl::DataLossError(absl::StrCat("database \"", db_->path(),
                                            "\" has no event sequence row"));
  }
  return *last;
}

absl::Status SqliteStore::Apply(absl::Span<const Mutation> mutations) {
  Transaction txn(db_.get());
  RETURN_IF_ERROR(txn.begin_status());
  absl::Status s;
  for (const Mutation& m : mutations) {
    s = WriteMutationRows(m, *db_);
    if (!s.ok()) break;
  }
  if (s.ok()) s = txn.Commit();
  if (s.ok()) return s;
  if (absl::Status undo = txn.Rollback(); !undo.ok()) {
    return absl::Status(
        s.code(), absl::StrCat(s.message(), "; rollback: ", undo.message()));
  }
  return s;
}

}  // namespace accelsched
