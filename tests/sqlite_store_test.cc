#include "storage/sqlite_store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/migrations.h"
#include "storage/sqlite_db.h"
#include "tests/status_matchers.h"
#include "tests/temp_dir.h"

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

int64_t Count(const std::string& path, const char* table) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db, (std::string("SELECT count(*) FROM ") + table).c_str(),
                     -1, &stmt, nullptr);
  sqlite3_step(stmt);
  int64_t n = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return n;
}

absl::Status ApplyOne(Store& store, Mutation m) { return store.Apply({&m, 1}); }

Allocation SampleAllocation(const std::string& id, AllocationState state) {
  Allocation a;
  a.id = id;
  a.request_id = "req-" + id;
  a.state = state;
  a.node = "n1";
  a.devices = {{"n1", "GPU-m", "MIG-1", "3g.20gb"}};
  a.tenant = "proj/dev";
  a.priority = 3;
  a.created_at = absl::FromUnixNanos(1'700'000'000'000'000'001);
  a.expires_at = a.created_at + absl::Hours(1);
  a.model = "nvidia-tesla-a100";
  a.partition = "3g.20gb";
  a.count = 1;
  a.hostname = "host-1";
  return a;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(SqliteStoreTest, NodeRoundTripsThroughAReopenedFile) {
  TempDir dir;
  const std::string path = dir.File("a.db");
  {
    auto store = SqliteStore::Open(path);
    ASSERT_OK(store);
    ASSERT_OK(ApplyOne(**store, PutNodeMutation{SampleNode()}));
  }
  auto store = SqliteStore::Open(path);
  ASSERT_OK(store);
  absl::StatusOr<std::vector<Node>> nodes = (*store)->LoadNodes();
  ASSERT_OK(nodes);
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0], AsLoaded(SampleNode()));
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

TEST(SqliteStoreTest, PutNodeStatusWritesHealthAndCordon) {
  TempDir dir;
  auto store = SqliteStore::Open(dir.File("a.db"));
  ASSERT_OK(store);
  ASSERT_OK(ApplyOne(**store, PutNodeMutation{SampleNode()}));
  Node changed = SampleNode();
  changed.schedulable = false;
  changed.last_heartbeat += absl::Seconds(10);
  changed.devices[0].healthy = false;
  changed.devices[2].healthy = true;
  ASSERT_OK(ApplyOne(**store, PutNodeStatusMutation{changed}));
  auto nodes = (*store)->LoadNodes();
  ASSERT_OK(nodes);
  EXPECT_EQ((*nodes)[0], AsLoaded(changed));
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

TEST(SqliteStoreTest, FailedTransactionLeavesPreviousState) {
  TempDir dir;
  auto store = SqliteStore::Open(dir.File("a.db"));
  ASSERT_OK(store);
  ASSERT_OK(ApplyOne(**store, PutNodeMutation{SampleNode()}));
  Node other = SampleNode();
  other.name =
      "n2";  // same device ids: the primary key refuses them mid-transaction
  EXPECT_FALSE(ApplyOne(**store, PutNodeMutation{other}).ok());
  auto nodes = (*store)->LoadNodes();
  ASSERT_OK(nodes);
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0], AsLoaded(SampleNode()));
}

TEST(SqliteStoreTest, AllocationsRoundTripAndEnd) {
  TempDir dir;
  const std::string path = dir.File("a.db");
  const Allocation live = SampleAllocation("a-1", AllocationState::kActive);
  {
    auto store = SqliteStore::Open(path);
    ASSERT_OK(store);
    ASSERT_OK(ApplyOne(**store, PutAllocationMutation{live, {"MIG-1"}, true}));
  }
  auto store = SqliteStore::Open(path);
  ASSERT_OK(store);
  auto loaded = (*store)->LoadAllocations();
  ASSERT_OK(loaded);
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].allocation, live);
  EXPECT_EQ((*loaded)[0].units, std::vector<std::string>{"MIG-1"});

  Allocation ended = live;
  ended.state = AllocationState::kReleased;
  ended.end_reason = "released";
  ended.ended_at = live.created_at + absl::Minutes(5);
  ASSERT_OK(ApplyOne(**store, PutAllocationMutation{ended, {"MIG-1"}}));
  loaded = (*store)->LoadAllocations();
  ASSERT_OK(loaded);
  EXPECT_EQ((*loaded)[0].allocation, ended);
  ASSERT_OK(ApplyOne(**store, DeleteAllocationMutation{"a-1"}));
  EXPECT_EQ(Count(path, "allocations"), 0);
  EXPECT_EQ(Count(path, "allocation_devices"), 0);
  EXPECT_EQ(Count(path, "allocation_units"), 0);
}

// The schema itself refuses a unit in two live allocations, and the whole batch
// with it.
TEST(SqliteStoreTest, SchemaRefusesDoubleBookingAtomically) {
  TempDir dir;
  const std::string path = dir.File("a.db");
  auto store = SqliteStore::Open(path);
  ASSERT_OK(store);
  ASSERT_OK(ApplyOne(
      **store,
      PutAllocationMutation{
          SampleAllocation("a-1", AllocationState::kActive), {"MIG-1"}, true}));
  const Mutation batch[] = {
      PutNodeMutation{SampleNode()},
      PutAllocationMutation{
          SampleAllocation("a-2", AllocationState::kActive), {"MIG-1"}, true}};
  EXPECT_THAT((*store)->Apply(batch),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("UNIQUE")));
  EXPECT_EQ(Count(path, "allocations"), 1);
  EXPECT_EQ(Count(path, "nodes"), 0);
  // Once the first has ended, the unit may be taken again.
  Allocation ended = SampleAllocation("a-1", AllocationState::kReleased);
  const Mutation release_then_take[] = {
      PutAllocationMutation{ended, {"MIG-1"}},
      PutAllocationMutation{
          SampleAllocation("a-2", AllocationState::kActive), {"MIG-1"}, true}};
  EXPECT_OK((*store)->Apply(release_then_take));
}

TEST(SqliteStoreTest, VersionOneFileIsMigratedKeepingItsNodes) {
  TempDir dir;
  const std::string path = dir.File("a.db");
  {
    auto db = SqliteDb::Open(path);
    ASSERT_OK(db);
    ASSERT_OK(Migrate(**db, SchemaMigrations().subspan(0, 1)));
    ASSERT_OK((*db)->Exec(
        "INSERT INTO nodes VALUES ('n1', 1, 5);"
        "INSERT INTO devices (id, node, device_index, device_class, model, "
        "memory_bytes, healthy, mig_enabled) VALUES ('GPU-a', 'n1', 0, 0, "
        "'T4', 0, 1, 0)"));
  }
  auto store = SqliteStore::Open(path);
  ASSERT_OK(store);
  EXPECT_EQ(*SchemaVersion((*store)->db()), SchemaMigrations().back().version);
  auto nodes = (*store)->LoadNodes();
  ASSERT_OK(nodes);
  ASSERT_EQ(nodes->size(), 1u);
  ASSERT_EQ((*nodes)[0].devices.size(), 1u);
  EXPECT_EQ((*nodes)[0].devices[0].id, "GPU-a");
  EXPECT_FALSE((*nodes)[0].devices[0].removed);
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
  EXPECT_EQ((*mode)->ColumnText(0), "wal");
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
  EXPECT_EQ((*q)->ColumnText(1), "x");
  // Migrating again is a no-op.
  (*q)->Reset();
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

}  // namespace
}  // namespace accelsched
