// The PostgreSQL schema: versioned migrations, as storage/migrations.h is for
// SQLite, applied on open. Table schema_version holds the version a database
// is at. Several servers may open one database at once: migrations run under
// a transaction-scoped advisory lock, so exactly one applies each step.
#ifndef ACCELSCHED_STORAGE_PG_SCHEMA_H_
#define ACCELSCHED_STORAGE_PG_SCHEMA_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/pg_connection.h"

namespace accelsched {

// The schema version this build writes.
int PgSchemaVersion();

// Brings the database to PgSchemaVersion(): a fresh one gets every step, an
// older one the steps it lacks, each in one transaction with its version.
// FAILED_PRECONDITION, touching nothing, when the database is newer than this
// build; the connection's errors otherwise.
absl::Status PgMigrate(PgConnection& db);

// PgMigrate's steps up to schema `target` only, leaving a database as a build
// of that schema did: for tests of the steps after it. Errors as PgMigrate's.
absl::Status PgMigrateTo(PgConnection& db, int target);

}  // namespace accelsched

#endif  // ACCELSCHED_STORAGE_PG_SCHEMA_H_
