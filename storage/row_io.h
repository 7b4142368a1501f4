// How the one row mapping of the Store's tables (storage/rows.h) reaches a
// database: statement parameters as SqlValues, a result row through
// RowReader, queries through RowSource and writes through RowWriter. SQLite
// (storage/sqlite_db.h) and PostgreSQL (storage/pg_connection.h) implement
// them, each in its own dialect; the mapping writes the SQL once for both.
#ifndef ACCELSCHED_STORAGE_ROW_IO_H_
#define ACCELSCHED_STORAGE_ROW_IO_H_

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace accelsched {

// The two dialects differ, for the mapping, in their parameters (SQLite's
// `?N`, PostgreSQL's `$N`), their flags (SQLite's INTEGER 0 or 1,
// PostgreSQL's BOOLEAN) and in what breaks a tie of positions (SQLite's rowid:
// the order written; PostgreSQL has no such column).
enum class SqlDialect { kSqlite, kPostgres };

// One statement parameter: SQL NULL (monostate), an integer, a flag, or text.
using SqlValue = std::variant<std::monostate, int64_t, bool, std::string>;

// The current row of a query's result, its columns by their index in the
// SELECT list (from 0).
class RowReader {
 public:
  virtual ~RowReader() = default;

  // True when the column is SQL NULL: what an absent optional value is
  // written as. Ask before Text or Int, which cannot tell NULL apart.
  virtual bool IsNull(int col) = 0;
  // NULL reads as "".
  virtual std::string Text(int col) = 0;
  // INTERNAL when the value is not an integer (a schema mismatch; NULL too, on
  // PostgreSQL). A reader may instead keep a failed read as its query's error
  // (SqliteDb does).
  virtual absl::StatusOr<int64_t> Int(int col) = 0;
  // A flag column: true for SQLite's nonzero, PostgreSQL's `t`.
  virtual bool Bool(int col) = 0;
};

// A connection that runs queries.
class RowSource {
 public:
  virtual ~RowSource() = default;

  virtual SqlDialect dialect() const = 0;
  // Runs `sql`, which takes no parameters, and calls `row` on each row of its
  // result in order; `row`'s reader is valid only during that call. Returns
  // the query's error (as the implementation's statements report them), or
  // the first error `row` returns, which ends the query.
  virtual absl::Status Query(
      absl::string_view sql,
      absl::FunctionRef<absl::Status(RowReader&)> row) = 0;
};

// A connection, or a batch to be sent on one, that writes rows.
class RowWriter {
 public:
  virtual ~RowWriter() = default;

  virtual SqlDialect dialect() const = 0;
  // Runs `sql` with `params` (the first is `?1` or `$1`), or queues it to run
  // after the statements written before it. When `unchanged_error` is not OK,
  // it is the statement's error should it change no row. Returns the
  // statement's error; a writer that queues returns OK and reports the error
  // when it runs the batch (PgBatch).
  virtual absl::Status Write(absl::string_view sql,
                             std::vector<SqlValue> params,
                             absl::Status unchanged_error) = 0;
};

}  // namespace accelsched

#endif  // ACCELSCHED_STORAGE_ROW_IO_H_
