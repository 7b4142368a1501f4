#include "storage/sqlite_db.h"

#include <sqlite3.h>

#include "absl/strings/str_cat.h"

namespace accelsched {
namespace {

absl::StatusCode CodeFor(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::StatusCode::kUnavailable;
    case SQLITE_FULL:
      return absl::StatusCode::kResourceExhausted;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::StatusCode::kDataLoss;
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
      return absl::StatusCode::kFailedPrecondition;
    case SQLITE_CONSTRAINT:
      return absl::StatusCode::kAlreadyExists;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::Bind(int i, int64_t v) {
  sqlite3_bind_int64(stmt_, i, v);
  return *this;
}

Statement& Statement::Bind(int i, absl::string_view v) {
  sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()),
                    SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::BindNull(int i) {
  sqlite3_bind_null(stmt_, i);
  return *this;
}

Statement& Statement::BindOrNull(int i, absl::string_view v) {
  return v.empty() ? BindNull(i) : Bind(i, v);
}

absl::StatusOr<bool> Statement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  absl::Status s(CodeFor(rc), absl::StrCat("sqlite: ", sqlite3_errmsg(db_)));
  sqlite3_reset(stmt_);
  return s;
}

absl::Status Statement::Run() {
  absl::StatusOr<bool> row;
  do {
    row = Step();
    if (!row.ok()) return row.status();
  } while (*row);
  return absl::OkStatus();
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int64_t Statement::ColumnInt(int i) const {
  return sqlite3_column_int64(stmt_, i);
}

std::string Statement::ColumnText(int i) const {
  const unsigned char* text = sqlite3_column_text(stmt_, i);
  if (text == nullptr) return "";
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
  if (rc != SQLITE_OK) {
    absl::Status s(
        CodeFor(rc),
        absl::StrCat("cannot open database \"", path,
                     "\": ", raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
    sqlite3_close(raw);
    return s;
  }
  sqlite3_extended_result_codes(raw, 1);
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
  if (!*row || (*wal)->ColumnText(0) != "wal") {
    return absl::FailedPreconditionError(
        absl::StrCat("database \"", path, "\" cannot be put in WAL mode"));
  }
  (*wal)->Reset();
  return db;
}

SqliteDb::~SqliteDb() {
  statements_.clear();  // finalize before closing
  sqlite3_close(db_);
}

absl::Status SqliteDb::Exec(const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return absl::OkStatus();
  absl::Status s(CodeFor(rc),
                 absl::StrCat("sqlite: ", err ? err : sqlite3_errstr(rc)));
  sqlite3_free(err);
  return s;
}

absl::StatusOr<Statement*> SqliteDb::Prepare(absl::string_view sql) {
  auto it = statements_.find(sql);
  if (it != statements_.end()) {
    it->second->Reset();
    return it->second.get();
  }
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) return Error(rc, absl::StrCat("prepare \"", sql, "\""));
  auto owned = std::make_unique<Statement>(db_, stmt);
  Statement* out = owned.get();
  statements_.emplace(std::string(sql), std::move(owned));
  return out;
}

int64_t SqliteDb::changes() const { return sqlite3_changes64(db_); }

absl::Status SqliteDb::Error(int rc, absl::string_view what) const {
  return absl::Status(CodeFor(rc),
                      absl::StrCat(what, ": ", sqlite3_errmsg(db_)));
}

Transaction::Transaction(SqliteDb* db) : db_(db) {
  begin_status_ = db_->Exec("BEGIN IMMEDIATE");
  open_ = begin_status_.ok();
}

Transaction::~Transaction() {
  if (open_) db_->Exec("ROLLBACK").IgnoreError();
}

absl::Status Transaction::Commit() {
  absl::Status s = db_->Exec("COMMIT");
  if (s.ok()) open_ = false;
  return s;
}

}  // namespace accelsched
