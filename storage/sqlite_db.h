// A thin RAII layer over the SQLite C API: one connection, cached prepared
// statements, transactions, and SQLite result codes mapped to absl::Status. Not
// thread-safe: the owner serialises access.
#ifndef ACCELSCHED_STORAGE_SQLITE_DB_H_
#define ACCELSCHED_STORAGE_SQLITE_DB_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

struct sqlite3;
struct sqlite3_stmt;

namespace accelsched {

// One prepared statement; Reset() before reuse. Bind indices start at 1.
class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& Bind(int i, int64_t v);
  Statement& Bind(int i, absl::string_view v);
  Statement& BindNull(int i);
  // Binds empty strings as NULL (for optional foreign keys).
  Statement& BindOrNull(int i, absl::string_view v);

  // True when a row is ready, false when done.
  absl::StatusOr<bool> Step();
  // Steps to completion, for statements that return no rows.
  absl::Status Run();
  void Reset();

  int64_t ColumnInt(int i) const;
  std::string ColumnText(int i) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

class SqliteDb {
 public:
  // Opens (creating when absent) with WAL, foreign keys and synchronous=FULL,
  // and checks that the file is a readable SQLite database.
  static absl::StatusOr<std::unique_ptr<SqliteDb>> Open(
      const std::string& path);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // Runs SQL text without parameters (schema, pragmas, transaction control).
  absl::Status Exec(const char* sql);
  // A statement prepared once per connection and kept; reset before it is
  // returned.
  absl::StatusOr<Statement*> Prepare(absl::string_view sql);

  int64_t changes() const;
  const std::string& path() const { return path_; }

  // The status for a SQLite result code, with the connection's message.
  absl::Status Error(int rc, absl::string_view what) const;

 private:
  SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

  sqlite3* db_;
  std::string path_;
  absl::flat_hash_map<std::string, std::unique_ptr<Statement>> statements_;
};

// BEGIN IMMEDIATE on construction; rolls back on destruction unless committed.
class Transaction {
 public:
  explicit Transaction(SqliteDb* db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  const absl::Status& begin_status() const { return begin_status_; }
  absl::Status Commit();

 private:
  SqliteDb* db_;
  absl::Status begin_status_;
  bool open_ = false;
};

}  // namespace accelsched

#endif  // ACCELSCHED_STORAGE_SQLITE_DB_H_
