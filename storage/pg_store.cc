#include "storage/pg_store.h"

#include <map>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "core/base/status_macros.h"
#include "storage/pg_schema.h"

namespace accelsched {

absl::StatusOr<std::unique_ptr<PgStore>> PgStore::Open(const std::string& uri,
                                                       Options options) {
  ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> db,
                   PgConnection::Open(uri, options.connection));
  RETURN_IF_ERROR(PgMigrate(*db));
  return std::unique_ptr<PgStore>(
      new PgStore(std::move(db), std::move(options)));
}

absl::StatusOr<std::vector<Node>> PgStore::LoadNodes() {
  RETURN_IF_ERROR(db_->Reconnect());
  std::map<std::string, Node> nodes;
  ASSIGN_OR_RETURN(
      PgResult r,
      db_->Run("SELECT name, schedulable, last_heartbeat_unix_ns FROM nodes",
               {}));
  for (int i = 0; i < r.rows(); ++i) {
    Node node;
    node.name = r.Text(i, 0);
    node.schedulable = r.Bool(i, 1);
    ASSIGN_OR_RETURN(const int64_t heartbeat, r.Int(i, 2));
    node.last_heartbeat = absl::FromUnixNanos(heartbeat);
    nodes.emplace(node.name, std::move(node));
  }
  ASSIGN_OR_RETURN(r, db_->Run("SELECT node, key, value FROM node_labels", {}));
  for (int i = 0; i < r.rows(); ++i) {
    nodes[r.Text(i, 0)].labels[r.Text(i, 1)] = r.Text(i, 2);
  }
  // MIG slices first, so each device is built whole in one pass.
  std::map<std::string, std::vector<MigSlice>> slices;
  ASSIGN_OR_RETURN(
      r, db_->Run("SELECT device_id, id, profile, start_slot FROM mig_slices "
                  "ORDER BY device_id, position",
                  {}));
  for (int i = 0; i < r.rows(); ++i) {
    ASSIGN_OR_RETURN(const int64_t start, r.Int(i, 3));
    slices[r.Text(i, 0)].push_back(
        MigSlice{r.Text(i, 1), r.Text(i, 2), static_cast<int>(start)});
  }
  ASSIGN_OR_RETURN(
      r, db_->Run("SELECT d.node, d.id, d.device_class, d.model, "
                  "d.memory_bytes, d.device_index, d.healthy, d.mig_enabled, "
                  "d.tpu_slice_id, t.topology, d.removed "
                  "FROM devices d LEFT JOIN tpu_slices t ON t.id = "
                  "d.tpu_slice_id ORDER BY d.node, d.position",
                  {}));
  for (int i = 0; i < r.rows(); ++i) {
    Device d;
    d.id = r.Text(i, 1);
    ASSIGN_OR_RETURN(const int64_t device_class, r.Int(i, 2));
    d.device_class = static_cast<DeviceClass>(device_class);
    d.model = r.Text(i, 3);
    ASSIGN_OR_RETURN(const int64_t memory, r.Int(i, 4));
    d.memory_bytes = static_cast<uint64_t>(memory);
    ASSIGN_OR_RETURN(const int64_t index, r.Int(i, 5));
    d.index = static_cast<int>(index);
    d.healthy = r.Bool(i, 6);
    d.mig_enabled = r.Bool(i, 7);
    d.tpu_slice_id = r.Text(i, 8);  // NULL reads as ""
    d.tpu_topology = r.Text(i, 9);
    d.removed = r.Bool(i, 10);
    if (auto it = slices.find(d.id); it != slices.end())
      d.mig_slices = std::move(it->second);
    nodes[r.Text(i, 0)].devices.push_back(std::move(d));
  }
  std::vector<Node> out;
  out.reserve(nodes.size());
  for (auto& [name, node] : nodes) out.push_back(std::move(node));
  return out;
}

absl::StatusOr<std::vector<StoredAllocation>> PgStore::LoadAllocations() {
  RETURN_IF_ERROR(db_->Reconnect());
  std::map<std::string, StoredAllocation> out;
  ASSIGN_OR_RETURN(
      PgResult r,
      db_->Run("SELECT id, request_id, state, node, tenant, priority, "
               "created_at_unix_ns, expires_at_unix_ns, ended_at_unix_ns, "
               "end_reason, device_class, model, partition, count, "
               "requested_models, unpartitioned, resource_name, "
               "container_name, admitted_at_unix_ns, replicas, topology_key, "
               "lease_ns, preempted_by FROM allocations",
               {}));
  for (int i = 0; i < r.rows(); ++i) {
    // Every integer column, read once and checked.
    static constexpr int kInts[] = {2, 5, 6, 7, 8, 10, 13, 18, 19, 21};
    std::map<int, int64_t> n;
    for (int col : kInts) {
      ASSIGN_OR_RETURN(n[col], r.Int(i, col));
    }
    Allocation a;
    a.id = r.Text(i, 0);
    a.request_id = r.Text(i, 1);
    a.state = static_cast<AllocationState>(n[2]);
    a.node = r.Text(i, 3);
    a.tenant = r.Text(i, 4);
    a.priority = static_cast<int>(n[5]);
    a.created_at = absl::FromUnixNanos(n[6]);
    a.expires_at = absl::FromUnixNanos(n[7]);
    a.ended_at = absl::FromUnixNanos(n[8]);
    a.end_reason = r.Text(i, 9);
    a.device_class = static_cast<DeviceClass>(n[10]);
    a.model = r.Text(i, 11);
    a.partition = r.Text(i, 12);
    a.count = static_cast<int>(n[13]);
    a.requested_models = absl::StrSplit(r.Text(i, 14), ',', absl::SkipEmpty());
    a.unpartitioned = r.Bool(i, 15);
    a.resource_name = r.Text(i, 16);
    a.container_name = r.Text(i, 17);
    a.admitted_at = absl::FromUnixNanos(n[18]);
    a.replicas = static_cast<int>(n[19]);
    a.topology_key = r.Text(i, 20);
    a.lease = absl::Nanoseconds(n[21]);
    a.preempted_by = r.Text(i, 22);
    std::string id = a.id;
    out[id].allocation = std::move(a);
  }
  ASSIGN_OR_RETURN(
      r, db_->Run("SELECT allocation_id, node, device_id, mig_slice_id, "
                  "profile FROM allocation_devices ORDER BY allocation_id, "
                  "position",
                  {}));
  for (int i = 0; i < r.rows(); ++i) {
    out[r.Text(i, 0)].allocation.devices.push_back(AllocatedDevice{
        r.Text(i, 1), r.Text(i, 2), r.Text(i, 3), r.Text(i, 4)});
  }
  ASSIGN_OR_RETURN(
      r, db_->Run("SELECT allocation_id, node, hostname, device_label, "
                  "mig_strategy FROM allocation_targets ORDER BY "
                  "allocation_id, position",
                  {}));
  for (int i = 0; i < r.rows(); ++i) {
    out[r.Text(i, 0)].allocation.targets.push_back(PlacementTarget{
        r.Text(i, 1), r.Text(i, 2), r.Text(i, 3), r.Text(i, 4)});
  }
  ASSIGN_OR_RETURN(r, db_->Run("SELECT allocation_id, key, value FROM "
                               "allocation_node_selector",
                               {}));
  for (int i = 0; i < r.rows(); ++i) {
    out[r.Text(i, 0)].allocation.node_selector[r.Text(i, 1)] = r.Text(i, 2);
  }
  ASSIGN_OR_RETURN(r, db_->Run("SELECT allocation_id, unit FROM "
                               "allocation_units ORDER BY allocation_id, "
                               "position",
                               {}));
  for (int i = 0; i < r.rows(); ++i) {
    out[r.Text(i, 0)].units.push_back(r.Text(i, 1));
  }
  std::vector<StoredAllocation> result;
  result.reserve(out.size());
  for (auto& [id, a] : out) result.push_back(std::move(a));
  return result;
}

absl::StatusOr<uint64_t> PgStore::LoadEventSequence() {
  RETURN_IF_ERROR(db_->Reconnect());
  ASSIGN_OR_RETURN(
      PgResult r, db_->Run("SELECT last FROM event_sequence WHERE id = 1", {}));
  if (r.rows() == 0) {
    return absl::DataLossError(absl::StrCat("database ", db_->description(),
                                            " has no event sequence row"));
  }
  ASSIGN_OR_RETURN(const int64_t last, r.Int(0, 0));
  return static_cast<uint64_t>(last);
}

namespace {

// A check that the statement changed a row, or `error`.
std::function<absl::Status(const PgResult&)> ChangedARow(absl::Status error) {
  return [error = std::move(error)](const PgResult& r) {
    return r.affected() > 0 ? absl::OkStatus() : error;
  };
}

}  // namespace

void PgStore::Add(std::string sql, std::vector<PgParam> params,
                  std::function<absl::Status(const PgResult&)> check) {
  batch_.push_back(PgConnection::Statement{std::move(sql), std::move(params),
                                           std::move(check)});
}

void PgStore::WriteDevices(const Node& node) {
  Add("DELETE FROM devices WHERE node = $1", {node.name});
  for (size_t i = 0; i < node.devices.size(); ++i) {
    const Device& d = node.devices[i];
    if (!d.tpu_slice_id.empty()) {
      Add("INSERT INTO tpu_slices (id, model, topology) VALUES ($1, $2, $3) "
          "ON CONFLICT (id) DO UPDATE SET model = $2, topology = $3",
          {d.tpu_slice_id, d.canonical_model, d.tpu_topology});
    }
    Add("INSERT INTO devices (id, node, device_index, device_class, model, "
        "memory_bytes, healthy, mig_enabled, tpu_slice_id, removed, position) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        {d.id, node.name, d.index, static_cast<int>(d.device_class), d.model,
         static_cast<int64_t>(d.memory_bytes), d.healthy, d.mig_enabled,
         PgParam::OrNull(d.tpu_slice_id), d.removed, static_cast<int64_t>(i)});
    for (size_t j = 0; j < d.mig_slices.size(); ++j) {
      const MigSlice& m = d.mig_slices[j];
      Add("INSERT INTO mig_slices (id, device_id, profile, start_slot, "
          "position) VALUES ($1, $2, $3, $4, $5)",
          {m.id, d.id, m.profile, m.start, static_cast<int64_t>(j)});
    }
  }
}

void PgStore::DeleteOrphanTpuSlices() {
  Add("DELETE FROM tpu_slices WHERE id NOT IN (SELECT tpu_slice_id FROM "
      "devices WHERE tpu_slice_id IS NOT NULL)",
      {});
}

void PgStore::Write(const PutNodeMutation& m) {
  const Node& node = m.node;
  Add("INSERT INTO nodes (name, schedulable, last_heartbeat_unix_ns) VALUES "
      "($1, $2, $3) ON CONFLICT (name) DO UPDATE SET schedulable = $2, "
      "last_heartbeat_unix_ns = $3",
      {node.name, node.schedulable, absl::ToUnixNanos(node.last_heartbeat)});
  Add("DELETE FROM node_labels WHERE node = $1", {node.name});
  for (const auto& [key, value] : node.labels) {
    Add("INSERT INTO node_labels (node, key, value) VALUES ($1, $2, $3)",
        {node.name, key, value});
  }
  WriteDevices(node);
  DeleteOrphanTpuSlices();
}

void PgStore::Write(const PutNodeStatusMutation& m) {
  const Node& node = m.node;
  Add("UPDATE nodes SET schedulable = $2, last_heartbeat_unix_ns = $3 WHERE "
      "name = $1",
      {node.name, node.schedulable, absl::ToUnixNanos(node.last_heartbeat)},
      ChangedARow(absl::NotFoundError(
          absl::StrCat("node \"", node.name, "\" not found"))));
  for (const Device& d : node.devices) {
    Add("UPDATE devices SET healthy = $3 WHERE node = $1 AND id = $2",
        {node.name, d.id, d.healthy},
        ChangedARow(absl::NotFoundError(absl::StrCat(
            "device \"", d.id, "\" of node \"", node.name, "\" not found"))));
  }
}

void PgStore::Write(const DeleteNodeMutation& m) {
  Add("DELETE FROM nodes WHERE name = $1", {m.name},
      ChangedARow(absl::NotFoundError(
          absl::StrCat("node \"", m.name, "\" not found"))));
  DeleteOrphanTpuSlices();
}

void PgStore::Write(const PutAllocationMutation& m) {
  const Allocation& a = m.allocation;
  if (m.created) {
    Add("INSERT INTO allocations (id, request_id, state, node, tenant, "
        "priority, created_at_unix_ns, expires_at_unix_ns, ended_at_unix_ns, "
        "end_reason, device_class, model, partition, count, "
        "requested_models, unpartitioned, resource_name, container_name, "
        "admitted_at_unix_ns, replicas, topology_key, lease_ns, preempted_by) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, "
        "$15, $16, $17, $18, $19, $20, $21, $22, $23)",
        {a.id,
         a.request_id,
         static_cast<int>(a.state),
         a.node,
         a.tenant,
         a.priority,
         absl::ToUnixNanos(a.created_at),
         absl::ToUnixNanos(a.expires_at),
         absl::ToUnixNanos(a.ended_at),
         a.end_reason,
         static_cast<int>(a.device_class),
         a.model,
         a.partition,
         a.count,
         absl::StrJoin(a.requested_models, ","),
         a.unpartitioned,
         a.resource_name,
         a.container_name,
         absl::ToUnixNanos(a.admitted_at),
         a.replicas,
         a.topology_key,
         absl::ToInt64Nanoseconds(a.lease),
         a.preempted_by});
    for (const auto& [key, value] : a.node_selector) {
      Add("INSERT INTO allocation_node_selector (allocation_id, key, value) "
          "VALUES ($1, $2, $3)",
          {a.id, key, value});
    }
    for (size_t i = 0; i < a.targets.size(); ++i) {
      const PlacementTarget& t = a.targets[i];
      Add("INSERT INTO allocation_targets (allocation_id, position, node, "
          "hostname, device_label, mig_strategy) VALUES ($1, $2, $3, $4, $5, "
          "$6)",
          {a.id, static_cast<int64_t>(i), t.node, t.hostname, t.device_label,
           t.mig_strategy});
    }
    for (size_t i = 0; i < a.devices.size(); ++i) {
      const AllocatedDevice& d = a.devices[i];
      Add("INSERT INTO allocation_devices (allocation_id, position, node, "
          "device_id, mig_slice_id, profile) VALUES ($1, $2, $3, $4, $5, $6)",
          {a.id, static_cast<int64_t>(i), d.node, d.device_id, d.mig_slice_id,
           d.profile});
    }
  } else {
    Add("UPDATE allocations SET state = $2, expires_at_unix_ns = $3, "
        "ended_at_unix_ns = $4, end_reason = $5, preempted_by = $6 WHERE id = "
        "$1",
        {a.id, static_cast<int>(a.state), absl::ToUnixNanos(a.expires_at),
         absl::ToUnixNanos(a.ended_at), a.end_reason, a.preempted_by},
        ChangedARow(absl::NotFoundError(
            absl::StrCat("allocation \"", a.id, "\" not found"))));
  }
  for (size_t i = 0; i < m.units.size(); ++i) {
    Add("INSERT INTO allocation_units (allocation_id, unit, live, position) "
        "VALUES ($1, $2, $3, $4) ON CONFLICT (allocation_id, unit) DO UPDATE "
        "SET live = $3",
        {a.id, m.units[i], a.live(), static_cast<int64_t>(i)});
  }
}

void PgStore::Write(const DeleteAllocationMutation& m) {
  Add("DELETE FROM allocations WHERE id = $1", {m.id});
}

void PgStore::Write(const PutEventSequenceMutation& m) {
  Add("UPDATE event_sequence SET last = $1 WHERE id = 1 AND last <= $1",
      {static_cast<int64_t>(m.last)},
      ChangedARow(absl::FailedPreconditionError(absl::StrCat(
          "event sequence ", m.last, " is below the stored one"))));
}

void PgStore::CheckEpoch() {
  const int64_t mine = epoch_.load();
  // FOR SHARE: a takeover's UPDATE of this row waits for this transaction to
  // end, and this one, if the takeover came first, reads its epoch.
  Add("SELECT epoch, address FROM leader WHERE id = 1 FOR SHARE", {},
      [this, mine](const PgResult& r) -> absl::Status {
        if (r.rows() != 1) {
          return absl::DataLossError(absl::StrCat(
              "database ", db_->description(), " has no leader row"));
        }
        ASSIGN_OR_RETURN(const int64_t current, r.Int(0, 0));
        if (mine != 0 && current == mine) return absl::OkStatus();
        if (mine != 0 && options_.on_fenced) options_.on_fenced();
        return absl::UnavailableError(
            absl::StrCat("this server is not the leader (its epoch ", mine,
                         ", the database's ", current, "); the leader is at ",
                         r.Text(0, 1)));
      });
}

absl::Status PgStore::Apply(absl::Span<const Mutation> mutations) {
  RETURN_IF_ERROR(db_->Reconnect());
  batch_.clear();
  CheckEpoch();
  for (const Mutation& m : mutations) {
    std::visit([this](const auto& v) { Write(v); }, m);
  }
  RETURN_IF_ERROR(db_->Exec("BEGIN"));
  absl::Status s = db_->RunBatch(batch_);
  batch_.clear();
  if (s.ok()) s = db_->Exec("COMMIT");
  if (!s.ok()) db_->RollbackIfOpen();
  return s;
}

}  // namespace accelsched
