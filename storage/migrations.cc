#include "storage/migrations.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"

namespace accelsched {
namespace {

// FAILED_PRECONDITION naming the first row that breaks a foreign key.
absl::Status CheckForeignKeys(SqliteDb& db) {
  ASSIGN_OR_RETURN(Statement * q, db.Prepare("PRAGMA foreign_key_check"));
  ASSIGN_OR_RETURN(bool row, q->Step());
  if (!row) return absl::OkStatus();
  absl::Status s = absl::FailedPreconditionError(
      absl::StrCat("row ", q->ColumnInt(1), " of table ", q->Text(0),
                   " refers to a missing row of ", q->Text(2)));
  RETURN_IF_ERROR(q->Reset());
  return s;
}

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
    // A device kept as removed (allocated when its node stopped reporting it)
    // may share its index with the device now reported there, so the index is
    // unique among present devices only. Devices, MIG slices and units come
    // back in the order they were written. Event sequence numbers continue
    // across restarts. The rebuild follows
    // https://www.sqlite.org/lang_altertable.html
    // ("Making Other Kinds Of Table Schema Changes").
    {3, R"sql(
CREATE TABLE devices_v3 (
  id TEXT PRIMARY KEY,
  node TEXT NOT NULL REFERENCES nodes(name) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  device_index INTEGER NOT NULL,
  device_class INTEGER NOT NULL,
  model TEXT NOT NULL,
  memory_bytes INTEGER NOT NULL,
  healthy INTEGER NOT NULL,
  mig_enabled INTEGER NOT NULL,
  tpu_slice_id TEXT REFERENCES tpu_slices(id),
  removed INTEGER NOT NULL
);
INSERT INTO devices_v3 (id, node, position, device_index, device_class, model,
  memory_bytes, healthy, mig_enabled, tpu_slice_id, removed)
SELECT id, node, device_index, device_index, device_class, model,
  memory_bytes, healthy, mig_enabled, tpu_slice_id, removed FROM devices;
DROP TABLE devices;
ALTER TABLE devices_v3 RENAME TO devices;
CREATE INDEX devices_by_node ON devices(node, position);
CREATE INDEX devices_by_tpu_slice ON devices(tpu_slice_id);
CREATE UNIQUE INDEX present_devices_by_index ON devices(node, device_index)
  WHERE removed = 0;
ALTER TABLE mig_slices ADD COLUMN position INTEGER NOT NULL DEFAULT 0;
ALTER TABLE allocation_units ADD COLUMN position INTEGER NOT NULL DEFAULT 0;
CREATE TABLE event_sequence (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  last INTEGER NOT NULL CHECK (last >= 0)
);
INSERT INTO event_sequence (id, last) VALUES (1, 0);
)sql"},
    // The models a request accepted (canonical names joined by ","; empty: any
    // model of the class), the idempotency fingerprint of requests that name
    // several models or none. Every earlier allocation named exactly one.
    {4, R"sql(
ALTER TABLE allocations ADD COLUMN requested_models TEXT NOT NULL DEFAULT '';
UPDATE allocations SET requested_models = model;
)sql"},
    // The placement's input taken from each node when it is allocated
    // (core/model/allocation_model.h PlacementTarget), and the request's
    // unpartitioned flag and container. An earlier allocation gets the targets
    // a new one on its nodes would get from their labels now, with the
    // hostname stored for its first node and, where a node has no device
    // label, the model its placement showed. DROP COLUMN needs SQLite 3.35.
    {5, R"sql(
ALTER TABLE allocations ADD COLUMN unpartitioned INTEGER NOT NULL DEFAULT 0;
ALTER TABLE allocations ADD COLUMN resource_name TEXT NOT NULL DEFAULT '';
ALTER TABLE allocations ADD COLUMN container_name TEXT NOT NULL DEFAULT '';
CREATE TABLE allocation_targets (
  allocation_id TEXT NOT NULL REFERENCES allocations(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  node TEXT NOT NULL,
  hostname TEXT NOT NULL,
  device_label TEXT NOT NULL,
  mig_strategy TEXT NOT NULL,
  PRIMARY KEY (allocation_id, position)
);
INSERT INTO allocation_targets (allocation_id, position, node, hostname,
  device_label, mig_strategy)
SELECT a.id,
  (SELECT COUNT(DISTINCT o.node) FROM allocation_devices o
   WHERE o.allocation_id = a.id AND o.node < n.node),
  n.node,
  CASE WHEN n.node = a.node THEN a.hostname
    ELSE COALESCE((SELECT value FROM node_labels l WHERE l.node = n.node
                   AND l.key = 'kubernetes.io/hostname'), n.node) END,
  COALESCE((SELECT value FROM node_labels l WHERE l.node = n.node
            AND l.key = CASE WHEN a.device_class = 1
                             THEN 'cloud.google.com/gke-tpu-accelerator'
                             ELSE 'k8s.amazonaws.com/accelerator' END),
           a.model),
  COALESCE((SELECT value FROM node_labels l WHERE l.node = n.node
            AND l.key = 'nvidia.com/mig.strategy'), '')
FROM allocations a
JOIN (SELECT DISTINCT allocation_id, node FROM allocation_devices) n
  ON n.allocation_id = a.id;
ALTER TABLE allocations DROP COLUMN hostname;
)sql"},
    // Queueing: what a PENDING allocation is matched with when admitted
    // (selector, lease, gang shape), when it was admitted, and what a
    // PREEMPTED one made way for.
    {6, R"sql(
ALTER TABLE allocations ADD COLUMN admitted_at_unix_ns INTEGER NOT NULL
  DEFAULT 0;
UPDATE allocations SET admitted_at_unix_ns = created_at_unix_ns;
ALTER TABLE allocations ADD COLUMN replicas INTEGER NOT NULL DEFAULT 1;
ALTER TABLE allocations ADD COLUMN topology_key TEXT NOT NULL DEFAULT '';
ALTER TABLE allocations ADD COLUMN lease_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE allocations ADD COLUMN preempted_by TEXT NOT NULL DEFAULT '';
CREATE TABLE allocation_node_selector (
  allocation_id TEXT NOT NULL REFERENCES allocations(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (allocation_id, key)
);
)sql"},
    // The request's spellings of its models (Allocation::device_spellings),
    // whose label value propeller writes. An earlier allocation has none and
    // keeps the registry's node_label_value.
    {7, R"sql(
CREATE TABLE allocation_device_spellings (
  allocation_id TEXT NOT NULL REFERENCES allocations(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  spelling TEXT NOT NULL,
  PRIMARY KEY (allocation_id, position)
);
)sql"},
    // A node's allocatable CPU, memory and pods (Node::allocatable) and what
    // an allocation's pod needs of them (Allocation::pod_resources), each
    // optional: NULL in all three columns when absent, so that zeros stay
    // zeros. An earlier node reported none and an earlier allocation asked
    // for none: their columns stay NULL.
    {8, R"sql(
ALTER TABLE nodes ADD COLUMN allocatable_cpu_milli INTEGER;
ALTER TABLE nodes ADD COLUMN allocatable_memory_bytes INTEGER;
ALTER TABLE nodes ADD COLUMN allocatable_pods INTEGER;
ALTER TABLE allocations ADD COLUMN pod_cpu_milli INTEGER;
ALTER TABLE allocations ADD COLUMN pod_memory_bytes INTEGER;
ALTER TABLE allocations ADD COLUMN pod_pods INTEGER;
)sql"},
    // GPU sharing: how a device is shared (Device::sharing, 0 none: what
    // every earlier device was), the share a request asked for
    // (Allocation::share) and the share an allocation holds of a device
    // (AllocatedDevice::share), NULL in both columns for none: whole devices,
    // as every earlier allocation asked for and held.
    {9, R"sql(
ALTER TABLE devices ADD COLUMN sharing INTEGER NOT NULL DEFAULT 0;
ALTER TABLE allocations ADD COLUMN share_compute_milli INTEGER;
ALTER TABLE allocations ADD COLUMN share_memory_bytes INTEGER;
ALTER TABLE allocation_devices ADD COLUMN share_compute_milli INTEGER;
ALTER TABLE allocation_devices ADD COLUMN share_memory_bytes INTEGER;
)sql"},
    // How a device was shared when an allocation took its share
    // (AllocatedDevice::sharing, 0 for a whole device): its placement's
    // sharing configuration. A share stored before gets its device's mode,
    // which cannot have changed while the share held it.
    {10, R"sql(
ALTER TABLE allocation_devices ADD COLUMN sharing INTEGER NOT NULL DEFAULT 0;
UPDATE allocation_devices SET sharing = COALESCE(
  (SELECT d.sharing FROM devices d WHERE d.id = allocation_devices.device_id),
  0)
WHERE share_compute_milli IS NOT NULL;
)sql"},
    // The sharing group of a share (GpuShare::group), NULL exactly where
    // the share's other columns are; a share stored before had none ('').
    {11, R"sql(
ALTER TABLE allocations ADD COLUMN share_group TEXT;
ALTER TABLE allocation_devices ADD COLUMN share_group TEXT;
UPDATE allocations SET share_group = ''
WHERE share_compute_milli IS NOT NULL;
UPDATE allocation_devices SET share_group = ''
WHERE share_compute_milli IS NOT NULL;
)sql"},
    // Dynamic MIG re-layout: a GPU's last plan generation
    // (Device::mig_generation, 0 for every earlier device) and its plan
    // (Device::mig_plan): generation, allocation and deadline, NULL in all
    // three when none (as every earlier device has), and the planned layout's
    // slices (an empty id for one to create).
    {12, R"sql(
ALTER TABLE devices ADD COLUMN mig_generation INTEGER NOT NULL DEFAULT 0;
ALTER TABLE devices ADD COLUMN mig_plan_generation INTEGER;
ALTER TABLE devices ADD COLUMN mig_plan_allocation TEXT;
ALTER TABLE devices ADD COLUMN mig_plan_deadline_unix_ns INTEGER;
CREATE TABLE mig_plan_slices (
  device_id TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  id TEXT NOT NULL,
  profile TEXT NOT NULL,
  start_slot INTEGER NOT NULL,
  PRIMARY KEY (device_id, position)
);
)sql"},
    // Topology levels: a request's preferred_topology
    // (Allocation::preferred_topology), '' for every earlier one (its
    // required_topology is its topology_key).
    {13, R"sql(
ALTER TABLE allocations ADD COLUMN preferred_topology TEXT NOT NULL DEFAULT '';
)sql"},
    // GPU links inside a node (Device::links): none for every earlier
    // device. kind is LinkKind's number.
    {14, R"sql(
CREATE TABLE device_links (
  device_id TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  peer_device_id TEXT NOT NULL,
  kind INTEGER NOT NULL,
  link_count INTEGER NOT NULL,
  PRIMARY KEY (device_id, position)
);
)sql"},
    // How long a request expected to run (Allocation::expected_duration),
    // 0 (not given) for every earlier one.
    {15, R"sql(
ALTER TABLE allocations ADD COLUMN expected_duration_ns INTEGER NOT NULL DEFAULT 0;
)sql"},
};

// Steps every migration after `version` in `migrations`; foreign keys are off.
absl::Status MigrateFrom(SqliteDb& db, int version,
                         absl::Span<const Migration> migrations) {
  for (const Migration& m : migrations) {
    if (m.version <= version) continue;
    Transaction txn(&db);
    RETURN_IF_ERROR(txn.begin_status());
    absl::Status s = db.Exec(m.sql);
    if (s.ok()) s = CheckForeignKeys(db);
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

}  // namespace

absl::Span<const Migration> SchemaMigrations() { return kMigrations; }

absl::StatusOr<int> SchemaVersion(SqliteDb& db) {
  ASSIGN_OR_RETURN(Statement * stmt, db.Prepare("PRAGMA user_version"));
  ASSIGN_OR_RETURN(bool row, stmt->Step());
  const int version = row ? static_cast<int>(stmt->ColumnInt(0)) : 0;
  RETURN_IF_ERROR(stmt->Reset());  // also returns a failed column read
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
  if (version == latest) return absl::OkStatus();
  // The pragma is a no-op inside a transaction, so it is set around them.
  RETURN_IF_ERROR(db.Exec("PRAGMA foreign_keys = OFF"));
  absl::Status s = MigrateFrom(db, version, migrations);
  absl::Status on = db.Exec("PRAGMA foreign_keys = ON");
  return s.ok() ? on : s;
}

}  // namespace accelsched
