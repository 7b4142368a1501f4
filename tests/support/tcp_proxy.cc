#include "tests/support/tcp_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace accelsched {
namespace {

// How often a waiting thread looks at the cut and stop flags.
constexpr int kPollMs = 10;

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

// Writes all of `data`; false when the peer is gone.
bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TcpProxy>> TcpProxy::Start(int upstream_port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  }
  sockaddr_in addr = Loopback(0);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 64) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string error = strerror(errno);
    close(fd);
    return absl::InternalError(absl::StrCat("proxy socket: ", error));
  }
  return std::unique_ptr<TcpProxy>(
      new TcpProxy(fd, ntohs(addr.sin_port), upstream_port));
}

TcpProxy::TcpProxy(int listen_fd, int port, int upstream_port)
    : listen_fd_(listen_fd), port_(port), upstream_port_(upstream_port) {
  acceptor_ = std::thread([this] { Accept(); });
}

TcpProxy::~TcpProxy() {
  stop_.store(true);
  acceptor_.join();
  close(listen_fd_);
  std::vector<std::thread> connections;
  {
    absl::MutexLock lock(&mu_);
    connections.swap(connections_);
  }
  for (std::thread& t : connections) t.join();
}

void TcpProxy::Accept() {
  while (!stop_.load()) {
    if (cut_.load()) {
      poll(nullptr, 0, kPollMs);
      continue;
    }
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, kPollMs) <= 0) continue;
    const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    const int upstream = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_in addr = Loopback(upstream_port_);
    if (upstream < 0 ||
        connect(upstream, reinterpret_cast<const sockaddr*>(&addr),
                sizeof(addr)) != 0) {
      // Refused upstream (the database down): refused here too.
      if (upstream >= 0) close(upstream);
      close(client);
      continue;
    }
    absl::MutexLock lock(&mu_);
    connections_.emplace_back(
        [this, client, upstream] { Forward(client, upstream); });
  }
}

void TcpProxy::Forward(int a, int b) {
  char buffer[65536];
  bool open = true;
  while (open && !stop_.load()) {
    if (cut_.load()) {
      poll(nullptr, 0, kPollMs);
      continue;
    }
    pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    if (poll(p, 2, kPollMs) <= 0) continue;
    for (int i = 0; i < 2 && open; ++i) {
      if (p[i].revents == 0) continue;
      const ssize_t n = recv(p[i].fd, buffer, sizeof(buffer), 0);
      if (n < 0 && errno == EINTR) continue;
      open = n > 0 && WriteAll(p[1 - i].fd, buffer, static_cast<size_t>(n));
    }
  }
  close(a);
  close(b);
}

}  // namespace accelsched
