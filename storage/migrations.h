// Versioned schema: an ordered list of migrations, applied on open. PRAGMA
// user_version holds the version a file is at.
#ifndef ACCELSCHED_STORAGE_MIGRATIONS_H_
#define ACCELSCHED_STORAGE_MIGRATIONS_H_

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "storage/sqlite_db.h"

namespace accelsched {

struct Migration {
  int version;      // the schema version after this step; the list counts 1,
                    // 2, 3, ...
  const char* sql;  // run in one transaction with the version bump
};

// The schema this build writes.
absl::Span<const Migration> SchemaMigrations();

// Brings `db` to the last version in `migrations`: a fresh file gets every
// step, an older one the steps it lacks. A file newer than the list is
// FAILED_PRECONDITION and untouched. Migrations run with foreign keys off, so
// that a table can be rebuilt (SQLite's documented procedure for schema
// changes ALTER TABLE cannot make); each is checked with foreign_key_check
// before it commits, and foreign keys are on again afterwards.
absl::Status Migrate(SqliteDb& db, absl::Span<const Migration> migrations);

// The file's PRAGMA user_version.
absl::StatusOr<int> SchemaVersion(SqliteDb& db);

}  // namespace accelsched

#endif  // ACCELSCHED_STORAGE_MIGRATIONS_H_
