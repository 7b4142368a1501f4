#include "storage/sqlite_store.h"

#include <cstdio>
#include <map>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "core/base/status_macros.h"
#include "storage/migrations.h"

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
  std::map<std::string, Node> nodes;
  ASSIGN_OR_RETURN(
      Statement * q,
      db_->Prepare(
          "SELECT name, schedulable, last_heartbeat_unix_ns FROM nodes"));
  for (;;) {
    ASSIGN_OR_RETURN(bool row, q->Step());
    if (!row) break;
    Node node;
    node.name = q->ColumnText(0);
    node.schedulable = q->ColumnInt(1) != 0;
    node.last_heartbeat = absl::FromUnixNanos(q->ColumnInt(2));
    nodes.emplace(node.name, std::move(node));
  }
  ASSIGN_OR_RETURN(q, db_->Prepare("SELECT node, key, value FROM node_labels"));
  for (;;) {
    ASSIGN_OR_RETURN(bool row, q->Step());
    if (!row) break;
    nodes[q->ColumnText(0)].labels[q->ColumnText(1)] = q->ColumnText(2);
  }
  // MIG slices first, so each device is built whole in one pass. Slices
  // written before schema 3 all have position 0 and keep their old order.
  std::map<std::string, std::vector<MigSlice>> slices;
  ASSIGN_OR_RETURN(
      q,
      db_->Prepare("SELECT device_id, id, profile, start_slot FROM mig_slices "
                   "ORDER BY device_id, position, start_slot"));
  for (;;) {
    ASSIGN_OR_RETURN(bool row, q->Step());
    if (!row) break;
    slices[q->ColumnText(0)].push_back(MigSlice{
        q->ColumnText(1), q->ColumnText(2), static_cast<int>(q->ColumnInt(3))});
  }
  ASSIGN_OR_RETURN(
      q, db_->Prepare(
             "SELECT d.node, d.id, d.device_class, d.model, d.memory_bytes, "
             "d.device_index, "
             "d.healthy, d.mig_enabled, d.tpu_slice_id, t.topology, d.removed "
             "FROM devices d LEFT JOIN tpu_slices t ON t.id = d.tpu_slice_id "
             "ORDER BY d.node, d.position"));
  for (;;) {
    ASSIGN_OR_RETURN(bool row, q->Step());
    if (!row) break;
    Device d;
    d.id = q->ColumnText(1);
    d.device_class = static_cast<DeviceClass>(q->ColumnInt(2));
    d.model = q->ColumnText(3);
    d.memory_bytes = static_cast<uint64_t>(q->ColumnInt(4));
    d.index = static_cast<int>(q->ColumnInt(5));
    d.healthy = q->ColumnInt(6) != 0;
    d.mig_enabled = q->ColumnInt(7) != 0;
    d.tpu_slice_id = q->ColumnText(8);
    d.tpu_topology = q->ColumnText(9);
    d.removed = q->ColumnInt(10) != 0;
    if (auto it = slices.find(d.id); it != slices.end())
      d.mig_slices = std::move(it->second);
    nodes[q->ColumnText(0)].devices.push_back(std::move(d));
  }
  std::vector<Node> out;
  out.reserve(nodes.size());
  for (auto& [name, node] : nodes) out.push_back(std::move(node));
  return out;
}

absl::Status SqliteStore::WriteNodeRow(const Node& node) {
  ASSIGN_OR_RETURN(Statement * q,
                   db_->Prepare("INSERT INTO nodes (name, schedulable, "
                                "last_heartbeat_unix_ns) VALUES (?1, ?2, ?3) "
                                "ON CONFLICT (name) DO UPDATE SET schedulable "
                                "= ?2, last_heartbeat_unix_ns = ?3"));
  return q->Bind(1, node.name)
      .Bind(2, int64_t{node.schedulable})
      .Bind(3, absl::ToUnixNanos(node.last_heartbeat))
      .Run();
}

absl::Status SqliteStore::WriteDevices(const Node& node) {
  ASSIGN_OR_RETURN(Statement * del,
                   db_->Prepare("DELETE FROM devices WHERE node = ?1"));
  RETURN_IF_ERROR(del->Bind(1, node.name).Run());
  for (size_t i = 0; i < node.devices.size(); ++i) {
    const Device& d = node.devices[i];
    if (!d.tpu_slice_id.empty()) {
      ASSIGN_OR_RETURN(
          Statement * slice,
          db_->Prepare(
              "INSERT INTO tpu_slices (id, model, topology) VALUES (?1, ?2, "
              "?3) "
              "ON CONFLICT (id) DO UPDATE SET model = ?2, topology = ?3"));
      RETURN_IF_ERROR(slice->Bind(1, d.tpu_slice_id)
                          .Bind(2, d.canonical_model)
                          .Bind(3, d.tpu_topology)
                          .Run());
    }
    ASSIGN_OR_RETURN(
        Statement * dev,
        db_->Prepare("INSERT INTO devices (id, node, device_index, "
                     "device_class, model, memory_bytes, healthy, mig_enabled, "
                     "tpu_slice_id, removed, position) VALUES (?1, ?2, ?3, "
                     "?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"));
    RETURN_IF_ERROR(dev->Bind(1, d.id)
                        .Bind(2, node.name)
                        .Bind(3, int64_t{d.index})
                        .Bind(4, int64_t{static_cast<int>(d.device_class)})
                        .Bind(5, d.model)
                        .Bind(6, static_cast<int64_t>(d.memory_bytes))
                        .Bind(7, int64_t{d.healthy})
                        .Bind(8, int64_t{d.mig_enabled})
                        .BindOrNull(9, d.tpu_slice_id)
                        .Bind(10, int64_t{d.removed})
                        .Bind(11, static_cast<int64_t>(i))
                        .Run());
    for (size_t j = 0; j < d.mig_slices.size(); ++j) {
      const MigSlice& s = d.mig_slices[j];
      ASSIGN_OR_RETURN(
          Statement * mig,
          db_->Prepare("INSERT INTO mig_slices (id, device_id, profile, "
                       "start_slot, position) VALUES (?1, ?2, ?3, ?4, ?5)"));
      RETURN_IF_ERROR(mig->Bind(1, s.id)
                          .Bind(2, d.id)
                          .Bind(3, s.profile)
                          .Bind(4, int64_t{s.start})
                          .Bind(5, static_cast<int64_t>(j))
                          .Run());
    }
  }
  return absl::OkStatus();
}

absl::Status SqliteStore::DeleteOrphanTpuSlices() {
  ASSIGN_OR_RETURN(
      Statement * q,
      db_->Prepare(
          "DELETE FROM tpu_slices WHERE id NOT IN "
          "(SELECT tpu_slice_id FROM devices WHERE tpu_slice_id IS NOT NULL)"));
  return q->Run();
}

absl::Status SqliteStore::Write(const PutNodeMutation& m) {
  const Node& node = m.node;
  RETURN_IF_ERROR(WriteNodeRow(node));
  ASSIGN_OR_RETURN(Statement * del,
                   db_->Prepare("DELETE FROM node_labels WHERE node = ?1"));
  RETURN_IF_ERROR(del->Bind(1, node.name).Run());
  for (const auto& [key, value] : node.labels) {
    ASSIGN_OR_RETURN(Statement * ins,
                     db_->Prepare("INSERT INTO node_labels (node, key, value) "
                                  "VALUES (?1, ?2, ?3)"));
    RETURN_IF_ERROR(ins->Bind(1, node.name).Bind(2, key).Bind(3, value).Run());
  }
  RETURN_IF_ERROR(WriteDevices(node));
  return DeleteOrphanTpuSlices();
}

absl::Status SqliteStore::Write(const PutNodeStatusMutation& m) {
  const Node& node = m.node;
  ASSIGN_OR_RETURN(Statement * q,
                   db_->Prepare("UPDATE nodes SET schedulable = ?2, "
                                "last_heartbeat_unix_ns = ?3 WHERE name = ?1"));
  RETURN_IF_ERROR(q->Bind(1, node.name)
                      .Bind(2, int64_t{node.schedulable})
                      .Bind(3, absl::ToUnixNanos(node.last_heartbeat))
                      .Run());
  if (db_->changes() == 0) {
    return absl::NotFoundError(
        absl::StrCat("node \"", node.name, "\" not found"));
  }
  for (const Device& d : node.devices) {
    ASSIGN_OR_RETURN(
        q, db_->Prepare(
               "UPDATE devices SET healthy = ?3 WHERE node = ?1 AND id = ?2"));
    RETURN_IF_ERROR(
        q->Bind(1, node.name).Bind(2, d.id).Bind(3, int64_t{d.healthy}).Run());
    if (db_->changes() == 0) {
      return absl::NotFoundError(absl::StrCat(
          "device \"", d.id, "\" of node \"", node.name, "\" not found"));
    }
  }
  return absl::OkStatus();
}

absl::Status SqliteStore::Write(const DeleteNodeMutation& m) {
  ASSIGN_OR_RETURN(Statement * q,
                   db_->Prepare("DELETE FROM nodes WHERE name = ?1"));
  RETURN_IF_ERROR(q->Bind(1, m.name).Run());
  if (db_->changes() == 0) {
    return absl::NotFoundError(absl::StrCat("node \"", m.name, "\" not found"));
  }
  return DeleteOrphanTpuSlices();
}

absl::Status SqliteStore::Write(const PutAllocationMutation& m) {
  const Allocation& a = m.allocation;
  if (m.created) {
    ASSIGN_OR_RETURN(
        Statement * q,
        db_->Prepare("INSERT INTO allocations (id, request_id, state, node, "
                     "tenant, priority, created_at_unix_ns, "
                     "expires_at_unix_ns, ended_at_unix_ns, end_reason, "
                     "device_class, model, partition, count, "
                     "requested_models, unpartitioned, resource_name, "
                     "container_name, admitted_at_unix_ns, replicas, "
                     "topology_key, lease_ns, preempted_by) VALUES "
                     "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
                     "?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23)"));
    RETURN_IF_ERROR(q->Bind(1, a.id)
                        .Bind(2, a.request_id)
                        .Bind(3, int64_t{static_cast<int>(a.state)})
                        .Bind(4, a.node)
                        .Bind(5, a.tenant)
                        .Bind(6, int64_t{a.priority})
                        .Bind(7, absl::ToUnixNanos(a.created_at))
                        .Bind(8, absl::ToUnixNanos(a.expires_at))
                        .Bind(9, absl::ToUnixNanos(a.ended_at))
                        .Bind(10, a.end_reason)
                        .Bind(11, int64_t{static_cast<int>(a.device_class)})
                        .Bind(12, a.model)
                        .Bind(13, a.partition)
                        .Bind(14, int64_t{a.count})
                        .Bind(15, absl::StrJoin(a.requested_models, ","))
                        .Bind(16, int64_t{a.unpartitioned})
                        .Bind(17, a.resource_name)
                        .Bind(18, a.container_name)
                        .Bind(19, absl::ToUnixNanos(a.admitted_at))
                        .Bind(20, int64_t{a.replicas})
                        .Bind(21, a.topology_key)
                        .Bind(22, absl::ToInt64Nanoseconds(a.lease))
                        .Bind(23, a.preempted_by)
                        .Run());
    for (const auto& [key, value] : a.node_selector) {
      ASSIGN_OR_RETURN(
          Statement * selector,
          db_->Prepare("INSERT INTO allocation_node_selector (allocation_id, "
                       "key, value) VALUES (?1, ?2, ?3)"));
      RETURN_IF_ERROR(
          selector->Bind(1, a.id).Bind(2, key).Bind(3, value).Run());
    }
    for (size_t i = 0; i < a.targets.size(); ++i) {
      const PlacementTarget& t = a.targets[i];
      ASSIGN_OR_RETURN(
          Statement * target,
          db_->Prepare("INSERT INTO allocation_targets (allocation_id, "
                       "position, node, hostname, device_label, mig_strategy) "
                       "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
      RETURN_IF_ERROR(target->Bind(1, a.id)
                          .Bind(2, static_cast<int64_t>(i))
                          .Bind(3, t.node)
                          .Bind(4, t.hostname)
                          .Bind(5, t.device_label)
                          .Bind(6, t.mig_strategy)
                          .Run());
    }
    for (size_t i = 0; i < a.devices.size(); ++i) {
      const AllocatedDevice& d = a.devices[i];
      ASSIGN_OR_RETURN(
          Statement * dev,
          db_->Prepare("INSERT INTO allocation_devices (allocation_id, "
                       "position, node, device_id, mig_slice_id, profile) "
                       "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
      RETURN_IF_ERROR(dev->Bind(1, a.id)
                          .Bind(2, static_cast<int64_t>(i))
                          .Bind(3, d.node)
                          .Bind(4, d.device_id)
                          .Bind(5, d.mig_slice_id)
                          .Bind(6, d.profile)
                          .Run());
    }
  } else {
    ASSIGN_OR_RETURN(
        Statement * q,
        db_->Prepare("UPDATE allocations SET state = ?2, expires_at_unix_ns = "
                     "?3, ended_at_unix_ns = ?4, end_reason = ?5, "
                     "preempted_by = ?6 WHERE id = ?1"));
    RETURN_IF_ERROR(q->Bind(1, a.id)
                        .Bind(2, int64_t{static_cast<int>(a.state)})
                        .Bind(3, absl::ToUnixNanos(a.expires_at))
                        .Bind(4, absl::ToUnixNanos(a.ended_at))
                        .Bind(5, a.end_reason)
                        .Bind(6, a.preempted_by)
                        .Run());
    if (db_->changes() == 0) {
      return absl::NotFoundError(
          absl::StrCat("allocation \"", a.id, "\" not found"));
    }
  }
  for (size_t i = 0; i < m.units.size(); ++i) {
    ASSIGN_OR_RETURN(
        Statement * u,
        db_->Prepare("INSERT INTO allocation_units (allocation_id, unit, live, "
                     "position) VALUES (?1, ?2, ?3, ?4) ON CONFLICT "
                     "(allocation_id, unit) DO UPDATE SET live = ?3"));
    RETURN_IF_ERROR(u->Bind(1, a.id)
                        .Bind(2, m.units[i])
                        .Bind(3, int64_t{a.live()})
                        .Bind(4, static_cast<int64_t>(i))
                        .Run());
  }
  return absl::OkStatus();
}

absl::Status SqliteStore::Write(const DeleteAllocationMutation& m) {
  ASSIGN_OR_RETURN(Statement * q,
                   db_->Prepare("DELETE FROM allocations WHERE id = ?1"));
  return q->Bind(1, m.id).Run();
}

absl::Status SqliteStore::Write(const PutEventSequenceMutation& m) {
  ASSIGN_OR_RETURN(Statement * q,
                   db_->Prepare("UPDATE event_sequence SET last = ?1 "
                                "WHERE id = 1 AND last <= ?1"));
  RETURN_IF_ERROR(q->Bind(1, static_cast<int64_t>(m.last)).Run());
  if (db_->changes() == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("event sequence ", m.last, " is below the stored one"));
  }
  return absl::OkStatus();
}

absl::Status SqliteStore::Apply(absl::Span<const Mutation> mutations) {
  Transaction txn(db_.get());
  RETURN_IF_ERROR(txn.begin_status());
  absl::Status s;
  for (const Mutation& m : mutations) {
    s = std::visit([this](const auto& v) { return Write(v); }, m);
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

absl::StatusOr<uint64_t> SqliteStore::LoadEventSequence() {
  ASSIGN_OR_RETURN(
      Statement * q,
      db_->Prepare("SELECT last FROM event_sequence WHERE id = 1"));
  ASSIGN_OR_RETURN(bool row, q->Step());
  if (!row) {
    return absl::DataLossError(absl::StrCat("database \"", db_->path(),
                                            "\" has no event sequence row"));
  }
  const int64_t last = q->ColumnInt(0);
  RETURN_IF_ERROR(q->Reset());
  return static_cast<uint64_t>(last);
}

absl::StatusOr<std::vector<StoredAllocation>> SqliteStore::LoadAllocations() {
  std::map<std::string, StoredAllocation> out;
  ASSIGN_OR_RETURN(
      Statement * q,
      db_->Prepare(
          "SELECT id, request_id, state, node, tenant, priority, "
          "created_at_unix_ns, expires_at_unix_ns, ended_at_unix_ns, "
          "end_reason, device_class, model, partition, count, "
          "requested_models, unpartitioned, resource_name, container_name, "
          "admitted_at_unix_ns, replicas, topology_key, lease_ns, "
          "preempted_by FROM allocations"));
  for (;;) {
    ASSIGN_OR_RETURN(bool row, q->Step());
    if (!row) break;
    Allocation a;
    a.id = q->ColumnText(0);
    a.request_id = q->ColumnText(1);
    a.state = static_cast<AllocationState>(q->ColumnInt(2));
    a.node = q->ColumnText(3);
    a.tenant = q->ColumnText(4);
    a.priority = static_cast<int>(q->ColumnInt(5));
    a.created_at = absl::FromUnixNanos(q->ColumnInt(6));
    a.expires_at = absl::FromUnixNanos(q->ColumnInt(7));
    a.ended_at = absl::FromUnixNanos(q->ColumnInt(8));
    a.end_reason = q->ColumnText(9);
    a.device_class = static_cast<DeviceClass>(q->ColumnInt(10));
    a.model = q->ColumnText(11);
    a.partition = q->ColumnText(12);
    a.count = static_cast<int>(q->ColumnInt(13));
    a.requested_models =
        absl::StrSplit(q->ColumnText(14), ',', absl::SkipEmpty());
    a.unpartitioned = q->ColumnInt(15) != 0;
    a.resource_name = q->ColumnText(16);
    a.container_name = q->ColumnText(17);
    a.admitted_at = absl::FromUnixNanos(q->ColumnInt(18));
    a.replicas = static_cast<int>(q->ColumnInt(19));
    a.topology_key = q->ColumnText(20);
    a.lease = absl::Nanoseconds(q->ColumnInt(21));
    a.preempted_by = q->ColumnText(22);
    std::string id = a.id;
    out[id].allocation = std::move(a);
  }
  ASSIGN_OR_RETURN(q,
                   db_->Prepare("SELECT allocation_id, node, device_id, "
                                "mig_slice_id, profile FROM allocation_devices "
                                "ORDER BY allocation_id, position"));
  for (;;) {
    ASSIGN_OR_RETURN(bool row, q->Step());
    if (!row) break;
    out[q->ColumnText(0)].allocation.devices.push_back(
        AllocatedDevice{q->ColumnText(1), q->ColumnText(2), q->ColumnText(3),
                        q->ColumnText(4)});
  }
  ASSIGN_OR_RETURN(
      q, db_->Prepare("SELECT allocation_id, node, hostname, device_label, "
                      "mig_strategy FROM allocation_targets "
                      "ORDER BY allocation_id, position"));
  for (;;) {
    ASSIGN_OR_RETURN(bool row, q->Step());
    if (!row) break;
    out[q->ColumnText(0)].allocation.targets.push_back(
        PlacementTarget{q->ColumnText(1), q->ColumnText(2), q->ColumnText(3),
                        q->ColumnText(4)});
  }
  ASSIGN_OR_RETURN(q, db_->Prepare("SELECT allocation_id, key, value FROM "
                                   "allocation_node_selector"));
  for (;;) {
    ASSIGN_OR_RETURN(bool row, q->Step());
    if (!row) break;
    out[q->ColumnText(0)].allocation.node_selector[q->ColumnText(1)] =
        q->ColumnText(2);
  }
  ASSIGN_OR_RETURN(
      q, db_->Prepare("SELECT allocation_id, unit FROM allocation_units "
                      "ORDER BY allocation_id, position, rowid"));
  for (;;) {
    ASSIGN_OR_RETURN(bool row, q->Step());
    if (!row) break;
    out[q->ColumnText(0)].units.push_back(q->ColumnText(1));
  }
  std::vector<StoredAllocation> result;
  result.reserve(out.size());
  for (auto& [id, a] : out) result.push_back(std::move(a));
  return result;
}

}  // namespace accelsched
