// The SQLite implementation of core's Store. Owns its connection, and a second
// one on which a background thread checkpoints the WAL. Not thread-safe, as the
// Store contract allows: its caller serialises Load* and Apply.
#ifndef ACCELSCHED_STORAGE_SQLITE_STORE_H_
#define ACCELSCHED_STORAGE_SQLITE_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "core/commit/store.h"
#include "storage/sqlite_db.h"

namespace accelsched {

class SqliteStore final : public Store {
 public:
  struct Options {
    // > 0 caps the database's size in pages (SQLite's max_page_count): writes
    // beyond it fail with RESOURCE_EXHAUSTED and change nothing.
    int64_t max_pages = 0;
    // How often the WAL is copied back into the database, off the commit path.
    absl::Duration checkpoint_interval = absl::Milliseconds(200);
  };

  // Opens or creates `path` and migrates it to the current schema. Errors as
  // SqliteDb::Open and Migrate.
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(
      const std::string& path, const Options& options);
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(
      const std::string& path) {
    return Open(path, Options());
  }
  // Stops the checkpointer; the connection's close checkpoints what is left.
  ~SqliteStore() override;

  absl::StatusOr<std::vector<Node>> LoadNodes() override;
  absl::StatusOr<std::vector<StoredAllocation>> LoadAllocations() override;
  absl::StatusOr<uint64_t> LoadEventSequence() override;
  absl::Status Apply(absl::Span<const Mutation> mutations) override;

  SqliteDb& db() { return *db_; }

 private:
  explicit SqliteStore(std::unique_ptr<SqliteDb> db) : db_(std::move(db)) {}
  // Copies the WAL back into the database from a second connection, off the
  // commit path, every `interval`.
  void StartCheckpointer(std::unique_ptr<SqliteDb> db, absl::Duration interval);

  std::unique_ptr<SqliteDb> db_;
  absl::Notification stop_checkpointer_;
  std::thread checkpointer_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_STORAGE_SQLITE_STORE_H_
