#include "tests/support/server_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace accelsched {
namespace {

// fork + exec accelschedd with stdout and stderr on a pipe; returns the pid and
// the read end.
pid_t Spawn(const std::string& binary, const std::vector<std::string>& flags,
            int* read_fd) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  std::vector<std::string> args = {binary};
  args.insert(args.end(), flags.begin(), flags.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    execv(argv[0], argv.data());
    // Only async-signal-safe calls here: say why, as a number, and exit.
    char why[] = "execv failed: errno     \n";
    for (int e = errno, i = 23; e > 0 && i >= 20; e /= 10, --i) {
      why[i] = static_cast<char>('0' + e % 10);
    }
    (void)!write(STDERR_FILENO, why, sizeof why - 1);
    _exit(127);
  }
  close(fds[1]);
  *read_fd = fds[0];
  return pid;
}

int ExitCode(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return -1;
}

}  // namespace

ServerProcess::ServerProcess(pid_t pid, int fd) : pid_(pid), fd_(fd) {
  reader_ = std::thread([this] { ReadOutput(); });
}

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(
    const std::string& db, const std::vector<std::string>& extra_flags,
    const std::vector<std::string>& environment, const std::string& binary) {
  // env(1) execs the server in its own place: the pid stays the server's.
  std::vector<std::string> flags = environment;
  if (!environment.empty()) flags.push_back(binary);
  flags.insert(flags.end(), {"--db=" + db, "--listen=127.0.0.1:0",
                             "--metrics_listen=127.0.0.1:0"});
  flags.insert(flags.end(), extra_flags.begin(), extra_flags.end());
  std::unique_ptr<ServerProcess> p;
  {
    absl::StatusOr<std::unique_ptr<ServerProcess>> started =
        StartProgram(environment.empty() ? binary : "/usr/bin/env", flags,
                     "accelschedd ready:");
    if (!started.ok()) return started.status();
    p = std::move(*started);
  }
  const std::string out = p->output();
  if (std::sscanf(out.c_str() + out.find("accelschedd ready:"),
                  "accelschedd ready: grpc_port=%d metrics_port=%d",
                  &p->grpc_port_, &p->metrics_port_) != 2) {
    return absl::InternalError(
        absl::StrCat("unexpected ready line in:\n", out));
  }
  return p;
}

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::StartProgram(
    const std::string& binary, const std::vector<std::string>& args,
    const std::string& ready_marker) {
  int fd = -1;
  pid_t pid = Spawn(binary, args, &fd);
  if (pid < 0)
    return absl::InternalError(absl::StrCat("cannot spawn ", binary));
  std::unique_ptr<ServerProcess> p(new ServerProcess(pid, fd));
  if (!p->WaitForOutput(ready_marker, absl::Seconds(30))) {
    // Whether it exited by itself (and how) or was still running at the
    // deadline tells a crash from a hang. Its output ends just before it can
    // be reaped: a moment's wait tells an exit from a hang that closed its
    // output.
    int wstatus = 0;
    std::string how = "was still running after 30 s";
    pid_t reaped = 0;
    for (int i = 0; i < 100 && reaped == 0; ++i) {
      reaped = waitpid(pid, &wstatus, WNOHANG);
      if (reaped == 0) absl::SleepFor(absl::Milliseconds(20));
    }
    if (reaped == pid) {
      p->pid_ = -1;
      p->exit_code_ = ExitCode(wstatus);
      how = WIFSIGNALED(wstatus)
                ? absl::StrCat("was killed by signal ", WTERMSIG(wstatus))
                : absl::StrCat("exited with status ", p->exit_code_);
      p->reader_.join();  // the rest of what it printed
    }
    p->Stop(SIGKILL);
    return absl::UnavailableError(
        absl::StrCat(binary, " did not become ready (", how, "); it printed:\n",
                     p->output()));
  }
  return p;
}

int ServerProcess::RunToExit(const std::vector<std::string>& flags,
                             std::string* output, absl::Duration timeout) {
  return RunProgramToExit(ACCELSCHEDD_PATH, flags, output, timeout);
}

int ServerProcess::RunProgramToExit(const std::string& binary,
                                    const std::vector<std::string>& args,
                                    std::string* output,
                                    absl::Duration timeout) {
  const std::vector<std::string>& flags = args;
  int fd = -1;
  pid_t pid = Spawn(binary, flags, &fd);
  if (pid < 0) return -1;
  ServerProcess p(pid, fd);
  const absl::Time deadline = absl::Now() + timeout;
  int wstatus = 0;
  while (waitpid(pid, &wstatus, WNOHANG) == 0) {
    if (absl::Now() > deadline) {
      *output = p.output();
      p.Stop(SIGKILL);
      return -1;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  p.exit_code_ = ExitCode(wstatus);
  p.pid_ = -1;
  p.reader_.join();
  *output = p.output();
  return p.exit_code_;
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) Stop(SIGKILL);
  if (reader_.joinable()) reader_.join();
  close(fd_);
}

void ServerProcess::ReadOutput() {
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd_, buf, sizeof buf);
    // A signal delivered to this thread is not the end of the server's output.
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    // Pass the server's log through, so that a failing test shows it.
    fwrite(buf, 1, static_cast<size_t>(n), stderr);
    absl::MutexLock lock(&mu_);
    output_.append(buf, static_cast<size_t>(n));
  }
  absl::MutexLock lock(&mu_);
  eof_ = true;
}

bool ServerProcess::WaitForOutput(const std::string& marker,
                                  absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return eof_ || output_.find(marker) != std::string::npos;
  };
  mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  return output_.find(marker) != std::string::npos;
}

int ServerProcess::Stop(int signal) {
  if (pid_ <= 0) return exit_code_;
  kill(pid_, signal);
  int wstatus = 0;
  waitpid(pid_, &wstatus, 0);
  pid_ = -1;
  exit_code_ = ExitCode(wstatus);
  if (reader_.joinable()) reader_.join();
  return exit_code_;
}

std::string ServerProcess::output() const {
  absl::MutexLock lock(&mu_);
  return output_;
}

}  // namespace accelsched
