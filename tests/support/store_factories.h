// Opens a Store of each implementation, and opens it again on what was
// committed (a restart), for tests that run the same cases on every store.
#ifndef ACCELSCHED_TESTS_SUPPORT_STORE_FACTORIES_H_
#define ACCELSCHED_TESTS_SUPPORT_STORE_FACTORIES_H_

#include <memory>
#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/commit/store.h"
#include "gtest/gtest.h"
#include "storage/sqlite_db.h"
#include "storage/sqlite_store.h"
#include "tests/support/fake_store.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace accelsched {

// A SQLite file in a fresh test directory. The checkpointer runs every
// millisecond, so that it works beside every commit of a test.
class SqliteFactory {
 public:
  // Null (and a test failure) when the file cannot be opened.
  std::unique_ptr<Store> Open() {
    SqliteStore::Options options;
    options.checkpoint_interval = absl::Milliseconds(1);
    absl::StatusOr<std::unique_ptr<SqliteStore>> store =
        SqliteStore::Open(path_, options);
    EXPECT_OK(store);
    return store.ok() ? std::move(*store) : nullptr;
  }
  // Runs `sql` on a connection of its own, beside the open store.
  absl::Status RunSql(const std::string& sql) {
    absl::StatusOr<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path_);
    if (!db.ok()) return db.status();
    return (*db)->Exec(sql.c_str());
  }

 private:
  TempDir dir_;
  std::string path_ = dir_.File("store.db");
};

// The fake's Disk, reopened.
class FakeFactory {
 public:
  std::unique_ptr<Store> Open() { return std::make_unique<FakeStore>(disk_); }

 private:
  std::shared_ptr<FakeStore::Disk> disk_ = std::make_shared<FakeStore::Disk>();
};

using StoreFactories = ::testing::Types<SqliteFactory, FakeFactory>;

// Names the instantiations "Sqlite" and "Fake" in test output.
class StoreFactoryNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, SqliteFactory> ? "Sqlite" : "Fake";
  }
};

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_STORE_FACTORIES_H_
