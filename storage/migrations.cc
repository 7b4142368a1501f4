#include "storage/migrations.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace accelsched {
namespace {

constexpr Migration kMigrations[] = {
    {1, R"sql(
CREATE TABLE nodes (
  name TEXT PRIMARY KEY,
  schedulable INTEGER NOT NULL,
  last_heartbeat_unix_ns INTEGER NOT NULL
);
CREATE TABLE node_labels (
  node TEXT NOT NULL REFERENCES nodes(name) ON DELETE CASCADE,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (node, key)
);
CREATE TABLE tpu_slices (
  id TEXT PRIMARY KEY,
  model TEXT NOT NULL,
  topology TEXT NOT NULL
);
CREATE TABLE devices (
  id TEXT PRIMARY KEY,
  node TEXT NOT NULL REFERENCES nodes(name) ON DELETE CASCADE,
  device_index INTEGER NOT NULL,
  device_class INTEGER NOT NULL,
  model TEXT NOT NULL,
  memory_bytes INTEGER NOT NULL,
  healthy INTEGER NOT NULL,
  mig_enabled INTEGER NOT NULL,
  tpu_slice_id TEXT REFERENCES tpu_slices(id),
  UNIQUE (node, device_index)
);
CREATE INDEX devices_by_tpu_slice ON devices(tpu_slice_id);
CREATE TABLE mig_slices (
  id TEXT PRIMARY KEY,
  device_id TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
  profile TEXT NOT NULL,
  start_slot INTEGER NOT NULL
);
CREATE INDEX mig_slices_by_device ON mig_slices(device_id);
)sql"},
    {2, R"sql(
ALTER TABLE devices ADD COLUMN removed INTEGER NOT NULL DEFAULT 0;
CREATE TABLE allocations (
  id TEXT PRIMARY KEY,
  request_id TEXT NOT NULL,
  state INTEGER NOT NULL,
  node TEXT NOT NULL,
  tenant TEXT NOT NULL,
  priority INTEGER NOT NULL,
  created_at_unix_ns INTEGER NOT NULL,
  expires_at_unix_ns INTEGER NOT NULL,
  ended_at_unix_ns INTEGER NOT NULL,
  end_reason TEXT NOT NULL,
  device_class INTEGER NOT NULL,
  model TEXT NOT NULL,
  partition TEXT NOT NULL,
  count INTEGER NOT NULL,
  hostname TEXT NOT NULL
);
CREATE TABLE allocation_devices (
  allocation_id TEXT NOT NULL REFERENCES allocations(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  node TEXT NOT NULL,
  device_id TEXT NOT NULL,
  mig_slice_id TEXT NOT NULL,
  profile TEXT NOT NULL,
  PRIMARY KEY (allocation_id, position)
);
CREATE TABLE allocation_units (
  allocation_id TEXT NOT NULL REFERENCES allocations(id) ON DELETE CASCADE,
  unit TEXT NOT NULL,
  live INTEGER NOT NULL,
  PRIMARY KEY (allocation_id, unit)
);
-- The last line of defence against double booking: a unit is in at most one live
-- allocation, whatever the code above believes.
CREATE UNIQUE INDEX live_units ON allocation_units(unit) WHERE live = 1;
)sql"},
};

}  // namespace

absl::Span<const Migration> SchemaMigrations() { return kMigrations; }

absl::StatusOr<int> SchemaVersion(SqliteDb& db) {
  ASSIGN_OR_RETURN(Statement * stmt, db.Prepare("PRAGMA user_version"));
  ASSIGN_OR_RETURN(bool row, stmt->Step());
  int version = row ? static_cast<int>(stmt->ColumnInt(0)) : 0;
  stmt->Reset();
  return version;
}

absl::Status Migrate(SqliteDb& db, absl::Span<const Migration> migrations) {
  ASSIGN_OR_RETURN(int version, SchemaVersion(db));
  const int latest = migrations.empty() ? 0 : migrations.back().version;
  if (version > latest) {
    return absl::FailedPreconditionError(absl::StrCat(
        "database \"", db.path(), "\" has schema version ", version,
        ", newer than this build's ", latest, "; run a newer accelschedd"));
  }
  for (const Migration& m : migrations) {
    if (m.version <= version) continue;
    Transaction txn(&db);
    RETURN_IF_ERROR(txn.begin_status());
    absl::Status s = db.Exec(m.sql);
    // PRAGMA takes no bound parameters; the version is a compile-time constant.
    if (s.ok())
      s = db.Exec(absl::StrCat("PRAGMA user_version = ", m.version).c_str());
    if (s.ok()) s = txn.Commit();
    if (!s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat("migrating \"", db.path(), "\" to schema ",
                                 m.version, ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace accelsched
