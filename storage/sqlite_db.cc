#include "storage/sqlite_db.h"

#include <sqlite3.h>

#include <cstdio>
#include <utility>
#include <variant>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace accelsched {
namespace {

// Extended result codes are on, so the constraint kind is known.
absl::StatusCode CodeFor(int rc) {
  switch (rc) {
    case SQLITE_CONSTRAINT_UNIQUE:
    case SQLITE_CONSTRAINT_PRIMARYKEY:
      return absl::StatusCode::kAlreadyExists;
    case SQLITE_CONSTRAINT_FOREIGNKEY:
    case SQLITE_CONSTRAINT_CHECK:
      return absl::StatusCode::kFailedPrecondition;
    default:
      break;
  }
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::StatusCode::kUnavailable;
    case SQLITE_FULL:
    case SQLITE_NOMEM:
      return absl::StatusCode::kResourceExhausted;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::StatusCode::kDataLoss;
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
      return absl::StatusCode::kFailedPrecondition;
    default:
      // SQLITE_RANGE, SQLITE_MISUSE, NOT NULL violations, I/O errors: nothing
      // a caller can fix by changing its request.
      return absl::StatusCode::kInternal;
  }
}

// Closes a connection; a failure means a statement was left unfinalized.
void CloseOrReport(sqlite3* db, const std::string& path) {
  const int rc = sqlite3_close(db);
  if (rc != SQLITE_OK) {
    std::fprintf(stderr, "accelsched: closing database \"%s\": %s\n",
                 path.c_str(), sqlite3_errstr(rc));
  }
}

}  // namespace

Statement::Statement(sqlite3* db, sqlite3_stmt* stmt)
    : db_(db),
      stmt_(stmt),
      bound_(static_cast<size_t>(sqlite3_bind_parameter_count(stmt)), false) {}

// sqlite3_finalize returns the error of the statement's last step, which Step
// already returned; there is nothing else to report.
Statement::~Statement() { (void)sqlite3_finalize(stmt_); }

absl::string_view Statement::sql() const { return sqlite3_sql(stmt_); }

bool Statement::CheckIndex(int i) {
  if (i >= 1 && static_cast<size_t>(i) <= bound_.size()) return true;
  if (status_.ok()) {
    status_ = absl::InternalError(absl::StrCat(
        "sqlite: bind of parameter ?", i, " to a statement with ",
        bound_.size(), " parameters (a programming error) in \"", sql(), "\""));
  }
  return false;
}

void Statement::KeepBindError(int i, int rc) {
  if (rc == SQLITE_OK) {
    bound_[static_cast<size_t>(i - 1)] = true;
    return;
  }
  if (status_.ok()) {
    status_ = absl::Status(
        CodeFor(rc), absl::StrCat("sqlite: bind of parameter ?", i, ": ",
                                  sqlite3_errstr(rc), " in \"", sql(), "\""));
  }
}

Statement& Statement::Bind(int i, int64_t v) {
  if (CheckIndex(i)) KeepBindError(i, sqlite3_bind_int64(stmt_, i, v));
  return *this;
}

Statement& Statement::Bind(int i, absl::string_view v) {
  if (CheckIndex(i)) {
    KeepBindError(
        i, sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()),
                             SQLITE_TRANSIENT));
  }
  return *this;
}

Statement& Statement::BindNull(int i) {
  if (CheckIndex(i)) KeepBindError(i, sqlite3_bind_null(stmt_, i));
  return *this;
}

Statement& Statement::BindOrNull(int i, absl::string_view v) {
  return v.empty() ? BindNull(i) : Bind(i, v);
}

Statement& Statement::BindValue(int i, const SqlValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return BindNull(i);
  if (const bool* flag = std::get_if<bool>(&v)) {
    return Bind(i, int64_t{*flag});
  }
  if (const int64_t* n = std::get_if<int64_t>(&v)) return Bind(i, *n);
  return Bind(i, absl::string_view(std::get<std::string>(v)));
}

absl::Status Statement::StepError(int rc) {
  return absl::Status(CodeFor(rc), absl::StrCat("sqlite: ", sqlite3_errmsg(db_),
                                                " in \"", sql(), "\""));
}

absl::StatusOr<bool> Statement::Step() {
  if (status_.ok()) {
    for (size_t k = 0; k < bound_.size(); ++k) {
      if (bound_[k]) continue;
      status_ = absl::InternalError(absl::StrCat(
          "sqlite: parameter ?", k + 1,
          " is not bound (a programming error) in \"", sql(), "\""));
      break;
    }
  }
  absl::Status error = status_;
  if (error.ok()) {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    step_failed_ = true;
    error = StepError(rc);
  }
  status_ = absl::OkStatus();  // returned here, not again by the reset
  if (absl::Status reset = Reset(); !reset.ok()) {
    return absl::Status(
        error.code(),
        absl::StrCat(error.message(), "; then: ", reset.message()));
  }
  return error;
}

absl::Status Statement::Run() {
  for (;;) {
    absl::StatusOr<bool> row = Step();
    if (!row.ok()) return row.status();  // Step has reset the statement
    if (!*row) break;
  }
  return Reset();
}

absl::Status Statement::Reset() {
  const int rc = sqlite3_reset(stmt_);
  const int cleared = sqlite3_clear_bindings(stmt_);
  const bool repeats_step_error = step_failed_;
  const absl::Status kept = std::move(status_);
  status_ = absl::OkStatus();
  bound_.assign(bound_.size(), false);
  step_failed_ = false;
  if (!kept.ok()) return kept;
  if (rc != SQLITE_OK && !repeats_step_error) {
    return absl::Status(CodeFor(rc),
                        absl::StrCat("sqlite: reset: ", sqlite3_errmsg(db_),
                                     " in \"", sql(), "\""));
  }
  if (cleared != SQLITE_OK) {
    return absl::Status(
        CodeFor(cleared),
        absl::StrCat("sqlite: clear bindings: ", sqlite3_errstr(cleared),
                     " in \"", sql(), "\""));
  }
  return absl::OkStatus();
}

int64_t Statement::ColumnInt(int i) {
  const int64_t v = sqlite3_column_int64(stmt_, i);
  // SQLite reports a failed conversion only through the connection's code.
  if (v == 0 && sqlite3_errcode(db_) == SQLITE_NOMEM && status_.ok()) {
    status_ = StepError(SQLITE_NOMEM);
  }
  return v;
}

bool Statement::IsNull(int i) {
  return sqlite3_column_type(stmt_, i) == SQLITE_NULL;
}

std::string Statement::Text(int i) {
  const bool null = sqlite3_column_type(stmt_, i) == SQLITE_NULL;
  const unsigned char* text = sqlite3_column_text(stmt_, i);
  if (text == nullptr) {
    if (!null && status_.ok()) status_ = StepError(SQLITE_NOMEM);
    return "";
  }
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, i)));
}

absl::StatusOr<std::unique_ptr<SqliteDb>> SqliteDb::Open(
    const std::string& path) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &raw,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
      nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_extended_result_codes(raw, 1);
  if (rc != SQLITE_OK) {
    absl::Status s(
        CodeFor(rc),
        absl::StrCat("cannot open database \"", path,
                     "\": ", raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
    CloseOrReport(raw, path);  // a handle is returned even on failure
    return s;
  }
  std::unique_ptr<SqliteDb> db(new SqliteDb(raw, path));
  // Reading the schema first turns "not a database" into a clear error before
  // anything is written to the file.
  for (const char* pragma :
       {"PRAGMA schema_version", "PRAGMA busy_timeout = 5000",
        "PRAGMA foreign_keys = ON", "PRAGMA synchronous = FULL"}) {
    absl::Status s = db->Exec(pragma);
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat("cannot open database \"",
                                                 path, "\": ", s.message()));
    }
  }
  absl::StatusOr<Statement*> wal = db->Prepare("PRAGMA journal_mode = WAL");
  if (!wal.ok()) return wal.status();
  absl::StatusOr<bool> row = (*wal)->Step();
  if (!row.ok()) {
    return absl::Status(row.status().code(),
                        absl::StrCat("cannot open database \"", path,
                                     "\": ", row.status().message()));
  }
  const bool in_wal = *row && (*wal)->Text(0) == "wal";
  if (absl::Status s = (*wal)->Reset(); !s.ok()) return s;
  if (!in_wal) {
    return absl::FailedPreconditionError(
        absl::StrCat("database \"", path, "\" cannot be put in WAL mode"));
  }
  return db;
}

SqliteDb::~SqliteDb() {
  statements_.clear();  // finalize before closing
  CloseOrReport(db_, path_);
}

absl::Status SqliteDb::Exec(const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return absl::OkStatus();
  absl::Status s(CodeFor(rc),
                 absl::StrCat("sqlite: ", err ? err : sqlite3_errstr(rc),
                              " in \"", sql, "\""));
  sqlite3_free(err);
  return s;
}

absl::StatusOr<Statement*> SqliteDb::Prepare(absl::string_view sql) {
  auto it = statements_.find(sql);
  if (it != statements_.end()) {
    if (absl::Status s = it->second->Reset(); !s.ok()) return s;
    return it->second.get();
  }
  sqlite3_stmt* stmt = nullptr;
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt, &tail);
  if (rc != SQLITE_OK) return Error(rc, absl::StrCat("prepare \"", sql, "\""));
  auto owned = std::make_unique<Statement>(db_, stmt);
  // Text after the first statement would be silently ignored by SQLite.
  const absl::string_view rest =
      tail == nullptr ? absl::string_view()
                      : sql.substr(static_cast<size_t>(tail - sql.data()));
  if (stmt == nullptr || !absl::StripAsciiWhitespace(rest).empty()) {
    return absl::InternalError(
        absl::StrCat("sqlite: prepare \"", sql,
                     "\": not exactly one statement (a programming error)"));
  }
  Statement* out = owned.get();
  statements_.emplace(std::string(sql), std::move(owned));
  return out;
}

absl::Status SqliteDb::Query(absl::string_view sql,
                             absl::FunctionRef<absl::Status(RowReader&)> row) {
  absl::StatusOr<Statement*> q = Prepare(sql);
  if (!q.ok()) return q.status();
  for (;;) {
    absl::StatusOr<bool> more = (*q)->Step();
    if (!more.ok()) return more.status();  // Step has reset the statement
    if (!*more) return absl::OkStatus();
    if (absl::Status s = row(**q); !s.ok()) {
      if (absl::Status reset = (*q)->Reset(); !reset.ok()) {
        return absl::Status(
            s.code(), absl::StrCat(s.message(), "; then: ", reset.message()));
      }
      return s;
    }
  }
}

absl::Status SqliteDb::Write(absl::string_view sql,
                             std::vector<SqlValue> params,
                             absl::Status unchanged_error) {
  absl::StatusOr<Statement*> q = Prepare(sql);
  if (!q.ok()) return q.status();
  for (size_t i = 0; i < params.size(); ++i) {
    (*q)->BindValue(static_cast<int>(i) + 1, params[i]);
  }
  if (absl::Status s = (*q)->Run(); !s.ok()) return s;
  if (!unchanged_error.ok() && changes() == 0) return unchanged_error;
  return absl::OkStatus();
}

int64_t SqliteDb::changes() const { return sqlite3_changes64(db_); }

bool SqliteDb::in_transaction() const {
  return sqlite3_get_autocommit(db_) == 0;
}

absl::Status SqliteDb::Error(int rc, absl::string_view what) const {
  return absl::Status(CodeFor(rc),
                      absl::StrCat(what, ": ", sqlite3_errmsg(db_)));
}

Transaction::Transaction(SqliteDb* db) : db_(db) {
  begin_status_ = db_->Exec("BEGIN IMMEDIATE");
  open_ = begin_status_.ok();
}

Transaction::~Transaction() {
  if (absl::Status s = Rollback(); !s.ok()) {
    std::fprintf(stderr, "accelsched: rolling back on \"%s\": %s\n",
                 db_->path().c_str(), std::string(s.message()).c_str());
  }
}

absl::Status Transaction::Commit() {
  absl::Status s = db_->Exec("COMMIT");
  if (s.ok() || !db_->in_transaction()) open_ = false;
  return s;
}

absl::Status Transaction::Rollback() {
  if (!open_) return absl::OkStatus();
  open_ = false;
  if (!db_->in_transaction()) return absl::OkStatus();  // SQLite did it
  return db_->Exec("ROLLBACK");
}

}  // namespace accelsched
