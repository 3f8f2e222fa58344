// libFuzzer target: the TCP store's server, fed raw bytes over a real connection (what a stranger
// or a broken client can send). Each input is one connection: its bytes, then a moment to read
// replies, then close. Every 64 inputs a proper client must still be served: no input may crash,
// hang or wedge the server.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <cstring>

#include "cohort/collectives/store.hpp"

namespace {

struct Fixture {
  std::shared_ptr<cohort::comm::Store> server, client;
  int port = 0;
  Fixture() {
    ::setenv("COHORT_JOB_TOKEN", "fuzz", 1);
    ::setenv("COHORT_STORE_HANDSHAKE_MS", "200", 1);
    server = cohort::comm::make_tcp_store("127.0.0.1", 0, true, std::chrono::seconds(5));
    const std::string a = server->address();
    port = std::stoi(a.substr(a.rfind(':') + 1));
    client = cohort::comm::make_tcp_store("127.0.0.1", port, false, std::chrono::seconds(5));
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

}  // namespace

// A connection to the server. Tens of thousands of short connections in a run: each is closed
// with a reset (SO_LINGER 0) so that closed ones do not pile up in TIME_WAIT, and a failed
// connect is retried for 2 s before it counts as the server's failure, with errno printed (a
// fresh-clone CI run aborted on a failed connect after ~23000 inputs, errno unknown; another ran
// 66624 inputs without one).
int connect_to(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  int err = 0;
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) std::abort();
    const linger reset{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) return fd;
    err = errno;
    ::close(fd);
    ::usleep(10000);
  }
  std::fprintf(stderr, "cannot connect to the store for 2 s: %s\n", std::strerror(err));
  std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Fixture& f = fixture();
  const int fd = connect_to(f.port);
  std::size_t off = 0;
  while (off < size) {
    const ssize_t k = ::send(fd, data + off, size - off, MSG_NOSIGNAL);
    if (k <= 0) break;  // the server closed on us: fine
    off += static_cast<std::size_t>(k);
  }
  char buf[4096];
  pollfd p{fd, POLLIN, 0};
  while (::poll(&p, 1, 2) > 0 && ::recv(fd, buf, sizeof(buf), 0) > 0) {
  }
  ::close(fd);
  static unsigned n = 0;
  if (++n % 64 == 0) {
    f.client->set("probe", {1});
    if (f.client->get("probe", std::chrono::seconds(2)) != std::vector<std::uint8_t>{1}) {
      std::fprintf(stderr, "the store no longer answers a proper client\n");
      std::abort();
    }
  }
  return 0;
}
