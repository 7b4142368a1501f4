#include "storage/pg_schema.h"

#include <iterator>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"

namespace accelsched {
namespace {

struct PgMigration {
  int version;  // the schema version after this step: 1, 2, 3, ...
  const char* sql;
};

// Version 1 is SQLite's schema 6 (storage/migrations.cc) in PostgreSQL's
// types, with the leader's tables. Flags are BOOLEAN; times are Unix
// nanoseconds in BIGINT, as in SQLite, so both stores read the same values.
constexpr PgMigration kPgMigrations[] = {
    {1, R"sql(
CREATE TABLE nodes (
  name TEXT PRIMARY KEY,
  schedulable BOOLEAN NOT NULL,
  last_heartbeat_unix_ns BIGINT NOT NULL
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
  position INTEGER NOT NULL,
  device_index INTEGER NOT NULL,
  device_class INTEGER NOT NULL,
  model TEXT NOT NULL,
  memory_bytes BIGINT NOT NULL,
  healthy BOOLEAN NOT NULL,
  mig_enabled BOOLEAN NOT NULL,
  tpu_slice_id TEXT REFERENCES tpu_slices(id),
  removed BOOLEAN NOT NULL
);
CREATE INDEX devices_by_node ON devices(node, position);
CREATE INDEX devices_by_tpu_slice ON devices(tpu_slice_id);
CREATE UNIQUE INDEX present_devices_by_index ON devices(node, device_index)
  WHERE NOT removed;
CREATE TABLE mig_slices (
  id TEXT PRIMARY KEY,
  device_id TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
  profile TEXT NOT NULL,
  start_slot INTEGER NOT NULL,
  position INTEGER NOT NULL
);
CREATE INDEX mig_slices_by_device ON mig_slices(device_id);
CREATE TABLE allocations (
  id TEXT PRIMARY KEY,
  request_id TEXT NOT NULL,
  state INTEGER NOT NULL,
  node TEXT NOT NULL,
  tenant TEXT NOT NULL,
  priority INTEGER NOT NULL,
  created_at_unix_ns BIGINT NOT NULL,
  expires_at_unix_ns BIGINT NOT NULL,
  ended_at_unix_ns BIGINT NOT NULL,
  end_reason TEXT NOT NULL,
  device_class INTEGER NOT NULL,
  model TEXT NOT NULL,
  partition TEXT NOT NULL,
  count INTEGER NOT NULL,
  requested_models TEXT NOT NULL,
  unpartitioned BOOLEAN NOT NULL,
  resource_name TEXT NOT NULL,
  container_name TEXT NOT NULL,
  admitted_at_unix_ns BIGINT NOT NULL,
  replicas INTEGER NOT NULL,
  topology_key TEXT NOT NULL,
  lease_ns BIGINT NOT NULL,
  preempted_by TEXT NOT NULL
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
CREATE TABLE allocation_targets (
  allocation_id TEXT NOT NULL REFERENCES allocations(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  node TEXT NOT NULL,
  hostname TEXT NOT NULL,
  device_label TEXT NOT NULL,
  mig_strategy TEXT NOT NULL,
  PRIMARY KEY (allocation_id, position)
);
CREATE TABLE allocation_node_selector (
  allocation_id TEXT NOT NULL REFERENCES allocations(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (allocation_id, key)
);
CREATE TABLE allocation_units (
  allocation_id TEXT NOT NULL REFERENCES allocations(id) ON DELETE CASCADE,
  unit TEXT NOT NULL,
  live BOOLEAN NOT NULL,
  position INTEGER NOT NULL,
  PRIMARY KEY (allocation_id, unit)
);
-- The last line of defence against double booking: a unit is in at most one
-- live allocation, whatever the code above believes.
CREATE UNIQUE INDEX live_units ON allocation_units(unit) WHERE live;
CREATE TABLE event_sequence (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  last BIGINT NOT NULL CHECK (last >= 0)
);
INSERT INTO event_sequence (id, last) VALUES (1, 0);
-- Leader election (storage/pg_leader_election.h). `leader` holds the epoch
-- every write transaction checks (the fence); `leader_lease` what the holder
-- renews, in a row of its own so that renewals never wait for writes.
CREATE TABLE leader (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  epoch BIGINT NOT NULL,
  address TEXT NOT NULL,
  elected_at TIMESTAMPTZ
);
INSERT INTO leader (id, epoch, address) VALUES (1, 0, '');
CREATE TABLE leader_lease (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  epoch BIGINT NOT NULL,
  expires_at TIMESTAMPTZ NOT NULL,
  backend_pid INTEGER NOT NULL,
  backend_start TIMESTAMPTZ
);
INSERT INTO leader_lease (id, epoch, expires_at, backend_pid)
  VALUES (1, 0, '-infinity', 0);
)sql"},
    // Up to when the holder may serve, by the database's clock (its last
    // renewal + its renew deadline): a holder whose session is gone is taken
    // over only after that (pg_leader_election.h).
    {2, R"sql(
ALTER TABLE leader_lease
  ADD COLUMN serves_until TIMESTAMPTZ NOT NULL DEFAULT '-infinity';
)sql"},
    // SQLite's schema 7: the request's spellings of its models
    // (Allocation::device_spellings). An earlier allocation has none and keeps
    // the registry's node_label_value.
    {3, R"sql(
CREATE TABLE allocation_device_spellings (
  allocation_id TEXT NOT NULL REFERENCES allocations(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  spelling TEXT NOT NULL,
  PRIMARY KEY (allocation_id, position)
);
)sql"},
    // SQLite's schema 8: a node's allocatable CPU, memory and pods
    // (Node::allocatable) and what an allocation's pod needs of them
    // (Allocation::pod_resources), NULL in all three columns when absent. An
    // earlier node reported none and an earlier allocation asked for none.
    {4, R"sql(
ALTER TABLE nodes
  ADD COLUMN allocatable_cpu_milli BIGINT,
  ADD COLUMN allocatable_memory_bytes BIGINT,
  ADD COLUMN allocatable_pods BIGINT;
ALTER TABLE allocations
  ADD COLUMN pod_cpu_milli BIGINT,
  ADD COLUMN pod_memory_bytes BIGINT,
  ADD COLUMN pod_pods BIGINT;
)sql"},
    // SQLite's schema 9: how a device is shared (Device::sharing, 0 none),
    // the share a request asked for (Allocation::share) and the share an
    // allocation holds of a device (AllocatedDevice::share), NULL in both
    // columns for none.
    {5, R"sql(
ALTER TABLE devices ADD COLUMN sharing INTEGER NOT NULL DEFAULT 0;
ALTER TABLE allocations
  ADD COLUMN share_compute_milli BIGINT,
  ADD COLUMN share_memory_bytes BIGINT;
ALTER TABLE allocation_devices
  ADD COLUMN share_compute_milli BIGINT,
  ADD COLUMN share_memory_bytes BIGINT;
)sql"},
    // SQLite's schema 10: how a device was shared when an allocation took
    // its share (AllocatedDevice::sharing, 0 for a whole device); a share
    // stored before gets its device's mode.
    {6, R"sql(
ALTER TABLE allocation_devices ADD COLUMN sharing INTEGER NOT NULL DEFAULT 0;
UPDATE allocation_devices a SET sharing = COALESCE(
  (SELECT d.sharing FROM devices d WHERE d.id = a.device_id), 0)
WHERE a.share_compute_milli IS NOT NULL;
)sql"},
    // SQLite's schema 11: the sharing group of a share (GpuShare::group),
    // NULL exactly where the share's other columns are; '' for a share
    // stored before.
    {7, R"sql(
ALTER TABLE allocations ADD COLUMN share_group TEXT;
ALTER TABLE allocation_devices ADD COLUMN share_group TEXT;
UPDATE allocations SET share_group = ''
WHERE share_compute_milli IS NOT NULL;
UPDATE allocation_devices SET share_group = ''
WHERE share_compute_milli IS NOT NULL;
)sql"},
    // SQLite's schema 12: a GPU's last MIG plan generation
    // (Device::mig_generation), its plan (Device::mig_plan; NULL in its
    // three columns when none) and the planned layout's slices.
    {8, R"sql(
ALTER TABLE devices
  ADD COLUMN mig_generation BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN mig_plan_generation BIGINT,
  ADD COLUMN mig_plan_allocation TEXT,
  ADD COLUMN mig_plan_deadline_unix_ns BIGINT;
CREATE TABLE mig_plan_slices (
  device_id TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  id TEXT NOT NULL,
  profile TEXT NOT NULL,
  start_slot INTEGER NOT NULL,
  PRIMARY KEY (device_id, position)
);
)sql"},
    // SQLite's schema 13: a request's preferred_topology
    // (Allocation::preferred_topology), '' for every earlier one.
    {9, R"sql(
ALTER TABLE allocations
  ADD COLUMN preferred_topology TEXT NOT NULL DEFAULT '';
)sql"},
    // SQLite's schema 14: GPU links inside a node (Device::links), none for
    // every earlier device; kind is LinkKind's number.
    {10, R"sql(
CREATE TABLE device_links (
  device_id TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  peer_device_id TEXT NOT NULL,
  kind INTEGER NOT NULL,
  link_count INTEGER NOT NULL,
  PRIMARY KEY (device_id, position)
);
)sql"},
    // SQLite's schema 15: how long a request expected to run
    // (Allocation::expected_duration), 0 (not given) for every earlier one.
    {11, R"sql(
ALTER TABLE allocations
  ADD COLUMN expected_duration_ns BIGINT NOT NULL DEFAULT 0;
)sql"},
};

// Any constant: the key of the advisory lock migrations run under.
constexpr int64_t kMigrationLock = 0x616363656c736368;  // "accelsch"

}  // namespace

int PgSchemaVersion() { return std::end(kPgMigrations)[-1].version; }

absl::Status PgMigrate(PgConnection& db) {
  return PgMigrateTo(db, PgSchemaVersion());
}

absl::Status PgMigrateTo(PgConnection& db, int target) {
  for (const PgMigration& m : kPgMigrations) {
    if (m.version > target) break;
    RETURN_IF_ERROR(db.Exec("BEGIN"));
    absl::Status s = [&]() -> absl::Status {
      // Another server opening the same database waits here, then sees the
      // version it wrote.
      ASSIGN_OR_RETURN(PgResult lock, db.Run("SELECT pg_advisory_xact_lock($1)",
                                             {PgParam(kMigrationLock)}));
      RETURN_IF_ERROR(
          db.Exec("CREATE TABLE IF NOT EXISTS schema_version "
                  "(version INTEGER NOT NULL)"));
      ASSIGN_OR_RETURN(PgResult v, db.Run("SELECT COALESCE(MAX(version), 0) "
                                          "FROM schema_version",
                                          {}));
      ASSIGN_OR_RETURN(const int64_t version, v.Int(0, 0));
      if (version > PgSchemaVersion()) {
        return absl::FailedPreconditionError(
            absl::StrCat("database ", db.description(), " has schema version ",
                         version, ", newer than this build's ",
                         PgSchemaVersion(), "; run a newer accelschedd"));
      }
      if (version >= m.version) return absl::OkStatus();
      RETURN_IF_ERROR(db.Exec(m.sql));
      ASSIGN_OR_RETURN(PgResult del, db.Run("DELETE FROM schema_version", {}));
      ASSIGN_OR_RETURN(
          PgResult ins,
          db.Run("INSERT INTO schema_version (version) VALUES ($1)",
                 {PgParam(m.version)}));
      return absl::OkStatus();
    }();
    if (s.ok()) s = db.Exec("COMMIT");
    if (!s.ok()) {
      db.RollbackIfOpen();
      return absl::Status(
          s.code(), absl::StrCat("migrating ", db.description(), " to schema ",
                                 m.version, ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace accelsched
