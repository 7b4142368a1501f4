#include "tests/support/postgres_instance.h"

#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace accelsched {
namespace {

// The newest PostgreSQL server installed (Debian: /usr/lib/postgresql/N/bin).
std::string ServerBinDir() {
  int best = 0;
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
    int version = 0;
    if (absl::SimpleAtoi(entry.path().filename().string(), &version) &&
        version > best &&
        std::filesystem::exists(entry.path() / "bin" / "initdb")) {
      best = version;
    }
  }
  return best == 0 ? "" : absl::StrCat("/usr/lib/postgresql/", best, "/bin");
}

// A loopback port free right now.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

}  // namespace

PostgresInstance::PostgresInstance(std::string dir, int port)
    : dir_(std::move(dir)), data_(dir_ + "/data"), port_(port) {}

absl::StatusOr<std::unique_ptr<PostgresInstance>> PostgresInstance::Start(
    const std::string& dir) {
  std::unique_ptr<PostgresInstance> pg(new PostgresInstance(dir, 0));
  pg->bin_ = ServerBinDir();
  if (pg->bin_.empty()) {
    return absl::FailedPreconditionError(
        "no PostgreSQL server under /usr/lib/postgresql: install "
        "postgresql-15 (scripts/setup.sh)");
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", dir, ": ", ec.message()));
  }
  if (geteuid() == 0) {
    const passwd* account = getpwnam("postgres");
    if (account == nullptr) account = getpwnam("nobody");
    if (account == nullptr) {
      return absl::FailedPreconditionError(
          "running as root, and neither a postgres nor a nobody account to "
          "run PostgreSQL as");
    }
    pg->uid_ = account->pw_uid;
    pg->gid_ = account->pw_gid;
    if (chown(dir.c_str(), pg->uid_, pg->gid_) != 0) {
      return absl::InternalError(absl::StrCat("cannot chown ", dir));
    }
  }
  // Unix socket paths are short (108 bytes): the socket gets a directory of
  // its own under /tmp rather than one under a test's long-named directory.
  char socket_dir[] = "/tmp/accelsched-pg-XXXXXX";
  if (mkdtemp(socket_dir) == nullptr) {
    return absl::InternalError("mkdtemp for the PostgreSQL socket failed");
  }
  pg->socket_dir_ = socket_dir;
  if (pg->uid_ != 0 && chown(socket_dir, pg->uid_, pg->gid_) != 0) {
    return absl::InternalError(absl::StrCat("cannot chown ", socket_dir));
  }
  // The superuser's password (initdb wants one when TCP needs passwords);
  // the tests use the Unix socket's trust for it.
  const std::string pwfile = dir + "/superuser-password";
  { std::ofstream(pwfile) << "superuser-" << kPassword << "\n"; }
  if (pg->uid_ != 0 && chown(pwfile.c_str(), pg->uid_, pg->gid_) != 0) {
    return absl::InternalError(absl::StrCat("cannot chown ", pwfile));
  }
  std::string out;
  if (pg->RunAsOwner(
          {pg->bin_ + "/initdb", "-D", pg->data_, "-U", "postgres",
           "--auth-local=trust", "--auth-host=scram-sha-256",
           "--pwfile=" + pwfile, "--no-sync", "-E", "UTF8", "--locale=C"},
          &out) != 0) {
    return absl::InternalError(absl::StrCat("initdb failed:\n", out));
  }
  absl::Status started;
  for (int attempt = 0; attempt < 5; ++attempt) {
    pg->port_ = FreePort();
    started = pg->StartServer();
    if (started.ok()) break;
  }
  if (!started.ok()) return started;
  absl::StatusOr<std::string> role =
      pg->Psql(absl::StrCat("CREATE ROLE ", kRole, " LOGIN CREATEDB PASSWORD '",
                            kPassword, "'"),
               "postgres");
  if (!role.ok()) return role.status();
  absl::StatusOr<std::string> db = pg->CreateDatabase("accelsched");
  if (!db.ok()) return db.status();
  return pg;
}

PostgresInstance::~PostgresInstance() {
  // Nothing left to report to: a failure leaves the server to the test
  // directory's cleanup.
  if (running_) Crash().IgnoreError();
  if (!socket_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(socket_dir_, ec);
  }
}

int PostgresInstance::RunAsOwner(const std::vector<std::string>& args,
                                 std::string* output) const {
  std::vector<char*> argv;
  for (const std::string& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid < 0) {
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return -1;
  }
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    if (uid_ != 0) {
      if (setgroups(0, nullptr) != 0 || setgid(gid_) != 0 ||
          setuid(uid_) != 0) {
        _exit(126);
      }
    }
    // The caller's directory may not be the account's to enter.
    if (chdir(dir_.c_str()) != 0) _exit(126);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  output->clear();
  char buf[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof(buf))) > 0;) {
    output->append(buf, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

absl::Status PostgresInstance::StartServer() {
  std::string out;
  // Only Psql uses the socket.
  const int rc = RunAsOwner({bin_ + "/pg_ctl", "-D", data_, "-l",
                             dir_ + "/server.log", "-w", "-t", "60", "-o",
                             absl::StrCat("-p ", port_, " -k ", socket_dir_,
                                          " -c listen_addresses=127.0.0.1"),
                             "start"},
                            &out);
  if (rc != 0) {
    return absl::UnavailableError(absl::StrCat(
        "PostgreSQL did not start on port ", port_, ":\n", out, "\n", Log()));
  }
  running_ = true;
  return absl::OkStatus();
}

absl::Status PostgresInstance::Stop() {
  std::string out;
  if (RunAsOwner({bin_ + "/pg_ctl", "-D", data_, "-m", "fast", "-w", "stop"},
                 &out) != 0) {
    return absl::InternalError(absl::StrCat("pg_ctl stop failed:\n", out));
  }
  running_ = false;
  return absl::OkStatus();
}

absl::Status PostgresInstance::Crash() {
  std::string out;
  if (RunAsOwner(
          {bin_ + "/pg_ctl", "-D", data_, "-m", "immediate", "-w", "stop"},
          &out) != 0) {
    return absl::InternalError(
        absl::StrCat("pg_ctl stop -m immediate failed:\n", out));
  }
  running_ = false;
  return absl::OkStatus();
}

absl::Status PostgresInstance::Start() { return StartServer(); }

absl::Status PostgresInstance::Restart() {
  if (absl::Status s = Stop(); !s.ok()) return s;
  return Start();
}

std::string PostgresInstance::Uri(const std::string& database) const {
  return absl::StrCat("postgresql://", kRole, ":", kPassword,
                      "@127.0.0.1:", port_, "/", database);
}

std::string PostgresInstance::UriWithWrongPassword() const {
  return absl::StrCat("postgresql://", kRole, ":not-", kPassword,
                      "@127.0.0.1:", port_, "/accelsched");
}

absl::StatusOr<std::string> PostgresInstance::CreateDatabase(
    const std::string& name) {
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
      return absl::InvalidArgumentError(
          absl::StrCat("database name \"", name, "\" is not [a-z0-9_]+"));
    }
  }
  absl::StatusOr<std::string> out = Psql(
      absl::StrCat("CREATE DATABASE ", name, " OWNER ", kRole), "postgres");
  if (!out.ok()) return out.status();
  return Uri(name);
}

absl::StatusOr<std::string> PostgresInstance::Psql(
    const std::string& sql, const std::string& database) const {
  std::string out;
  const int rc =
      RunAsOwner({bin_ + "/psql", "-X", "-A", "-t", "-q", "-h", socket_dir_,
                  "-p", absl::StrCat(port_), "-U", "postgres", "-d", database,
                  "-v", "ON_ERROR_STOP=1", "-c", sql},
                 &out);
  if (rc != 0) {
    return absl::InternalError(
        absl::StrCat("psql -c \"", sql, "\" failed (", rc, "):\n", out));
  }
  return std::string(absl::StripTrailingAsciiWhitespace(out));
}

std::string PostgresInstance::Log() const {
  std::ifstream in(dir_ + "/server.log");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace accelsched
