// A thin RAII layer over the SQLite C API: one connection, cached prepared
// statements, transactions, and SQLite result codes mapped to absl::Status.
// Every result code SQLite returns is checked here: callers see the first error
// of a statement with its SQL (and, for a bind, the parameter index). Not
// thread-safe: the owner serialises access to a connection.
#ifndef ACCELSCHED_STORAGE_SQLITE_DB_H_
#define ACCELSCHED_STORAGE_SQLITE_DB_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "storage/row_io.h"

struct sqlite3;
struct sqlite3_stmt;

namespace accelsched {

// One prepared statement. Bind indices start at 1, as SQLite's `?N` do. Its
// current row is a RowReader (storage/row_io.h).
//
// Errors are sticky until Reset(): a Bind that SQLite refuses, or whose index
// is not one of the statement's parameters (a programming error), is kept, and
// the next Step() or Run() returns it without touching the database. So a
// chain `q->Bind(1, a).Bind(2, b).Run()` needs exactly one check. Step() also
// refuses to run while any parameter is left unbound: SQLite would silently
// use NULL.
class Statement final : public RowReader {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt);
  // Finalizes the statement.
  ~Statement() override;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& Bind(int i, int64_t v);
  Statement& Bind(int i, absl::string_view v);
  Statement& BindNull(int i);
  // Binds empty strings as NULL (for optional foreign keys).
  Statement& BindOrNull(int i, absl::string_view v);
  // A SqlValue: NULL, an integer, text, or a flag as 0 or 1 (SQLite has no
  // booleans).
  Statement& BindValue(int i, const SqlValue& v);

  // True when a row is ready, false when the statement is done. Returns the
  // first error kept since the last Reset (a bind, an unbound parameter, a
  // failed column read) or this step's error; the statement is then reset.
  absl::StatusOr<bool> Step();
  // Steps to completion (for statements that return no rows, or whose rows are
  // not wanted), then resets. Returns the first error, as Step does.
  absl::Status Run();
  // Rewinds the statement and clears its bindings. Returns the error kept
  // since the last Step, if any (a failed column read of a row that was not
  // followed by another Step), and clears it; else a failure of the reset
  // itself. SQLite's reset repeats the error of a failed step: that one was
  // already returned by Step and is not returned again.
  absl::Status Reset();

  // Column values of the current row. A value SQLite cannot produce (out of
  // memory) is kept as the statement's error, returned by the next Step.
  int64_t ColumnInt(int i);
  // RowReader. IsNull: true when the value is NULL (ColumnInt reads it as 0);
  // ask before reading the value: SQLite's type of a column changes with a
  // conversion. Text: NULL reads as "". Int: ColumnInt, which never fails
  // here (a failed read is kept as above). Bool: ColumnInt != 0.
  bool IsNull(int col) override;
  std::string Text(int col) override;
  absl::StatusOr<int64_t> Int(int col) override { return ColumnInt(col); }
  bool Bool(int col) override { return ColumnInt(col) != 0; }

  // The statement's SQL text, for messages.
  absl::string_view sql() const;

 private:
  // Records a failed bind of parameter `i` unless an error is already kept.
  void KeepBindError(int i, int rc);
  // False (and an error kept) when `i` is not one of the parameters.
  bool CheckIndex(int i);
  absl::Status StepError(int rc);

  sqlite3* db_;
  sqlite3_stmt* stmt_;
  absl::Status status_;      // the first error since the last Reset
  std::vector<bool> bound_;  // per parameter, 1-based index minus one
  bool step_failed_ = false;
};

// A connection; the RowSource and RowWriter (storage/row_io.h) through which
// the Store's rows (storage/rows.h) are read and written, statement by
// statement.
class SqliteDb final : public RowSource, public RowWriter {
 public:
  // Opens (creating when absent) with WAL, foreign keys and synchronous=FULL,
  // and checks that the file is a readable SQLite database. FAILED_PRECONDITION
  // when the file cannot be opened or written (missing directory, read-only),
  // DATA_LOSS when it is not a SQLite database.
  static absl::StatusOr<std::unique_ptr<SqliteDb>> Open(
      const std::string& path);
  // Finalizes every statement and closes the connection. A failure to close
  // (a programming error: a statement not finalized) is printed to stderr.
  ~SqliteDb() override;
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // Runs SQL text without parameters (schema, pragmas, transaction control).
  absl::Status Exec(const char* sql);
  // A statement prepared once per connection and kept; it is reset before it
  // is returned. INTERNAL for SQL that is not exactly one statement.
  absl::StatusOr<Statement*> Prepare(absl::string_view sql);

  SqlDialect dialect() const override { return SqlDialect::kSqlite; }
  // RowSource: runs `sql` (Prepare, then Step to the end) and calls `row` on
  // each row. Errors as Prepare and Step, or `row`'s (the statement is then
  // reset).
  absl::Status Query(absl::string_view sql,
                     absl::FunctionRef<absl::Status(RowReader&)> row) override;
  // RowWriter: prepares `sql`, binds `params` and runs it (Run), now.
  // Errors as Prepare and Run, then `unchanged_error` when it is not OK and
  // the statement changed no row.
  absl::Status Write(absl::string_view sql, std::vector<SqlValue> params,
                     absl::Status unchanged_error) override;

  // Rows changed by the last INSERT, UPDATE or DELETE.
  int64_t changes() const;
  // True between BEGIN and COMMIT/ROLLBACK, false once SQLite has ended the
  // transaction (also when it rolled back by itself after an error).
  bool in_transaction() const;
  const std::string& path() const { return path_; }

  // The status for a SQLite result code, with the connection's message.
  absl::Status Error(int rc, absl::string_view what) const;

 private:
  SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

  sqlite3* db_;
  std::string path_;
  absl::flat_hash_map<std::string, std::unique_ptr<Statement>> statements_;
};

// BEGIN IMMEDIATE on construction; rolls back on destruction unless committed
// or rolled back.
class Transaction {
 public:
  explicit Transaction(SqliteDb* db);
  // Rolls back when still open; a failed rollback is printed to stderr, since
  // a destructor cannot return it (call Rollback to see it).
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  const absl::Status& begin_status() const { return begin_status_; }
  // On failure the transaction may still be open (SQLite keeps it open after
  // SQLITE_BUSY): call Rollback.
  absl::Status Commit();
  // Ends the transaction without writing. OK when SQLite already rolled it back
  // by itself (as it does after some errors).
  absl::Status Rollback();

 private:
  SqliteDb* db_;
  absl::Status begin_status_;
  bool open_ = false;
};

}  // namespace accelsched

#endif  // ACCELSCHED_STORAGE_SQLITE_DB_H_
