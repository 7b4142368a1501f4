#include "storage/sqlite_store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/migrations.h"
#include "storage/sqlite_db.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace accelsched {
namespace {

using ::testing::HasSubstr;

Node SampleNode() {
  Node n;
  n.name = "n1";
  n.labels = {{"pool", "a100"}, {"zone", "z1"}};
  n.schedulable = true;
  n.last_heartbeat = absl::FromUnixNanos(1'700'000'000'123'456'789);
  Device whole;
  whole.id = "GPU-a";
  whole.model = "NVIDIA A100-SXM4-40GB";
  whole.canonical_model = "nvidia-tesla-a100";
  whole.memory_bytes = 42'949'672'960ULL;
  whole.index = 0;
  whole.healthy = true;
  Device mig = whole;
  mig.id = "GPU-m";
  mig.index = 1;
  mig.mig_enabled = true;
  mig.mig_slices = {{"MIG-1", "3g.20gb", 0}, {"MIG-2", "2g.10gb", 4}};
  Device chip;
  chip.id = "chip-0";
  chip.device_class = DeviceClass::kGoogleTpu;
  chip.model = "tpu-v5p-slice";
  chip.canonical_model = "tpu-v5p-slice";
  chip.index = 2;
  chip.healthy = false;
  chip.tpu_slice_id = "slice-1";
  chip.tpu_topology = "2x2x1";
  n.devices = {whole, mig, chip};
  return n;
}

// Store rows hold the reported model; canonical names are the catalog's to
// derive.
Node AsLoaded(Node n) {
  for (Device& d : n.devices) d.canonical_model.clear();
  return n;
}

// SampleNode with its name and every id made unique by `i`.
Node NumberedNode(int i) {
  Node n = SampleNode();
  n.name = absl::StrCat("node-", i);
  for (Device& d : n.devices) d.id = absl::StrCat(n.name, "-", d.id);
  for (MigSlice& s : n.devices[1].mig_slices) s.id += n.name;
  n.devices[2].tpu_slice_id = n.name;
  return n;
}

// Rows of `table` in the file at `path`, read on a connection of its own; -1
// (and a test failure) when SQLite refuses.
int64_t Count(const std::string& path, const std::string& table) {
  sqlite3* db = nullptr;
  int64_t n = -1;
  sqlite3_stmt* stmt = nullptr;
  const std::string sql = "SELECT count(*) FROM " + table;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) !=
      SQLITE_OK) {
    ADD_FAILURE() << "open " << path << ": " << sqlite3_errmsg(db);
  } else if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) !=
             SQLITE_OK) {
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
  } else if (sqlite3_step(stmt) != SQLITE_ROW) {
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
  } else {
    n = sqlite3_column_int64(stmt, 0);
  }
  EXPECT_EQ(sqlite3_finalize(stmt), SQLITE_OK) << sqlite3_errmsg(db);
  EXPECT_EQ(sqlite3_close(db), SQLITE_OK);
  return n;
}

absl::Status ApplyOne(Store& store, Mutation m) { return store.Apply({&m, 1}); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(SqliteStoreTest, PutNodeReplacesDevicesAndLabels) {
  TempDir dir;
  auto store = SqliteStore::Open(dir.File("a.db"));
  ASSERT_OK(store);
  ASSERT_OK(ApplyOne(**store, PutNodeMutation{SampleNode()}));
  Node smaller = SampleNode();
  smaller.labels = {{"pool", "b"}};
  smaller.devices.erase(smaller.devices.begin() + 1, smaller.devices.end());
  ASSERT_OK(ApplyOne(**store, PutNodeMutation{smaller}));
  auto nodes = (*store)->LoadNodes();
  ASSERT_OK(nodes);
  EXPECT_EQ((*nodes)[0], AsLoaded(smaller));
  EXPECT_EQ(Count(dir.File("a.db"), "mig_slices"), 0);
  EXPECT_EQ(Count(dir.File("a.db"), "tpu_slices"), 0);
  EXPECT_EQ(Count(dir.File("a.db"), "node_labels"), 1);
}

TEST(SqliteStoreTest, DeleteNodeRemovesEverythingItOwns) {
  TempDir dir;
  const std::string path = dir.File("a.db");
  auto store = SqliteStore::Open(path);
  ASSERT_OK(store);
  ASSERT_OK(ApplyOne(**store, PutNodeMutation{SampleNode()}));
  ASSERT_OK(ApplyOne(**store, DeleteNodeMutation{"n1"}));
  EXPECT_THAT(ApplyOne(**store, DeleteNodeMutation{"n1"}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("n1")));
  for (const char* table :
       {"nodes", "node_labels", "devices", "mig_slices", "tpu_slices"}) {
    EXPECT_EQ(Count(path, table), 0) << table;
  }
}

// Writes a database at `path` with the first `migrations` schema versions and
// `rows` (SQL), as an older accelschedd left it.
void WriteOlderFile(const std::string& path, size_t migrations,
                    const char* rows) {
  auto db = SqliteDb::Open(path);
  ASSERT_OK(db);
  ASSERT_OK(Migrate(**db, SchemaMigrations().subspan(0, migrations)));
  ASSERT_OK((*db)->Exec(rows));
}

// Opens `path` with the store (migrating it to the latest schema) and loads
// its nodes into `nodes`.
void OpenMigrated(const std::string& path, std::unique_ptr<SqliteStore>* store,
                  std::vector<Node>* nodes) {
  auto opened = SqliteStore::Open(path);
  ASSERT_OK(opened);
  *store = *std::move(opened);
  EXPECT_EQ(*SchemaVersion((*store)->db()), SchemaMigrations().back().version);
  auto loaded = (*store)->LoadNodes();
  ASSERT_OK(loaded);
  *nodes = *std::move(loaded);
}

TEST(SqliteStoreTest, VersionOneFileIsMigratedKeepingItsNodes) {
  TempDir dir;
  const std::string path = dir.File("a.db");
  ASSERT_NO_FATAL_FAILURE(WriteOlderFile(
      path, 1,
      "INSERT INTO nodes VALUES ('n1', 1, 5);"
      "INSERT INTO devices (id, node, device_index, device_class, model, "
      "memory_bytes, healthy, mig_enabled) VALUES ('GPU-a', 'n1', 0, 0, "
      "'T4', 0, 1, 0)"));
  std::unique_ptr<SqliteStore> store;
  std::vector<Node> nodes;
  ASSERT_NO_FATAL_FAILURE(OpenMigrated(path, &store, &nodes));
  ASSERT_EQ(nodes.size(), 1u);
  ASSERT_EQ(nodes[0].devices.size(), 1u);
  EXPECT_EQ(nodes[0].devices[0].id, "GPU-a");
  EXPECT_FALSE(nodes[0].devices[0].removed);
}

TEST(SqliteStoreTest, FreshFileHasLatestSchemaInWalMode) {
  TempDir dir;
  auto db = SqliteDb::Open(dir.File("a.db"));
  ASSERT_OK(db);
  ASSERT_OK(Migrate(**db, SchemaMigrations()));
  EXPECT_EQ(*SchemaVersion(**db), SchemaMigrations().back().version);
  auto mode = (*db)->Prepare("PRAGMA journal_mode");
  ASSERT_OK(mode);
  ASSERT_TRUE(*(*mode)->Step());
  EXPECT_EQ((*mode)->Text(0), "wal");
  auto fk = (*db)->Prepare("PRAGMA foreign_keys");
  ASSERT_OK(fk);
  ASSERT_TRUE(*(*fk)->Step());
  EXPECT_EQ((*fk)->ColumnInt(0), 1);
}

TEST(SqliteStoreTest, OlderFileIsMigratedKeepingItsData) {
  const Migration v1[] = {{1, "CREATE TABLE t (a INTEGER);"}};
  const Migration v2[] = {
      {1, "CREATE TABLE t (a INTEGER);"},
      {2, "ALTER TABLE t ADD COLUMN b TEXT NOT NULL DEFAULT 'x';"}};
  TempDir dir;
  const std::string path = dir.File("a.db");
  {
    auto db = SqliteDb::Open(path);
    ASSERT_OK(db);
    ASSERT_OK(Migrate(**db, v1));
    ASSERT_OK((*db)->Exec("INSERT INTO t (a) VALUES (7)"));
  }
  auto db = SqliteDb::Open(path);
  ASSERT_OK(db);
  ASSERT_OK(Migrate(**db, v2));
  EXPECT_EQ(*SchemaVersion(**db), 2);
  auto q = (*db)->Prepare("SELECT a, b FROM t");
  ASSERT_OK(q);
  ASSERT_TRUE(*(*q)->Step());
  EXPECT_EQ((*q)->ColumnInt(0), 7);
  EXPECT_EQ((*q)->Text(1), "x");
  // Migrating again is a no-op.
  EXPECT_OK((*q)->Reset());
  EXPECT_OK(Migrate(**db, v2));
}

TEST(SqliteStoreTest, NewerFileIsRefusedAndUntouched) {
  TempDir dir;
  const std::string path = dir.File("a.db");
  {
    auto db = SqliteDb::Open(path);
    ASSERT_OK(db);
    ASSERT_OK((*db)->Exec("PRAGMA user_version = 999"));
  }
  const std::string before = ReadFile(path);
  EXPECT_THAT(
      SqliteStore::Open(path),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr("schema version 999, newer than this build's")));
  EXPECT_EQ(ReadFile(path), before);
}

TEST(SqliteStoreTest, CorruptFileIsDataLossAndUntouched) {
  TempDir dir;
  const std::string path = dir.File("a.db");
  {
    std::ofstream out(path, std::ios::binary);
    out << std::string(8192, 'z');
  }
  const std::string before = ReadFile(path);
  EXPECT_THAT(
      SqliteStore::Open(path),
      StatusIs(absl::StatusCode::kDataLoss, HasSubstr("cannot open database")));
  EXPECT_EQ(ReadFile(path), before);
}

TEST(SqliteStoreTest, MissingDirectoryIsAClearError) {
  TempDir dir;
  EXPECT_THAT(SqliteStore::Open(dir.File("no/such/dir/a.db")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("cannot open database")));
}

// Schema 3 rebuilds the devices table; a file at schema 2 keeps every row,
// MIG slices included (the rebuild must not cascade into them).
TEST(SqliteStoreTest, VersionTwoFileIsMigratedKeepingEveryRow) {
  TempDir dir;
  const std::string path = dir.File("a.db");
  ASSERT_NO_FATAL_FAILURE(WriteOlderFile(
      path, 2,
      "INSERT INTO nodes VALUES ('n1', 1, 5);"
      "INSERT INTO devices (id, node, device_index, device_class, model, "
      "memory_bytes, healthy, mig_enabled, removed) VALUES "
      "('GPU-m', 'n1', 1, 0, 'A100', 0, 1, 1, 0),"
      "('GPU-a', 'n1', 0, 0, 'T4', 0, 0, 0, 1);"
      "INSERT INTO mig_slices (id, device_id, profile, start_slot) VALUES "
      "('MIG-4', 'GPU-m', '3g.20gb', 4), ('MIG-0', 'GPU-m', '1g.5gb', 0);"
      "INSERT INTO allocations VALUES ('a-1', 'r', 1, 'n1', '', 0, 1, 2, 0, "
      "'', 0, 'nvidia-tesla-a100', '1g.5gb', 1, 'n1');"
      "INSERT INTO allocation_units (allocation_id, unit, live) VALUES "
      "('a-1', 'MIG-0', 1);"));
  std::unique_ptr<SqliteStore> store;
  std::vector<Node> nodes;
  ASSERT_NO_FATAL_FAILURE(OpenMigrated(path, &store, &nodes));
  ASSERT_EQ(nodes.size(), 1u);
  const Node& n = nodes[0];
  ASSERT_EQ(n.devices.size(), 2u);
  EXPECT_EQ(n.devices[0].id, "GPU-a");  // index order, as schema 2 loaded
  EXPECT_TRUE(n.devices[0].removed);
  EXPECT_EQ(
      n.devices[1].mig_slices,
      (std::vector<MigSlice>{{"MIG-0", "1g.5gb", 0}, {"MIG-4", "3g.20gb", 4}}));
  auto allocations = store->LoadAllocations();
  ASSERT_OK(allocations);
  ASSERT_EQ(allocations->size(), 1u);
  EXPECT_EQ((*allocations)[0].units, std::vector<std::string>{"MIG-0"});
  EXPECT_EQ(*store->LoadEventSequence(), 0u);
  // Foreign keys are enforced again after the migration.
  auto fk = store->db().Prepare("PRAGMA foreign_keys");
  ASSERT_OK(fk);
  ASSERT_TRUE(*(*fk)->Step());
  EXPECT_EQ((*fk)->ColumnInt(0), 1);
  EXPECT_OK((*fk)->Reset());
}

// Every allocation before schema 4 named exactly one model: that one is what
// it accepted.
TEST(SqliteStoreTest, VersionThreeAllocationsAcceptedTheirOwnModel) {
  TempDir dir;
  const std::string path = dir.File("a.db");
  ASSERT_NO_FATAL_FAILURE(WriteOlderFile(
      path, 3,
      "INSERT INTO allocations VALUES ('a-1', 'r', 2, 'n1', '', 0, 1, 2, 3, "
      "'released', 0, 'nvidia-tesla-t4', '', 2, 'n1');"));
  std::unique_ptr<SqliteStore> store;
  std::vector<Node> nodes;
  ASSERT_NO_FATAL_FAILURE(OpenMigrated(path, &store, &nodes));
  auto allocations = store->LoadAllocations();
  ASSERT_OK(allocations);
  ASSERT_EQ(allocations->size(), 1u);
  const Allocation& a = (*allocations)[0].allocation;
  EXPECT_EQ(a.requested_models, std::vector<std::string>{"nvidia-tesla-t4"});
  EXPECT_EQ(a.model, "nvidia-tesla-t4");
  EXPECT_EQ(a.count, 2);
}

// Before schema 5 a placement was computed from the stored hostname (the
// first node's) and the model; the migrated targets are what a new allocation
// on those nodes would get from their labels, with that hostname and, for a
// node without a device label, that model.
TEST(SqliteStoreTest, VersionFourAllocationsGetTargetsFromTheirNodes) {
  TempDir dir;
  const std::string path = dir.File("a.db");
  ASSERT_NO_FATAL_FAILURE(WriteOlderFile(
      path, 4,
      "INSERT INTO nodes VALUES ('h-c', 1, 5), ('n1', 1, 5);"
      "INSERT INTO node_labels VALUES ('h-c', 'kubernetes.io/hostname', "
      "'host-c'), ('h-c', 'cloud.google.com/gke-tpu-accelerator', 'v5p'),"
      "('n1', 'nvidia.com/mig.strategy', 'mixed'),"
      "('n1', 'k8s.amazonaws.com/accelerator', 'a100'),"
      "('n1', 'cloud.google.com/gke-tpu-accelerator', 'not-for-gpus');"
      "INSERT INTO allocations (id, request_id, state, node, tenant, "
      "priority, created_at_unix_ns, expires_at_unix_ns, ended_at_unix_ns, "
      "end_reason, device_class, model, partition, count, hostname, "
      "requested_models) VALUES "
      "('a-1', 'r1', 1, 'h-b', '', 0, 1, 2, 0, '', 1, 'tpu-v5p-slice', "
      "'2x2x2', 1, 'host-b', 'tpu-v5p-slice'),"
      "('a-2', 'r2', 1, 'n1', '', 0, 1, 2, 0, '', 0, 'nvidia-tesla-a100', "
      "'1g.5gb', 1, 'n1', 'nvidia-tesla-a100');"
      "INSERT INTO allocation_devices VALUES "
      "('a-1', 0, 'h-b', 'c0', '', ''), ('a-1', 1, 'h-b', 'c1', '', ''),"
      "('a-1', 2, 'h-c', 'c2', '', ''), ('a-1', 3, 'h-a', 'c3', '', ''),"
      "('a-2', 0, 'n1', 'GPU-a', 'MIG-a', '1g.5gb');"));
  std::unique_ptr<SqliteStore> store;
  std::vector<Node> nodes;
  ASSERT_NO_FATAL_FAILURE(OpenMigrated(path, &store, &nodes));
  auto allocations = store->LoadAllocations();
  ASSERT_OK(allocations);
  ASSERT_EQ(allocations->size(), 2u);
  std::map<std::string, Allocation> by_id;
  for (const StoredAllocation& s : *allocations) {
    by_id[s.allocation.id] = s.allocation;
  }
  // h-a is no longer registered: its name and the model stand in.
  EXPECT_EQ(by_id["a-1"].targets, (std::vector<PlacementTarget>{
                                      {"h-a", "h-a", "tpu-v5p-slice", ""},
                                      {"h-b", "host-b", "tpu-v5p-slice", ""},
                                      {"h-c", "host-c", "v5p", ""}}));
  EXPECT_EQ(by_id["a-2"].targets,
            (std::vector<PlacementTarget>{{"n1", "n1", "a100", "mixed"}}));
  EXPECT_FALSE(by_id["a-2"].unpartitioned);
  EXPECT_EQ(by_id["a-2"].resource_name, "");
  EXPECT_EQ(by_id["a-2"].container_name, "");
}

// Before schema 7 the request's spellings were not kept: an allocation of an
// older file has none (its placement takes the registry's node_label_value),
// and one written after the migration keeps its own.
TEST(SqliteStoreTest, VersionSixAllocationsHaveNoSpellings) {
  TempDir dir;
  const std::string path = dir.File("a.db");
  ASSERT_NO_FATAL_FAILURE(WriteOlderFile(
      path, 6,
      "INSERT INTO allocations (id, request_id, state, node, tenant, "
      "priority, created_at_unix_ns, expires_at_unix_ns, ended_at_unix_ns, "
      "end_reason, device_class, model, partition, count, requested_models, "
      "unpartitioned, resource_name, container_name, admitted_at_unix_ns, "
      "replicas, topology_key, lease_ns, preempted_by) VALUES "
      "('a-1', 'r1', 4, '', '', 0, 1, 2, 0, '', 0, '', '', 1, "
      "'nvidia-h100', 0, '', '', 0, 1, '', 0, '');"));
  std::unique_ptr<SqliteStore> store;
  std::vector<Node> nodes;
  ASSERT_NO_FATAL_FAILURE(OpenMigrated(path, &store, &nodes));
  auto allocations = store->LoadAllocations();
  ASSERT_OK(allocations);
  ASSERT_EQ(allocations->size(), 1u);
  const Allocation& old = (*allocations)[0].allocation;
  EXPECT_EQ(old.state, AllocationState::kPending);
  EXPECT_EQ(old.requested_models, std::vector<std::string>{"nvidia-h100"});
  EXPECT_THAT(old.device_spellings, testing::IsEmpty());

  Allocation admitted = old;
  admitted.state = AllocationState::kActive;
  admitted.device_spellings = {"H100 80G"};
  ASSERT_OK(store->Apply({DeleteAllocationMutation{"a-1"},
                          PutAllocationMutation{admitted, {"GPU-0"}, true}}));
  allocations = store->LoadAllocations();
  ASSERT_OK(allocations);
  ASSERT_EQ(allocations->size(), 1u);
  EXPECT_EQ((*allocations)[0].allocation, admitted);
  // Deleting the allocation deletes its spellings.
  ASSERT_OK(ApplyOne(*store, DeleteAllocationMutation{"a-1"}));
  EXPECT_EQ(Count(path, "allocation_device_spellings"), 0);
}

// Before schema 8 neither a node's allocatable resources nor a pod's were
// kept: the nodes and allocations of an older file keep every field and have
// none (not zeros), and ones written after the migration keep theirs.
TEST(SqliteStoreTest, VersionSevenRowsHaveNoResources) {
  TempDir dir;
  const std::string path = dir.File("a.db");
  ASSERT_NO_FATAL_FAILURE(WriteOlderFile(
      path, 7,
      "INSERT INTO nodes VALUES ('n1', 0, 5);"
      "INSERT INTO node_labels VALUES ('n1', 'pool', 'a');"
      "INSERT INTO devices (id, node, position, device_index, device_class, "
      "model, memory_bytes, healthy, mig_enabled, removed) VALUES "
      "('GPU-0', 'n1', 0, 0, 0, 'NVIDIA H100 80GB HBM3', 0, 1, 0, 0);"
      "INSERT INTO allocations (id, request_id, state, node, tenant, "
      "priority, created_at_unix_ns, expires_at_unix_ns, ended_at_unix_ns, "
      "end_reason, device_class, model, partition, count, requested_models, "
      "unpartitioned, resource_name, container_name, admitted_at_unix_ns, "
      "replicas, topology_key, lease_ns, preempted_by) VALUES "
      "('a-1', 'r1', 1, 'n1', 't', 0, 1, 2, 0, '', 0, 'nvidia-h100', '', 1, "
      "'nvidia-h100', 0, '', '', 1, 1, '', 0, '');"
      "INSERT INTO allocation_device_spellings VALUES ('a-1', 0, 'H100');"
      "INSERT INTO allocation_units (allocation_id, unit, live, position) "
      "VALUES ('a-1', 'GPU-0', 1, 0);"));
  std::unique_ptr<SqliteStore> store;
  std::vector<Node> nodes;
  ASSERT_NO_FATAL_FAILURE(OpenMigrated(path, &store, &nodes));
  ASSERT_EQ(nodes.size(), 1u);
  Node node = nodes[0];
  EXPECT_FALSE(node.schedulable);
  EXPECT_EQ(node.labels, (std::map<std::string, std::string>{{"pool", "a"}}));
  ASSERT_EQ(node.devices.size(), 1u);
  EXPECT_EQ(node.devices[0].id, "GPU-0");
  EXPECT_EQ(node.allocatable, std::nullopt);
  auto allocations = store->LoadAllocations();
  ASSERT_OK(allocations);
  ASSERT_EQ(allocations->size(), 1u);
  Allocation old = (*allocations)[0].allocation;
  EXPECT_EQ(old.state, AllocationState::kActive);
  EXPECT_EQ(old.tenant, "t");
  EXPECT_EQ(old.device_spellings, std::vector<std::string>{"H100"});
  EXPECT_EQ((*allocations)[0].units, std::vector<std::string>{"GPU-0"});
  EXPECT_EQ(old.pod_resources, std::nullopt);

  node.allocatable = NodeResources{64'000, int64_t{512} << 30, 0};
  Allocation ended = old;
  ended.state = AllocationState::kReleased;
  ended.end_reason = "released";
  Allocation next = old;
  next.id = "a-2";
  next.request_id = "r2";
  next.pod_resources = NodeResources{0, 0, 1};
  ASSERT_OK(store->Apply({PutNodeMutation{node},
                          PutAllocationMutation{ended, {"GPU-0"}},
                          PutAllocationMutation{next, {"GPU-0"}, true}}));
  store.reset();
  ASSERT_NO_FATAL_FAILURE(OpenMigrated(path, &store, &nodes));
  EXPECT_EQ(nodes, std::vector<Node>{node});
  allocations = store->LoadAllocations();
  ASSERT_OK(allocations);
  ASSERT_EQ(allocations->size(), 2u);
  EXPECT_EQ((*allocations)[0].allocation, ended);
  EXPECT_EQ((*allocations)[1].allocation, next);
}

// Before schema 9 no device was shared and no allocation held a share: the
// devices and allocated devices of an older file have none, and ones written
// after the migration keep theirs.
TEST(SqliteStoreTest, VersionEightRowsAreNotShared) {
  TempDir dir;
  const std::string path = dir.File("a.db");
  ASSERT_NO_FATAL_FAILURE(WriteOlderFile(
      path, 8,
      "INSERT INTO nodes (name, schedulable, last_heartbeat_unix_ns) VALUES "
      "('n1', 1, 5);"
      "INSERT INTO devices (id, node, position, device_index, device_class, "
      "model, memory_bytes, healthy, mig_enabled, removed) VALUES "
      "('GPU-0', 'n1', 0, 0, 0, 'Tesla T4', 0, 1, 0, 0);"
      "INSERT INTO allocations (id, request_id, state, node, tenant, "
      "priority, created_at_unix_ns, expires_at_unix_ns, ended_at_unix_ns, "
      "end_reason, device_class, model, partition, count, requested_models, "
      "unpartitioned, resource_name, container_name, admitted_at_unix_ns, "
      "replicas, topology_key, lease_ns, preempted_by) VALUES "
      "('a-1', 'r1', 1, 'n1', 't', 0, 1, 2, 0, '', 0, 'nvidia-tesla-t4', '', "
      "1, 'nvidia-tesla-t4', 0, '', '', 1, 1, '', 0, '');"
      "INSERT INTO allocation_devices VALUES ('a-1', 0, 'n1', 'GPU-0', '', "
      "'');"
      "INSERT INTO allocation_units (allocation_id, unit, live, position) "
      "VALUES ('a-1', 'GPU-0', 1, 0);"));
  std::unique_ptr<SqliteStore> store;
  std::vector<Node> nodes;
  ASSERT_NO_FATAL_FAILURE(OpenMigrated(path, &store, &nodes));
  ASSERT_EQ(nodes.size(), 1u);
  ASSERT_EQ(nodes[0].devices.size(), 1u);
  EXPECT_EQ(nodes[0].devices[0].sharing, GpuSharing::kNone);
  auto allocations = store->LoadAllocations();
  ASSERT_OK(allocations);
  ASSERT_EQ(allocations->size(), 1u);
  const Allocation old = (*allocations)[0].allocation;
  ASSERT_EQ(old.devices.size(), 1u);
  EXPECT_EQ(old.devices[0],
            (AllocatedDevice{"n1", "GPU-0", "", "", std::nullopt}));
  EXPECT_EQ(old.share, std::nullopt);

  Node node = nodes[0];
  node.devices[0].sharing = GpuSharing::kTimeSlicing;
  Allocation ended = old;
  ended.state = AllocationState::kReleased;
  ended.end_reason = "released";
  Allocation next = old;
  next.id = "a-2";
  next.request_id = "r2";
  next.share = GpuShare{250, 0, "ml-team"};
  next.devices[0].share = GpuShare{250, int64_t{4} << 30, "ml-team"};
  next.devices[0].sharing = GpuSharing::kTimeSlicing;
  ASSERT_OK(store->Apply({PutNodeMutation{node},
                          PutAllocationMutation{ended, {"GPU-0"}},
                          PutAllocationMutation{next, {"GPU-0"}, true}}));
  store.reset();
  ASSERT_NO_FATAL_FAILURE(OpenMigrated(path, &store, &nodes));
  EXPECT_EQ(nodes, std::vector<Node>{node});
  allocations = store->LoadAllocations();
  ASSERT_OK(allocations);
  ASSERT_EQ(allocations->size(), 2u);
  EXPECT_EQ((*allocations)[0].allocation, ended);
  EXPECT_EQ((*allocations)[1].allocation, next);
}

// Before schema 10 a held share did not record how its device was shared:
// a share an older file holds gets its device's mode (which cannot change
// while the share holds it), and a whole device stays unshared.
TEST(SqliteStoreTest, VersionNineSharesTakeTheirDevicesSharing) {
  TempDir dir;
  const std::string path = dir.File("a.db");
  ASSERT_NO_FATAL_FAILURE(WriteOlderFile(
      path, 9,
      "INSERT INTO nodes (name, schedulable, last_heartbeat_unix_ns) VALUES "
      "('n1', 1, 5);"
      "INSERT INTO devices (id, node, position, device_index, device_class, "
      "model, memory_bytes, healthy, mig_enabled, removed, sharing) VALUES "
      "('GPU-0', 'n1', 0, 0, 0, 'Tesla T4', 1000, 1, 0, 0, 2),"
      "('GPU-1', 'n1', 1, 1, 0, 'Tesla T4', 1000, 1, 0, 0, 0);"
      "INSERT INTO allocations (id, request_id, state, node, tenant, "
      "priority, created_at_unix_ns, expires_at_unix_ns, ended_at_unix_ns, "
      "end_reason, device_class, model, partition, count, requested_models, "
      "unpartitioned, resource_name, container_name, admitted_at_unix_ns, "
      "replicas, topology_key, lease_ns, preempted_by, share_compute_milli, "
      "share_memory_bytes) VALUES "
      "('a-1', 'r1', 1, 'n1', 't', 0, 1, 2, 0, '', 0, 'nvidia-tesla-t4', '', "
      "1, 'nvidia-tesla-t4', 0, '', '', 1, 1, '', 0, '', 300, 0),"
      "('a-2', 'r2', 1, 'n1', 't', 0, 1, 2, 0, '', 0, 'nvidia-tesla-t4', '', "
      "1, 'nvidia-tesla-t4', 0, '', '', 1, 1, '', 0, '', NULL, NULL);"
      "INSERT INTO allocation_devices VALUES "
      "('a-1', 0, 'n1', 'GPU-0', '', '', 300, 300),"
      "('a-2', 0, 'n1', 'GPU-1', '', '', NULL, NULL);"
      "INSERT INTO allocation_units (allocation_id, unit, live, position) "
      "VALUES ('a-2', 'GPU-1', 1, 0);"));
  std::unique_ptr<SqliteStore> store;
  std::vector<Node> nodes;
  ASSERT_NO_FATAL_FAILURE(OpenMigrated(path, &store, &nodes));
  auto allocations = store->LoadAllocations();
  ASSERT_OK(allocations);
  ASSERT_EQ(allocations->size(), 2u);
  EXPECT_EQ(
      (*allocations)[0].allocation.devices,
      (std::vector<AllocatedDevice>{
          {"n1", "GPU-0", "", "", GpuShare{300, 300}, GpuSharing::kMps}}));
  EXPECT_EQ((*allocations)[1].allocation.devices,
            (std::vector<AllocatedDevice>{{"n1", "GPU-1", "", ""}}));
}

// A capped file refuses the write that does not fit, whole, and keeps every
// commit before it.
TEST(SqliteStoreTest, FullDatabaseIsResourceExhaustedAndKeepsCommits) {
  TempDir dir;
  const std::string path = dir.File("a.db");
  int acknowledged = 0;
  absl::Status last;
  {
    SqliteStore::Options options;
    options.max_pages = 40;
    auto store = SqliteStore::Open(path, options);
    ASSERT_OK(store);
    for (int i = 0; i < 1000 && last.ok(); ++i) {
      last = ApplyOne(**store, PutNodeMutation{NumberedNode(i)});
      if (last.ok()) ++acknowledged;
    }
  }
  EXPECT_THAT(last, StatusIs(absl::StatusCode::kResourceExhausted,
                             HasSubstr("database or disk is full")));
  ASSERT_GT(acknowledged, 0);
  auto store = SqliteStore::Open(path);
  ASSERT_OK(store);
  auto nodes = (*store)->LoadNodes();
  ASSERT_OK(nodes);
  EXPECT_EQ(static_cast<int>(nodes->size()), acknowledged);
}

// The checkpointer copies committed pages from the WAL into the database file
// on its own connection while commits go on; nothing is lost by it.
TEST(SqliteStoreTest, CheckpointerCopiesCommitsBesideTheWriter) {
  TempDir dir;
  const std::string path = dir.File("a.db");
  constexpr int kNodes = 60;
  {
    SqliteStore::Options options;
    options.checkpoint_interval = absl::Milliseconds(1);
    auto store = SqliteStore::Open(path, options);
    ASSERT_OK(store);
    const auto initial = std::filesystem::file_size(path);
    for (int i = 0; i < kNodes; ++i) {
      ASSERT_OK(ApplyOne(**store, PutNodeMutation{NumberedNode(i)}));
    }
    // Only a checkpoint writes to the database file while the store is open.
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (std::filesystem::file_size(path) == initial &&
           absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    EXPECT_GT(std::filesystem::file_size(path), initial);
  }
  auto store = SqliteStore::Open(path);
  ASSERT_OK(store);
  auto nodes = (*store)->LoadNodes();
  ASSERT_OK(nodes);
  EXPECT_EQ(nodes->size(), static_cast<size_t>(kNodes));
}

}  // namespace
}  // namespace accelsched
