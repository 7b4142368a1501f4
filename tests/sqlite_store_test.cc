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
    ASSERT_OK((*store)->PutNode(SampleNode()));
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
  ASSERT_OK((*store)->PutNode(SampleNode()));
  Node smaller = SampleNode();
  smaller.labels = {{"pool", "b"}};
  smaller.devices.erase(smaller.devices.begin() + 1, smaller.devices.end());
  ASSERT_OK((*store)->PutNode(smaller));
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
  ASSERT_OK((*store)->PutNode(SampleNode()));
  Node changed = SampleNode();
  changed.schedulable = false;
  changed.last_heartbeat += absl::Seconds(10);
  changed.devices[0].healthy = false;
  changed.devices[2].healthy = true;
  ASSERT_OK((*store)->PutNodeStatus(changed));
  auto nodes = (*store)->LoadNodes();
  ASSERT_OK(nodes);
  EXPECT_EQ((*nodes)[0], AsLoaded(changed));
}

TEST(SqliteStoreTest, DeleteNodeRemovesEverythingItOwns) {
  TempDir dir;
  const std::string path = dir.File("a.db");
  auto store = SqliteStore::Open(path);
  ASSERT_OK(store);
  ASSERT_OK((*store)->PutNode(SampleNode()));
  ASSERT_OK((*store)->DeleteNode("n1"));
  EXPECT_THAT((*store)->DeleteNode("n1"),
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
  ASSERT_OK((*store)->PutNode(SampleNode()));
  Node other = SampleNode();
  other.name =
      "n2";  // same device ids: the primary key refuses them mid-transaction
  EXPECT_FALSE((*store)->PutNode(other).ok());
  auto nodes = (*store)->LoadNodes();
  ASSERT_OK(nodes);
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0], AsLoaded(SampleNode()));
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
