// A thin layer over libpq: one connection, statements prepared once per
// connection (by their SQL text) and run with text parameters, transactions,
// and PostgreSQL's SQLSTATEs mapped to absl::Status. Every libpq result is
// checked here. A connection that breaks is reconnected by the next
// Reconnect(); statements are prepared again on the new one. Not thread-safe:
// the owner serialises access.
#ifndef ACCELSCHED_STORAGE_PG_CONNECTION_H_
#define ACCELSCHED_STORAGE_PG_CONNECTION_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "storage/row_io.h"

struct pg_conn;
struct pg_result;

namespace accelsched {

// One statement parameter in PostgreSQL's text form; nullopt is SQL NULL.
class PgParam {
 public:
  PgParam(absl::string_view v) : value_(std::string(v)) {}  // NOLINT
  PgParam(const std::string& v) : value_(v) {}              // NOLINT
  PgParam(const char* v) : value_(std::string(v)) {}        // NOLINT
  PgParam(int64_t v);                                       // NOLINT
  PgParam(int v) : PgParam(int64_t{v}) {}                   // NOLINT
  PgParam(bool v) : value_(v ? "t" : "f") {}                // NOLINT
  static PgParam Null() { return PgParam(); }
  // Empty strings as NULL (for optional foreign keys).
  static PgParam OrNull(absl::string_view v) {
    return v.empty() ? Null() : PgParam(v);
  }
  // A SqlValue in PostgreSQL's text form: a flag as `t` or `f`.
  static PgParam Of(SqlValue v);

  const std::optional<std::string>& value() const { return value_; }

 private:
  PgParam() = default;
  std::optional<std::string> value_;
};

// A statement's result: its rows (as text) and how many rows it changed.
class PgResult {
 public:
  explicit PgResult(pg_result* result);
  ~PgResult();
  PgResult(PgResult&& other) noexcept;
  PgResult& operator=(PgResult&& other) noexcept;
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;

  int rows() const;
  // Rows inserted, updated or deleted (PQcmdTuples); 0 for a query.
  int64_t affected() const;
  bool IsNull(int row, int col) const;
  std::string Text(int row, int col) const;
  // INTERNAL when the value is not an integer (a schema mismatch).
  absl::StatusOr<int64_t> Int(int row, int col) const;
  // PostgreSQL's boolean text: "t" or "f".
  bool Bool(int row, int col) const;

 private:
  pg_result* result_;
};

// A connection; the RowSource (storage/row_io.h) the Store's rows
// (storage/rows.h) are read through. Writes go through a PgBatch.
class PgConnection final : public RowSource {
 public:
  // One statement of a batch (RunBatch), and what its result must be.
  struct Statement {
    std::string sql;
    std::vector<PgParam> params;
    // An error for a result that ran but is wrong (e.g. changed no row);
    // none: any result will do.
    std::function<absl::Status(const PgResult&)> check;
  };

  struct Options {
    // libpq's connect_timeout, unless the URI sets one.
    absl::Duration connect_timeout = absl::Seconds(5);
    // How long the other end may stay silent before the connection counts as
    // lost, on both ends: libpq's keepalives and tcp_user_timeout here, the
    // server's tcp_keepalives_* and tcp_user_timeout settings there. A
    // network cut without a reset then fails a call, and ends the session on
    // the server, instead of leaving both waiting until TCP gives up (about
    // 15 minutes). Whole seconds, at least 1 s (keepalives are whole seconds:
    // below 6 s detection takes a few seconds more); the URI may override
    // libpq's.
    absl::Duration network_timeout = absl::Seconds(10);
    // Shown in pg_stat_activity (fallback_application_name).
    std::string application_name = "accelschedd";
    // Session settings applied with set_config() after every (re)connection,
    // after the network ones, e.g. {"idle_in_transaction_session_timeout",
    // "10s"}.
    std::vector<std::pair<std::string, std::string>> settings;
  };

  // Connects to `uri` (a libpq connection URI or key=value string).
  // UNAVAILABLE naming the server (never the password) and libpq's reason when
  // it cannot connect or authenticate; INVALID_ARGUMENT when `uri` does not
  // parse (never quoting it: it may hold the password).
  static absl::StatusOr<std::unique_ptr<PgConnection>> Open(
      const std::string& uri, const Options& options);
  ~PgConnection() override;
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // "postgresql://user@host:port/dbname": the URI without its password.
  static std::string Describe(const std::string& uri);
  const std::string& description() const { return description_; }

  // Runs `sql`, which may hold several statements and takes no parameters.
  absl::Status Exec(absl::string_view sql);
  // Runs `sql` with `params` ($1, $2, ...), prepared on first use on this
  // connection. Errors: ALREADY_EXISTS for a unique violation,
  // FAILED_PRECONDITION for another broken constraint, ABORTED for a
  // serialization failure or deadlock, UNAVAILABLE when the connection is lost
  // or the server is shutting down or a lock or statement times out,
  // RESOURCE_EXHAUSTED for a full disk, INTERNAL otherwise; each with
  // PostgreSQL's message and the statement.
  absl::StatusOr<PgResult> Run(absl::string_view sql,
                               std::initializer_list<PgParam> params);
  absl::StatusOr<PgResult> Run(absl::string_view sql,
                               const std::vector<PgParam>& params);

  SqlDialect dialect() const override { return SqlDialect::kPostgres; }
  // RowSource: Run(sql, {}), then `row` on each row of the result. Errors as
  // Run, or `row`'s.
  absl::Status Query(absl::string_view sql,
                     absl::FunctionRef<absl::Status(RowReader&)> row) override;

  // Sends every statement at once (libpq's pipeline mode: one round trip for
  // the lot), each prepared on first use as Run does, then reads the results
  // in order. Returns the first error, a statement's (as Run) or its
  // check's; the statements after a failed one do not run. Each statement
  // outside a transaction commits on its own: send BEGIN first.
  absl::Status RunBatch(const std::vector<Statement>& statements);

  // False once libpq has seen the connection break, or once this class gave
  // it up (results it could not read).
  bool ok() const;
  // Reconnects when the connection is broken (a no-op otherwise), applying
  // the session settings again. UNAVAILABLE when the server cannot be reached.
  absl::Status Reconnect();
  // Rolls back the transaction in progress, if any; a broken connection has
  // none (the server rolls it back).
  void RollbackIfOpen();

 private:
  PgConnection(pg_conn* conn, std::string uri, Options options);
  // Connects to `uri`; the caller frees the connection with PQfinish.
  // UNAVAILABLE as Open.
  static absl::StatusOr<pg_conn*> Connect(const std::string& uri,
                                          const Options& options);
  absl::Status ApplySettings();
  // Closes the connection: ok() is false until Reconnect() opens a fresh
  // one, the session settings applied again.
  void Abandon();
  absl::Status ResultError(pg_result* result, absl::string_view sql) const;

  pg_conn* conn_;  // null once abandoned
  std::string uri_;
  std::string description_;
  Options options_;
  // SQL text -> prepared statement name, on the current connection.
  absl::flat_hash_map<std::string, std::string> prepared_;
};

// The statements of one RunBatch, queued in order: the RowWriter the Store's
// rows (storage/rows.h) are written through, so that a transaction's writes
// reach the server in one round trip.
class PgBatch final : public RowWriter {
 public:
  SqlDialect dialect() const override { return SqlDialect::kPostgres; }
  // RowWriter: queues the statement, its check `unchanged_error` when that is
  // not OK and the statement changed no row. Always OK: RunBatch returns the
  // statement's error.
  absl::Status Write(absl::string_view sql, std::vector<SqlValue> params,
                     absl::Status unchanged_error) override;
  void Add(PgConnection::Statement statement) {
    statements_.push_back(std::move(statement));
  }
  void Clear() { statements_.clear(); }
  const std::vector<PgConnection::Statement>& statements() const {
    return statements_;
  }

 private:
  std::vector<PgConnection::Statement> statements_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_STORAGE_PG_CONNECTION_H_
