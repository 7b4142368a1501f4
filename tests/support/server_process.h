// Runs the real accelschedd binary as a child process for end-to-end tests:
// loopback ports picked by the kernel, stderr captured, stopped with SIGTERM
// (or killed) on request.
#ifndef ACCELSCHED_TESTS_SUPPORT_SERVER_PROCESS_H_
#define ACCELSCHED_TESTS_SUPPORT_SERVER_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace accelsched {

class ServerProcess {
 public:
  // Starts accelschedd on `db` with loopback ports and `extra_flags`, and waits
  // for its ready line; `environment` (KEY=VALUE each) is added to its
  // environment through env(1); `binary` is another build of accelschedd (a
  // baseline to compare with). An error carries what the process printed.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      const std::string& db, const std::vector<std::string>& extra_flags = {},
      const std::vector<std::string>& environment = {},
      const std::string& binary = ACCELSCHEDD_PATH);

  // Starts any program and waits until its output contains `ready_marker`
  // (ports are not parsed). For Prometheus in the metrics tests.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> StartProgram(
      const std::string& binary, const std::vector<std::string>& args,
      const std::string& ready_marker);

  // Runs accelschedd with exactly `flags` until it exits; returns its exit
  // code, and its output in `output`.
  // The same for any program (e.g. accelschedd under setpriv).
  static int RunProgramToExit(const std::string& binary,
                              const std::vector<std::string>& args,
                              std::string* output,
                              absl::Duration timeout = absl::Seconds(30));
  static std::string ServerPath() { return ACCELSCHEDD_PATH; }

  static int RunToExit(const std::vector<std::string>& flags,
                       std::string* output,
                       absl::Duration timeout = absl::Seconds(30));

  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  std::string grpc_address() const {
    return "127.0.0.1:" + std::to_string(grpc_port_);
  }
  int grpc_port() const { return grpc_port_; }
  int metrics_port() const { return metrics_port_; }
  pid_t pid() const { return pid_; }

  // Sends `signal` and waits for the exit; returns the exit code (128+signal
  // when killed).
  int Stop(int signal);
  std::string output() const;
  // Waits until the output contains `marker`, the process closes its output,
  // or `timeout` passes; true when the marker is there.
  bool WaitForOutput(const std::string& marker, absl::Duration timeout);

 private:
  ServerProcess(pid_t pid, int fd);
  void ReadOutput();

  pid_t pid_;
  int fd_;
  int grpc_port_ = 0;
  int metrics_port_ = 0;
  int exit_code_ = -1;
  std::thread reader_;
  mutable absl::Mutex mu_;
  std::string output_ ABSL_GUARDED_BY(mu_);
  bool eof_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_SERVER_PROCESS_H_
