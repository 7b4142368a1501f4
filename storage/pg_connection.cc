#include "storage/pg_connection.h"

#include <libpq-fe.h>

#include <algorithm>
#include <utility>
#include <variant>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "core/base/status_macros.h"

namespace accelsched {
namespace {

// libpq's messages end with a newline; ours do not.
std::string Trimmed(const char* message) {
  if (message == nullptr) return "";
  return std::string(absl::StripTrailingAsciiWhitespace(message));
}

// https://www.postgresql.org/docs/15/errcodes-appendix.html
absl::StatusCode CodeOf(absl::string_view sqlstate) {
  if (sqlstate == "23505") return absl::StatusCode::kAlreadyExists;
  if (absl::StartsWith(sqlstate, "23")) {
    return absl::StatusCode::kFailedPrecondition;
  }
  if (sqlstate == "40001" || sqlstate == "40P01") {
    return absl::StatusCode::kAborted;
  }
  // Connection exceptions, operator intervention (shutdown, cannot connect
  // now), lock_not_available (lock_timeout) and query_canceled
  // (statement_timeout): the same call may succeed later.
  if (absl::StartsWith(sqlstate, "08") || absl::StartsWith(sqlstate, "57") ||
      sqlstate == "55P03") {
    return absl::StatusCode::kUnavailable;
  }
  if (absl::StartsWith(sqlstate, "53")) {
    return absl::StatusCode::kResourceExhausted;
  }
  return absl::StatusCode::kInternal;
}

// The network timeout split the way both ends take it: silent for
// `keepalive_idle_s`, then `keepalive_count` probes `keepalive_interval_s`
// apart, all unanswered: about the timeout. tcp_user_timeout bounds data sent
// and never acknowledged the same way.
struct NetworkTimeouts {
  int64_t keepalive_idle_s;
  int64_t keepalive_interval_s;
  int64_t keepalive_count;
  int64_t user_timeout_ms;
};
NetworkTimeouts NetworkTimeoutsOf(absl::Duration timeout) {
  const int64_t s = std::max<int64_t>(absl::ToInt64Seconds(timeout), 1);
  return NetworkTimeouts{std::max<int64_t>(s / 2, 1),
                         std::max<int64_t>(s / 6, 1), 3, s * 1000};
}

// One row of a result.
class PgRowReader final : public RowReader {
 public:
  PgRowReader(const PgResult& result, int row) : result_(result), row_(row) {}
  bool IsNull(int col) override { return result_.IsNull(row_, col); }
  std::string Text(int col) override { return result_.Text(row_, col); }
  absl::StatusOr<int64_t> Int(int col) override {
    return result_.Int(row_, col);
  }
  bool Bool(int col) override { return result_.Bool(row_, col); }

 private:
  const PgResult& result_;
  const int row_;
};

}  // namespace

PgParam::PgParam(int64_t v) : value_(absl::StrCat(v)) {}

PgParam PgParam::Of(SqlValue v) {
  if (std::holds_alternative<std::monostate>(v)) return Null();
  if (const bool* flag = std::get_if<bool>(&v)) return PgParam(*flag);
  if (const int64_t* n = std::get_if<int64_t>(&v)) return PgParam(*n);
  return PgParam(std::move(std::get<std::string>(v)));
}

PgResult::PgResult(pg_result* result) : result_(result) {}
PgResult::~PgResult() { PQclear(result_); }
PgResult::PgResult(PgResult&& other) noexcept
    : result_(std::exchange(other.result_, nullptr)) {}
PgResult& PgResult::operator=(PgResult&& other) noexcept {
  if (this != &other) {
    PQclear(result_);
    result_ = std::exchange(other.result_, nullptr);
  }
  return *this;
}

int PgResult::rows() const { return PQntuples(result_); }

int64_t PgResult::affected() const {
  int64_t n = 0;
  // Empty for statements that change no rows by definition.
  return absl::SimpleAtoi(PQcmdTuples(result_), &n) ? n : 0;
}

bool PgResult::IsNull(int row, int col) const {
  return PQgetisnull(result_, row, col) != 0;
}

std::string PgResult::Text(int row, int col) const {
  return std::string(PQgetvalue(result_, row, col),
                     PQgetlength(result_, row, col));
}

absl::StatusOr<int64_t> PgResult::Int(int row, int col) const {
  int64_t v = 0;
  if (!absl::SimpleAtoi(PQgetvalue(result_, row, col), &v)) {
    return absl::InternalError(absl::StrCat("column ", PQfname(result_, col),
                                            " holds \"", Text(row, col),
                                            "\", not an integer"));
  }
  return v;
}

bool PgResult::Bool(int row, int col) const {
  return PQgetvalue(result_, row, col)[0] == 't';
}

std::string PgConnection::Describe(const std::string& uri) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(uri.c_str(), &error);
  if (options == nullptr) {
    PQfreemem(error);
    return "postgresql://(unparsable)";
  }
  std::string user, host, port, dbname;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    const absl::string_view k = o->keyword;
    if (k == "user") user = o->val;
    if (k == "host" || (k == "hostaddr" && host.empty())) host = o->val;
    if (k == "port") port = o->val;
    if (k == "dbname") dbname = o->val;
  }
  PQconninfoFree(options);
  return absl::StrCat("postgresql://", user, user.empty() ? "" : "@", host,
                      port.empty() ? "" : ":", port, "/", dbname);
}

absl::StatusOr<pg_conn*> PgConnection::Connect(const std::string& uri,
                                               const Options& options) {
  const std::string timeout =
      absl::StrCat(absl::ToInt64Seconds(options.connect_timeout));
  const NetworkTimeouts net = NetworkTimeoutsOf(options.network_timeout);
  const std::string idle = absl::StrCat(net.keepalive_idle_s);
  const std::string interval = absl::StrCat(net.keepalive_interval_s);
  const std::string count = absl::StrCat(net.keepalive_count);
  const std::string user_timeout = absl::StrCat(net.user_timeout_ms);
  // Later keywords win, and expand_dbname expands the URI in place: so the URI
  // may override the timeouts and name given before it.
  // https://www.postgresql.org/docs/15/libpq-connect.html#LIBPQ-PARAMKEYWORDS
  const char* keywords[] = {"connect_timeout",
                            "fallback_application_name",
                            "keepalives",
                            "keepalives_idle",
                            "keepalives_interval",
                            "keepalives_count",
                            "tcp_user_timeout",
                            "dbname",
                            nullptr};
  const char* values[] = {timeout.c_str(),
                          options.application_name.c_str(),
                          "1",
                          idle.c_str(),
                          interval.c_str(),
                          count.c_str(),
                          user_timeout.c_str(),
                          uri.c_str(),
                          nullptr};
  pg_conn* conn = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (conn == nullptr) {
    return absl::ResourceExhaustedError("libpq: out of memory");
  }
  if (PQstatus(conn) != CONNECTION_OK) {
    const std::string why = Trimmed(PQerrorMessage(conn));
    PQfinish(conn);
    return absl::UnavailableError(absl::StrCat(
        "cannot connect to PostgreSQL at ", Describe(uri), ": ", why));
  }
  // NOTICEs ("relation already exists, skipping") would go to stderr: they
  // are expected, and errors come back as results.
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);
  return conn;
}

absl::StatusOr<std::unique_ptr<PgConnection>> PgConnection::Open(
    const std::string& uri, const Options& options) {
  char* error = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(uri.c_str(), &error);
  if (parsed == nullptr) {
    // libpq's reason quotes the part of the URI it could not parse, which may
    // be the password: only its words before the first quote are kept.
    std::string why = error != nullptr ? Trimmed(error) : "out of memory";
    PQfreemem(error);
    absl::string_view words = absl::StripTrailingAsciiWhitespace(
        absl::string_view(why).substr(0, std::min(why.find('"'), why.size())));
    absl::ConsumeSuffix(&words, ":");
    why = std::string(words);
    return absl::InvalidArgumentError(absl::StrCat(
        "not a PostgreSQL connection URI (", why,
        "); expected postgresql://user:password@host:port/dbname"));
  }
  PQconninfoFree(parsed);
  ASSIGN_OR_RETURN(pg_conn * conn, Connect(uri, options));
  std::unique_ptr<PgConnection> c(new PgConnection(conn, uri, options));
  RETURN_IF_ERROR(c->ApplySettings());
  return c;
}

PgConnection::PgConnection(pg_conn* conn, std::string uri, Options options)
    : conn_(conn),
      uri_(std::move(uri)),
      description_(Describe(uri_)),
      options_(std::move(options)) {}

PgConnection::~PgConnection() { PQfinish(conn_); }

// libpq takes a null connection everywhere: PQstatus reads CONNECTION_BAD.
bool PgConnection::ok() const { return PQstatus(conn_) == CONNECTION_OK; }

void PgConnection::Abandon() {
  // Closed at once: the server rolls back its transaction and frees its
  // locks (the fence's share lock among them).
  PQfinish(std::exchange(conn_, nullptr));
  prepared_.clear();
}

absl::Status PgConnection::ApplySettings() {
  const NetworkTimeouts net = NetworkTimeoutsOf(options_.network_timeout);
  // The network's first, then the owner's:
  // https://www.postgresql.org/docs/15/runtime-config-connection.html
  // (ignored on a Unix socket).
  std::vector<std::pair<std::string, std::string>> settings = {
      {"tcp_keepalives_idle", absl::StrCat(net.keepalive_idle_s)},
      {"tcp_keepalives_interval", absl::StrCat(net.keepalive_interval_s)},
      {"tcp_keepalives_count", absl::StrCat(net.keepalive_count)},
      {"tcp_user_timeout", absl::StrCat(net.user_timeout_ms)},
  };
  settings.insert(settings.end(), options_.settings.begin(),
                  options_.settings.end());
  for (const auto& [name, value] : settings) {
    // set_config takes parameters, so values need no quoting.
    ASSIGN_OR_RETURN(PgResult r, Run("SELECT set_config($1, $2, false)",
                                     {PgParam(name), PgParam(value)}));
  }
  return absl::OkStatus();
}

absl::Status PgConnection::Reconnect() {
  if (ok()) return absl::OkStatus();
  prepared_.clear();
  ASSIGN_OR_RETURN(pg_conn * fresh, Connect(uri_, options_));
  PQfinish(std::exchange(conn_, fresh));
  if (absl::Status s = ApplySettings(); !s.ok()) {
    // Never serve a session without its settings: the next call reconnects.
    Abandon();
    return s;
  }
  return absl::OkStatus();
}

void PgConnection::RollbackIfOpen() {
  if (!ok() || PQtransactionStatus(conn_) == PQTRANS_IDLE) return;
  // A failed rollback leaves the connection broken, which the next
  // Reconnect() replaces; the server rolls back a lost session's transaction.
  PQclear(PQexec(conn_, "ROLLBACK"));
}

absl::Status PgConnection::ResultError(pg_result* result,
                                       absl::string_view sql) const {
  const char* sqlstate = result != nullptr
                             ? PQresultErrorField(result, PG_DIAG_SQLSTATE)
                             : nullptr;
  absl::StatusCode code = sqlstate != nullptr ? CodeOf(sqlstate)
                          : ok()              ? absl::StatusCode::kInternal
                                              : absl::StatusCode::kUnavailable;
  std::string message = Trimmed(result != nullptr ? PQresultErrorMessage(result)
                                                  : PQerrorMessage(conn_));
  if (message.empty()) message = Trimmed(PQerrorMessage(conn_));
  if (!ok()) {
    code = absl::StatusCode::kUnavailable;
    message = absl::StrCat("connection to ", description_, " lost: ", message);
  }
  return absl::Status(
      code, absl::StrCat(absl::StrReplaceAll(message, {{"\n", "; "}}), " [",
                         sql.substr(0, 120), "]"));
}

absl::Status PgConnection::Exec(absl::string_view sql) {
  const std::string text(sql);
  pg_result* result = PQexec(conn_, text.c_str());
  const ExecStatusType status =
      result != nullptr ? PQresultStatus(result) : PGRES_FATAL_ERROR;
  absl::Status s = status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK
                       ? absl::OkStatus()
                       : ResultError(result, sql);
  PQclear(result);
  return s;
}

absl::StatusOr<PgResult> PgConnection::Run(
    absl::string_view sql, std::initializer_list<PgParam> params) {
  return Run(sql, std::vector<PgParam>(params));
}

absl::StatusOr<PgResult> PgConnection::Run(absl::string_view sql,
                                           const std::vector<PgParam>& params) {
  std::string key(sql);
  auto it = prepared_.find(key);
  if (it == prepared_.end()) {
    std::string name = absl::StrCat("s", prepared_.size());
    pg_result* prepared =
        PQprepare(conn_, name.c_str(), key.c_str(), 0, nullptr);
    if (prepared == nullptr || PQresultStatus(prepared) != PGRES_COMMAND_OK) {
      absl::Status s = ResultError(prepared, sql);
      PQclear(prepared);
      return s;
    }
    PQclear(prepared);
    it = prepared_.emplace(std::move(key), std::move(name)).first;
  }
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const PgParam& p : params) {
    values.push_back(p.value() ? p.value()->c_str() : nullptr);
  }
  pg_result* result =
      PQexecPrepared(conn_, it->second.c_str(), static_cast<int>(values.size()),
                     values.data(), nullptr, nullptr, 0);
  const ExecStatusType status =
      result != nullptr ? PQresultStatus(result) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    absl::Status s = ResultError(result, sql);
    PQclear(result);
    return s;
  }
  return PgResult(result);
}

absl::Status PgConnection::Query(
    absl::string_view sql, absl::FunctionRef<absl::Status(RowReader&)> row) {
  ASSIGN_OR_RETURN(PgResult result, Run(sql, {}));
  for (int i = 0; i < result.rows(); ++i) {
    PgRowReader reader(result, i);
    RETURN_IF_ERROR(row(reader));
  }
  return absl::OkStatus();
}

absl::Status PgBatch::Write(absl::string_view sql, std::vector<SqlValue> params,
                            absl::Status unchanged_error) {
  PgConnection::Statement statement;
  statement.sql = std::string(sql);
  statement.params.reserve(params.size());
  for (SqlValue& v : params)
    statement.params.push_back(PgParam::Of(std::move(v)));
  if (!unchanged_error.ok()) {
    statement.check = [error = std::move(unchanged_error)](const PgResult& r) {
      return r.affected() > 0 ? absl::OkStatus() : error;
    };
  }
  statements_.push_back(std::move(statement));
  return absl::OkStatus();
}

absl::Status PgConnection::RunBatch(const std::vector<Statement>& statements) {
  if (PQenterPipelineMode(conn_) != 1) return ResultError(nullptr, "pipeline");
  // What was sent, in order: a Parse for each statement first seen here (its
  // name), and each statement (its index).
  struct Sent {
    const Statement* statement = nullptr;  // null: a Parse
    std::string prepared;                  // the name a Parse gave
  };
  std::vector<Sent> sent;
  sent.reserve(statements.size() + 8);
  std::vector<const char*> values;
  absl::Status s;
  for (const Statement& st : statements) {
    auto it = prepared_.find(st.sql);
    if (it == prepared_.end()) {
      std::string name = absl::StrCat("s", prepared_.size());
      if (PQsendPrepare(conn_, name.c_str(), st.sql.c_str(), 0, nullptr) != 1) {
        s = ResultError(nullptr, st.sql);
        break;
      }
      it = prepared_.emplace(st.sql, name).first;
      sent.push_back(Sent{nullptr, std::move(name)});
    }
    values.clear();
    for (const PgParam& p : st.params) {
      values.push_back(p.value() ? p.value()->c_str() : nullptr);
    }
    if (PQsendQueryPrepared(conn_, it->second.c_str(),
                            static_cast<int>(values.size()), values.data(),
                            nullptr, nullptr, 0) != 1) {
      s = ResultError(nullptr, st.sql);
      break;
    }
    sent.push_back(Sent{&st, ""});
  }
  // Blocking libpq reads the server's results while its writes wait, so a
  // long batch cannot deadlock on full socket buffers.
  if (PQpipelineSync(conn_) != 1 && s.ok()) s = ResultError(nullptr, "sync");
  for (const Sent& item : sent) {
    pg_result* result = PQgetResult(conn_);
    const ExecStatusType status =
        result != nullptr ? PQresultStatus(result) : PGRES_FATAL_ERROR;
    const bool ran = status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
    if (item.statement == nullptr) {
      // A Parse that failed or never ran (after an error) prepared nothing.
      if (!ran) {
        prepared_.erase(std::find_if(
            prepared_.begin(), prepared_.end(),
            [&](const auto& e) { return e.second == item.prepared; }));
      }
      if (!ran && status != PGRES_PIPELINE_ABORTED && s.ok()) {
        s = ResultError(result, "prepare");
      }
      PQclear(result);
    } else if (!ran) {
      if (status != PGRES_PIPELINE_ABORTED && s.ok()) {
        s = ResultError(result, item.statement->sql);
      }
      PQclear(result);
    } else {
      PgResult r(result);
      if (s.ok() && item.statement->check) s = item.statement->check(r);
    }
    if (result != nullptr) {
      // Each command's results end with a null.
      while (pg_result* extra = PQgetResult(conn_)) PQclear(extra);
    }
  }
  // The sync's own result, then pipeline mode can end.
  if (ok()) {
    for (pg_result* r; (r = PQgetResult(conn_)) != nullptr;) {
      const bool sync = PQresultStatus(r) == PGRES_PIPELINE_SYNC;
      PQclear(r);
      if (sync) break;
    }
    if (PQexitPipelineMode(conn_) != 1) {
      if (s.ok()) s = ResultError(nullptr, "pipeline end");
      // Results were left unread: a connection that cannot leave pipeline
      // mode would refuse every later call. The next Reconnect() replaces
      // it, with its session settings (PQreset would drop them).
      Abandon();
    }
  }
  return s;
}

}  // namespace accelsched
