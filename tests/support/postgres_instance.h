// A private PostgreSQL server for tests and benchmarks: initdb'd in a
// directory of its own, listening on 127.0.0.1 only, on a port picked free,
// with password authentication over TCP. PostgreSQL refuses to run as root:
// when the test runs as root, the server (and initdb, pg_ctl, psql) run as
// the `postgres` account that Debian's package creates, else `nobody`. fsync
// and synchronous_commit are on (PostgreSQL's defaults).
#ifndef ACCELSCHED_TESTS_SUPPORT_POSTGRES_INSTANCE_H_
#define ACCELSCHED_TESTS_SUPPORT_POSTGRES_INSTANCE_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace accelsched {

class PostgresInstance {
 public:
  // The role the tests connect as (LOGIN, CREATEDB) and its password.
  static constexpr char kRole[] = "accelsched";
  static constexpr char kPassword[] = "test-password-7f3a";

  // initdb's `dir`/data (creating `dir`), starts the server and waits until
  // it accepts connections, then creates role kRole and database
  // "accelsched" owned by it. The error carries the server's log.
  static absl::StatusOr<std::unique_ptr<PostgresInstance>> Start(
      const std::string& dir);
  // Stops the server (immediate shutdown) if it runs. `dir` stays.
  ~PostgresInstance();
  PostgresInstance(const PostgresInstance&) = delete;
  PostgresInstance& operator=(const PostgresInstance&) = delete;

  // postgresql://accelsched:<password>@127.0.0.1:<port>/<database>
  std::string Uri(const std::string& database = "accelsched") const;
  // The same with a wrong password.
  std::string UriWithWrongPassword() const;
  int port() const { return port_; }

  // pg_ctl stop -m fast: sessions are ended, what committed stays.
  absl::Status Stop();
  // pg_ctl stop -m immediate: the server quits at once without a checkpoint,
  // as in a crash; Start() recovers from the WAL what had committed.
  absl::Status Crash();
  // Starts it again on the same port and data; waits until it accepts
  // connections.
  absl::Status Start();
  // Stop, then Start.
  absl::Status Restart();

  // Creates database `name` ([a-z0-9_]+) owned by kRole; its Uri.
  absl::StatusOr<std::string> CreateDatabase(const std::string& name);
  // Runs `sql` as the superuser in `database` through psql; its output
  // (unaligned, tuples only). An error carries psql's output.
  absl::StatusOr<std::string> Psql(
      const std::string& sql, const std::string& database = "accelsched") const;
  // The server's log so far.
  std::string Log() const;

 private:
  PostgresInstance(std::string dir, int port);
  // Runs `args` (args[0] a path) as the server's account; its exit code, and
  // its output in `output`.
  int RunAsOwner(const std::vector<std::string>& args,
                 std::string* output) const;
  absl::Status StartServer();

  std::string dir_;
  std::string data_;
  std::string bin_;         // PostgreSQL's bin directory
  std::string socket_dir_;  // the server's Unix socket, for Psql
  int port_;
  bool running_ = false;
  uid_t uid_ = 0;  // the account the server runs as (0: this process's)
  gid_t gid_ = 0;
};

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_POSTGRES_INSTANCE_H_
