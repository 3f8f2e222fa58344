// The TCP store against clients that are not this job's ranks: strangers without the job token,
// garbage, truncated and oversized frames, floods of idle connections and byte-at-a-time
// clients. Throughout, a real client must keep getting answers at normal speed, and the server
// must bind only the address it was given.
#include <doctest/doctest.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "../common/testing.hpp"
#include "cohort/collectives/store.hpp"
#include "env_guard.hpp"

using namespace cohort::comm;
using namespace std::chrono_literals;
using cohort::testing::error_of;
using Clock = std::chrono::steady_clock;

namespace {

int port_of(const std::shared_ptr<Store>& s) {
  const std::string a = s->address();
  return std::stoi(a.substr(a.rfind(':') + 1));
}

// A raw TCP connection to 127.0.0.1:port (or -1).
int raw_connect(int port, const char* ip = "127.0.0.1") {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, ip, &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// True when the server closes `fd` within `limit` (reads return 0 or an error).
bool closed_by_server(int fd, std::chrono::milliseconds limit) {
  const auto end = Clock::now() + limit;
  char buf[256];
  while (Clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) > 0) {
      const ssize_t k = ::recv(fd, buf, sizeof(buf), 0);
      if (k <= 0) return true;
    }
  }
  return false;
}

// The time a real client's set + get takes.
std::chrono::milliseconds round_trip(Store& s, const std::string& key) {
  const auto t0 = Clock::now();
  s.set(key, {1, 2, 3});
  CHECK(s.get(key, 1000ms) == std::vector<std::uint8_t>{1, 2, 3});
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
}

std::vector<std::uint8_t> frame(std::uint32_t len, const std::string& body) {
  std::vector<std::uint8_t> f;
  for (int i = 0; i < 4; ++i) f.push_back(static_cast<std::uint8_t>(len >> (8 * i)));
  f.insert(f.end(), body.begin(), body.end());
  return f;
}

}  // namespace

TEST_SUITE("store") {
  TEST_CASE("tcp: only clients with the job token get in; the others get a clear error") {
    cohort::test::EnvGuard env({{"COHORT_JOB_TOKEN", "job-one-secret"}});
    auto server = make_tcp_store("127.0.0.1", 0, true, 2000ms);
    const int port = port_of(server);
    auto same = make_tcp_store("127.0.0.1", port, false, 2000ms);
    same->set("k", {7});
    CHECK(server->get("k", 500ms) == std::vector<std::uint8_t>{7});

    ::setenv("COHORT_JOB_TOKEN", "job-two-secret", 1);
    const std::string wrong = error_of([&] { make_tcp_store("127.0.0.1", port, false, 1000ms); });
    CHECK(wrong.find("refused this process: its job token (COHORT_JOB_TOKEN, set) differs") !=
          std::string::npos);
    ::unsetenv("COHORT_JOB_TOKEN");
    const std::string none = error_of([&] { make_tcp_store("127.0.0.1", port, false, 1000ms); });
    CHECK(none.find("COHORT_JOB_TOKEN, unset") != std::string::npos);
    // A stranger speaking the protocol without the hello is cut off at its first frame.
    const int fd = raw_connect(port);
    REQUIRE(fd >= 0);
    const auto get = frame(6, std::string("\x02\x01\x00\x00\x00k", 6));
    CHECK(::send(fd, get.data(), get.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(get.size()));
    CHECK(closed_by_server(fd, 1000ms));
    ::close(fd);
    CHECK(round_trip(*same, "after") < 500ms);
  }

  TEST_CASE("tcp: garbage, truncated and oversized frames close that connection only") {
    cohort::test::EnvGuard env({{"COHORT_JOB_TOKEN", "t"}});
    auto server = make_tcp_store("127.0.0.1", 0, true, 2000ms);
    const int port = port_of(server);
    auto client = make_tcp_store("127.0.0.1", port, false, 2000ms);
    std::vector<std::vector<std::uint8_t>> bad = {
        frame(8, "GET / HT"),                          // garbage: not a hello
        frame(0xffffffffu, "xxxx"),                    // oversized length field
        frame(5000, std::string(100, 'a')),            // over the pre-hello bound
        frame(13, std::string("\x06\x43\x4f\x48", 4)), // a hello cut short (then silence)
    };
    std::vector<int> fds;
    for (const auto& b : bad) {
      const int fd = raw_connect(port);
      REQUIRE(fd >= 0);
      ::send(fd, b.data(), b.size(), MSG_NOSIGNAL);
      fds.push_back(fd);
    }
    for (std::size_t i = 0; i < 3; ++i) CHECK(closed_by_server(fds[i], 1000ms));
    // The truncated hello waits for its bytes; meanwhile the job's client is served at once.
    CHECK(round_trip(*client, "k") < 500ms);
    for (int fd : fds) ::close(fd);
  }

  TEST_CASE("tcp: a flood of idle connections and a byte-at-a-time client block nobody") {
    cohort::test::EnvGuard env({{"COHORT_JOB_TOKEN", "t"}, {"COHORT_STORE_HANDSHAKE_MS", "1500"}});
    auto server = make_tcp_store("127.0.0.1", 0, true, 2000ms);
    const int port = port_of(server);
    auto client = make_tcp_store("127.0.0.1", port, false, 2000ms);
    std::vector<int> idle;
    for (int i = 0; i < 300; ++i) {
      const int fd = raw_connect(port);
      if (fd >= 0) idle.push_back(fd);
    }
    CHECK(idle.size() == 300);
    // A slow client: a valid hello, one byte every 20 ms.
    std::string hello = std::string("\x06", 1) + std::string("\x43\x4f\x48\x53", 4) +
                        std::string("\x02\x00\x00\x00", 4) + std::string("\x01\x00\x00\x00t", 5);
    const auto slow_frame = frame(static_cast<std::uint32_t>(hello.size()), hello);
    const int slow = raw_connect(port);
    REQUIRE(slow >= 0);
    std::thread dribble([&] {
      for (std::uint8_t b : slow_frame) {
        ::send(slow, &b, 1, MSG_NOSIGNAL);
        std::this_thread::sleep_for(20ms);
      }
    });
    std::chrono::milliseconds worst{0};
    for (int i = 0; i < 20; ++i) worst = std::max(worst, round_trip(*client, "k" + std::to_string(i)));
    dribble.join();
    MESSAGE("slowest set+get among 300 idle connections and a slow client: " << worst.count()
                                                                             << " ms");
    CHECK(worst < 200ms);
    // The slow client finished its hello and is answered; the idle ones are closed after the
    // handshake time.
    char ok[5] = {};
    pollfd p{slow, POLLIN, 0};
    CHECK(::poll(&p, 1, 1000) == 1);
    CHECK(::recv(slow, ok, sizeof(ok), 0) == 5);
    CHECK(ok[4] == 0);  // kOk
    // A new rank connecting during the flood gets in too.
    auto late = make_tcp_store("127.0.0.1", port, false, 2000ms);
    CHECK(round_trip(*late, "late") < 200ms);
    // At most 256 connections wait for their hello (the oldest made room for the newest), and
    // every one is closed after the handshake time.
    CHECK(closed_by_server(idle.front(), 3000ms));
    CHECK(closed_by_server(idle.back(), 3000ms));
    for (int fd : idle) ::close(fd);
    ::close(slow);
    CHECK(round_trip(*client, "end") < 200ms);
  }

  TEST_CASE("tcp: add() that would overflow is refused (found by tests/fuzz/fuzz_store)") {
    cohort::test::EnvGuard env;
    auto server = make_tcp_store("127.0.0.1", 0, true, 1000ms);
    const std::string big = "9223372036854775807";
    server->set("n", std::vector<std::uint8_t>(big.begin(), big.end()));
    CHECK(error_of([&] { server->add("n", 1); }).find("would overflow") != std::string::npos);
    CHECK(server->add("n", -7) == 9223372036854775800LL);
  }

  TEST_CASE("tcp: the server binds the address it is given, not every interface") {
    cohort::test::EnvGuard env;
    // Another IPv4 address of this machine, if it has one besides loopback.
    std::string other;
    ifaddrs* ifs = nullptr;
    if (::getifaddrs(&ifs) == 0) {
      for (ifaddrs* i = ifs; i && other.empty(); i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
        char buf[INET_ADDRSTRLEN];
        ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf,
                    sizeof(buf));
        if (std::string(buf).rfind("127.", 0) != 0) other = buf;
      }
      ::freeifaddrs(ifs);
    }
    if (other.empty()) {
      MESSAGE("skipped: this machine has no IPv4 address besides loopback");
      return;
    }
    auto loop = make_tcp_store("127.0.0.1", 0, true, 1000ms);
    const int port = port_of(loop);
    CHECK(raw_connect(port, other.c_str()) < 0);  // not served on `other`
    const int fd = raw_connect(port, "127.0.0.1");
    CHECK(fd >= 0);
    ::close(fd);
    // Asked for every interface, it is reachable on `other` too.
    ::setenv("COHORT_STORE_BIND", "0.0.0.0", 1);
    auto all = make_tcp_store("127.0.0.1", 0, true, 1000ms);
    const int fd2 = raw_connect(port_of(all), other.c_str());
    CHECK(fd2 >= 0);
    if (fd2 >= 0) ::close(fd2);
    // An address that is not this host's is refused with the reason.
    ::unsetenv("COHORT_STORE_BIND");
    const std::string e = error_of([] { make_tcp_store("192.0.2.1", 0, true, 500ms); });
    CHECK(e.find("is not an address of this host") != std::string::npos);
  }
}
