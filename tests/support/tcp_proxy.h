// A TCP proxy on the loopback for tests that cut the network between a
// process and its database: traffic stays on this machine, and the test
// decides when it flows.
#ifndef ACCELSCHED_TESTS_SUPPORT_TCP_PROXY_H_
#define ACCELSCHED_TESTS_SUPPORT_TCP_PROXY_H_

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace accelsched {

class TcpProxy {
 public:
  // Listens on 127.0.0.1 (a port the kernel picks) and forwards every
  // connection to 127.0.0.1:`upstream_port`, each on a thread of its own.
  // INTERNAL when the socket cannot be set up.
  static absl::StatusOr<std::unique_ptr<TcpProxy>> Start(int upstream_port);
  // Closes every connection and joins the threads.
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }

  // A partition: nothing more is forwarded either way (a chunk being
  // written goes on) and no connection is accepted (the kernel still
  // completes handshakes into the backlog), while every connection stays
  // open, so neither end hears of it (the kernel still acknowledges what it
  // is sent: keepalives pass).
  void Cut() { cut_.store(true); }
  // Forwards again, what was held back first (as TCP retransmits after a
  // partition heals); a connection one end closed meanwhile closes now.
  void Heal() { cut_.store(false); }

 private:
  TcpProxy(int listen_fd, int port, int upstream_port);
  void Accept();
  // Copies between `a` and `b` until either closes or the proxy stops.
  void Forward(int a, int b);

  const int listen_fd_;
  const int port_;
  const int upstream_port_;
  std::atomic<bool> cut_{false};
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  absl::Mutex mu_;
  std::vector<std::thread> connections_ ABSL_GUARDED_BY(mu_);
};

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_TCP_PROXY_H_
