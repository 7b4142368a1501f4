// The checked layer over SQLite's C API: every failure of a bind, step, reset
// or exec reaches the caller with the SQL and, for a bind, the parameter.
#include "storage/sqlite_db.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace accelsched {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

class SqliteDbTest : public testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<SqliteDb>> db =
        SqliteDb::Open(dir_.File("a.db"));
    ASSERT_OK(db);
    db_ = std::move(*db);
    ASSERT_OK(
        db_->Exec("CREATE TABLE parent (id TEXT PRIMARY KEY);"
                  "CREATE TABLE t (a INTEGER UNIQUE, b TEXT NOT NULL, "
                  "p TEXT REFERENCES parent(id));"));
  }

  int64_t Rows() {
    absl::StatusOr<Statement*> q = db_->Prepare("SELECT count(*) FROM t");
    EXPECT_OK(q);
    absl::StatusOr<bool> row = (*q)->Step();
    EXPECT_OK(row);
    const int64_t n = (*q)->ColumnInt(0);
    EXPECT_OK((*q)->Reset());
    return n;
  }

  TempDir dir_;
  std::unique_ptr<SqliteDb> db_;
};

constexpr char kInsert[] = "INSERT INTO t (a, b) VALUES (?1, ?2)";

// The bug class of issue 9: SQLite's SQLITE_RANGE used to be dropped, so a
// column was silently left at its default.
TEST_F(SqliteDbTest, BindPastTheParameterCountIsInternalNamingIt) {
  absl::StatusOr<Statement*> q = db_->Prepare(kInsert);
  ASSERT_OK(q);
  EXPECT_THAT((*q)->Bind(1, 7).Bind(2, "x").Bind(3, 1).Run(),
              StatusIs(absl::StatusCode::kInternal,
                       AllOf(HasSubstr("parameter ?3"),
                             HasSubstr("2 parameters"), HasSubstr(kInsert))));
  EXPECT_THAT((*q)->Bind(0, 7).Bind(2, "x").Run(),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("?0")));
  EXPECT_EQ(Rows(), 0);
  // The statement is usable again.
  q = db_->Prepare(kInsert);
  ASSERT_OK(q);
  EXPECT_OK((*q)->Bind(1, 7).Bind(2, "x").Run());
  EXPECT_EQ(Rows(), 1);
}

// SQLite would run the statement with NULL for a forgotten parameter.
TEST_F(SqliteDbTest, UnboundParameterIsInternalAndNothingRuns) {
  absl::StatusOr<Statement*> q = db_->Prepare(
      "INSERT INTO t (a, b) VALUES "
      "(?1, coalesce(?2, 'default'))");
  ASSERT_OK(q);
  EXPECT_THAT((*q)->Bind(1, 7).Run(),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("parameter ?2 is not bound")));
  EXPECT_EQ(Rows(), 0);
}

// A bind that SQLite itself refuses (here: a statement mid-step) is kept and
// returned by the next step.
TEST_F(SqliteDbTest, BindRefusedBySqliteIsReturnedByTheNextStep) {
  absl::StatusOr<Statement*> q = db_->Prepare("SELECT ?1 UNION ALL SELECT 2");
  ASSERT_OK(q);
  absl::StatusOr<bool> row = (*q)->Bind(1, 1).Step();
  ASSERT_OK(row);
  ASSERT_TRUE(*row);
  EXPECT_EQ((*q)->ColumnInt(0), 1);
  (*q)->Bind(1, 5);
  EXPECT_THAT((*q)->Step(),
              StatusIs(absl::StatusCode::kInternal,
                       AllOf(HasSubstr("bind of parameter ?1"),
                             HasSubstr("SELECT ?1 UNION ALL SELECT 2"))));
}

TEST_F(SqliteDbTest, FailedStepNamesTheConstraintAndTheSql) {
  absl::StatusOr<Statement*> q = db_->Prepare(kInsert);
  ASSERT_OK(q);
  ASSERT_OK((*q)->Bind(1, 7).Bind(2, "x").Run());
  EXPECT_THAT((*q)->Bind(1, 7).Bind(2, "y").Run(),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       AllOf(HasSubstr("UNIQUE constraint failed: t.a"),
                             HasSubstr(kInsert))));
  q = db_->Prepare("INSERT INTO t (a, b, p) VALUES (?1, ?2, ?3)");
  ASSERT_OK(q);
  EXPECT_THAT((*q)->Bind(1, 8).Bind(2, "x").Bind(3, "nobody").Run(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("FOREIGN KEY constraint failed")));
  EXPECT_THAT((*q)->Bind(1, 9).BindNull(2).BindNull(3).Run(),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("NOT NULL constraint failed: t.b")));
  EXPECT_EQ(Rows(), 1);
}

TEST_F(SqliteDbTest, PrepareTakesExactlyOneStatement) {
  EXPECT_THAT(db_->Prepare("SELECT 1; SELECT 2"),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("not exactly one statement")));
  EXPECT_THAT(db_->Prepare("  "),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("not exactly one statement")));
  EXPECT_OK(db_->Prepare("SELECT 1;  \n"));
  EXPECT_THAT(
      db_->Prepare("SELECT x FROM nowhere"),
      StatusIs(absl::StatusCode::kInternal, HasSubstr("no such table")));
}

TEST_F(SqliteDbTest, ExecErrorNamesTheSql) {
  EXPECT_THAT(db_->Exec("INSERT INTO nowhere VALUES (1)"),
              StatusIs(absl::StatusCode::kInternal,
                       AllOf(HasSubstr("no such table: nowhere"),
                             HasSubstr("INSERT INTO nowhere"))));
}

TEST_F(SqliteDbTest, TransactionRollsBackUnlessCommitted) {
  {
    Transaction txn(db_.get());
    ASSERT_OK(txn.begin_status());
    ASSERT_OK(db_->Exec("INSERT INTO t (a, b) VALUES (1, 'x')"));
    EXPECT_TRUE(db_->in_transaction());
  }
  EXPECT_FALSE(db_->in_transaction());
  EXPECT_EQ(Rows(), 0);
  Transaction txn(db_.get());
  ASSERT_OK(txn.begin_status());
  ASSERT_OK(db_->Exec("INSERT INTO t (a, b) VALUES (1, 'x')"));
  ASSERT_OK(txn.Commit());
  EXPECT_OK(txn.Rollback());  // nothing open: no-op
  EXPECT_EQ(Rows(), 1);
}

// SQLite ends a transaction by itself after some errors; rolling back then is
// not an error.
TEST_F(SqliteDbTest, RollbackAfterSqliteEndedTheTransactionIsOk) {
  Transaction txn(db_.get());
  ASSERT_OK(txn.begin_status());
  ASSERT_OK(db_->Exec("ROLLBACK"));  // as SQLite does after SQLITE_FULL
  EXPECT_OK(txn.Rollback());
  EXPECT_FALSE(db_->in_transaction());
}

}  // namespace
}  // namespace accelsched
