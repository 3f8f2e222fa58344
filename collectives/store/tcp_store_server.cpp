// The TCP store's server: rank 0 serves a key/value map from a background thread; every rank
// (rank 0 included) talks to it as a client over TCP (tcp_store_client.cpp), so all ranks go
// through the same code path. The frames are in tcp_wire.hpp. wait() is answered by the server
// when the keys exist or when the deadline the client sent has passed, so no request outlives its
// timeout and a connection is never left with a stale reply in flight.
//
// Who may talk to it: the server binds the address it is given (MASTER_ADDR; 127.0.0.1 stays on
// loopback; COHORT_STORE_BIND=0.0.0.0 asks for every interface), and a connection must open with
// a hello frame (magic, protocol version, job token) before anything else. The token is
// COHORT_JOB_TOKEN, which cohortrun sets to a random value per job; a server and client whose
// tokens differ (another job, a stray process) part with kDenied and a clear error on the client.
// Tokens are compared in constant time.
//
// What a bad client cannot do: frames are bounded (kMaxHelloFrame before the hello, kMaxFrame
// after), a connection that has not said hello within the handshake time (10 s,
// COHORT_STORE_HANDSHAKE_MS) is closed, at most kMaxPending connections wait for their hello (the
// oldest is closed for a new one; also when the process runs out of descriptors), malformed or
// garbage frames close the connection, and a client that does not read its replies is dropped
// after kSendGrace rather than blocking the server. One thread serves every connection with
// non-blocking sockets and poll(), so an idle or byte-at-a-time client holds up nobody.
#include "store/tcp_store_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include "cohort/core/error.hpp"
#include "store/store_util.hpp"
#include "store/tcp_wire.hpp"

namespace cohort::comm::detail {
namespace {

using namespace wire;

constexpr std::size_t kMaxPending = 256;           // connections waiting for their hello
constexpr auto kSendGrace = std::chrono::seconds(2);  // a client that reads no replies is dropped

bool same_token(const std::string& a, const std::string& b) {
  // Constant time in the contents: every byte of the longer one is looked at.
  const std::size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

std::chrono::milliseconds handshake_time() {
  const char* e = std::getenv("COHORT_STORE_HANDSHAKE_MS");
  if (!e || !*e) return std::chrono::seconds(10);
  char* end = nullptr;
  const long long v = std::strtoll(e, &end, 10);
  COHORT_CHECK(end && *end == '\0' && v > 0, "COHORT_STORE_HANDSHAKE_MS='", e,
               "' is not a positive number of milliseconds");
  return std::chrono::milliseconds(v);
}

}  // namespace

class TcpStoreServer::Impl {
 public:
  // Listens on `bind_host` (an IPv4 address or a name; "0.0.0.0": every interface) at `port`
  // (0: any free port), for clients that present `token`. Throws when it cannot.
  Impl(const std::string& bind_host, int port, std::string token)
      : token_(std::move(token)), handshake_(handshake_time()) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::inet_pton(AF_INET, bind_host.c_str(), &addr.sin_addr) != 1) {
      addrinfo hints{};
      hints.ai_family = AF_INET;
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* res = nullptr;
      const int rc = ::getaddrinfo(bind_host.c_str(), nullptr, &hints, &res);
      COHORT_CHECK(rc == 0 && res, "store: rank 0 cannot resolve MASTER_ADDR '", bind_host,
                   "' to serve on it: ", rc ? gai_strerror(rc) : "no IPv4 address");
      addr.sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
      ::freeaddrinfo(res);
      // A host name that resolves to loopback here (Debian maps its own name to 127.0.1.1) is
      // what other hosts know rank 0 by: serve every interface, or they could not connect.
      if ((ntohl(addr.sin_addr.s_addr) >> 24) == 127 && bind_host != "localhost") {
        std::fprintf(stderr,
                     "cohort: store: MASTER_ADDR '%s' resolves to loopback on rank 0's host; "
                     "serving on every interface so that other hosts can connect\n",
                     bind_host.c_str());
        addr.sin_addr.s_addr = htonl(INADDR_ANY);
      }
    }
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    COHORT_CHECK(listen_fd_ >= 0, "store: socket(): ", std::strerror(errno));
    int one = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listen_fd_, 512) != 0) {
      const int err = errno;
      ::close(listen_fd_);
      COHORT_FAIL("store: rank 0 cannot serve on ", bind_host, ":", port, ": ",
                  std::strerror(err),
                  err == EADDRINUSE ? " (another job on this port? choose another MASTER_PORT, or "
                                      "cohortrun --master-port 0)"
                  : err == EADDRNOTAVAIL
                      ? " (MASTER_ADDR is not an address of this host, where rank 0 runs; or set "
                        "COHORT_STORE_BIND=0.0.0.0 to serve on every interface)"
                      : "");
    }
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    COHORT_CHECK(::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) == 0, "store: pipe(): ",
                 std::strerror(errno));
    thread_ = std::thread([this] { loop(); });
  }

  ~Impl() {
    stop_ = true;
    const char c = 0;
    (void)!::write(wake_[1], &c, 1);
    thread_.join();
    for (auto& kv : conns_) ::close(kv.first);
    ::close(listen_fd_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }

  int port() const { return port_; }

 private:
  struct Conn {
    Bytes in;
    bool hello = false;  // said hello with the right token
    Clock::time_point opened = Clock::now();
  };
  struct Waiter {
    int fd;
    std::vector<std::string> keys;
    Clock::time_point deadline;
  };

  void loop() {
    std::vector<pollfd> fds;
    while (!stop_) {
      fds.clear();
      fds.push_back({wake_[0], POLLIN, 0});
      fds.push_back({listen_fd_, POLLIN, 0});
      for (auto& kv : conns_) fds.push_back({kv.first, POLLIN, 0});
      int wait_ms = -1;
      const auto now = Clock::now();
      auto until = [&](Clock::time_point t) {
        const auto ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count() + 1;
        const int v = static_cast<int>(std::clamp<long long>(ms, 0, 1 << 30));
        wait_ms = wait_ms < 0 ? v : std::min(wait_ms, v);
      };
      for (const auto& w : waiters_) until(w.deadline);
      for (const auto& kv : conns_)
        if (!kv.second.hello) until(kv.second.opened + handshake_);
      if (accept_paused_) until(Clock::now() + std::chrono::milliseconds(100));
      if (accept_paused_) fds[1].events = 0;
      const int r = ::poll(fds.data(), fds.size(), wait_ms);
      if (r < 0 && errno != EINTR) break;
      expire_waiters();
      expire_handshakes();
      accept_paused_ = false;
      if (r <= 0) continue;
      if (fds[1].revents & POLLIN) accept_clients();
      for (std::size_t i = 2; i < fds.size(); ++i)
        // A client handled earlier in this round may have been dropped (and its number reused).
        if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) && conns_.count(fds[i].fd))
          read_client(fds[i].fd);
    }
  }

  void accept_clients() {
    for (;;) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        // Out of descriptors: make room by closing the oldest connection that has not said
        // hello; if every one has, stop accepting for a moment (the listening socket would
        // otherwise stay readable and spin this loop).
        if ((errno == EMFILE || errno == ENFILE) && !drop_oldest_pending()) accept_paused_ = true;
        return;
      }
      set_nodelay(fd);
      std::size_t pending = 0;
      for (const auto& kv : conns_) pending += !kv.second.hello;
      if (pending >= kMaxPending) drop_oldest_pending();
      conns_[fd];
    }
  }

  bool drop_oldest_pending() {
    int oldest = -1;
    Clock::time_point t = Clock::time_point::max();
    for (const auto& kv : conns_)
      if (!kv.second.hello && kv.second.opened < t) {
        t = kv.second.opened;
        oldest = kv.first;
      }
    if (oldest < 0) return false;
    drop(oldest);
    return true;
  }

  void expire_handshakes() {
    const auto now = Clock::now();
    std::vector<int> late;
    for (const auto& kv : conns_)
      if (!kv.second.hello && now - kv.second.opened >= handshake_) late.push_back(kv.first);
    for (int fd : late) drop(fd);
  }

  void drop(int fd) {
    waiters_.erase(std::remove_if(waiters_.begin(), waiters_.end(),
                                  [fd](const Waiter& w) { return w.fd == fd; }),
                   waiters_.end());
    conns_.erase(fd);
    ::close(fd);
  }

  void read_client(int fd) {
    Conn& c = conns_[fd];
    auto& in = c.in;
    std::uint8_t buf[65536];
    for (;;) {
      const ssize_t k = ::recv(fd, buf, sizeof(buf), 0);
      if (k > 0) {
        in.insert(in.end(), buf, buf + k);
        // Never hold more than one bounded frame of a connection (a client that streams bytes
        // with no end is dropped here rather than growing the buffer).
        if (in.size() > 4 + static_cast<std::size_t>(c.hello ? kMaxFrame : kMaxHelloFrame) +
                            (c.hello ? sizeof(buf) : 0)) {
          drop(fd);
          return;
        }
        continue;
      }
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      drop(fd);  // closed or failed
      return;
    }
    // Handle every complete frame.
    std::size_t off = 0;
    while (in.size() - off >= 4) {
      Reader h{in.data() + off, 4};
      const std::uint32_t len = h.u32();
      if (len > (conns_[fd].hello ? kMaxFrame : kMaxHelloFrame)) {
        drop(fd);
        return;
      }
      if (in.size() - off - 4 < len) break;
      Reader req{in.data() + off + 4, len};
      off += 4 + len;
      if (!handle(fd, req)) {
        drop(fd);
        return;
      }
    }
    in.erase(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(off));
  }

  bool has_all(const std::vector<std::string>& keys) const {
    for (const auto& k : keys)
      if (!data_.count(k)) return false;
    return true;
  }

  // Answers (or parks) one request; false on a malformed request or a dead client.
  bool handle(int fd, Reader& r) {
    const std::uint8_t cmd = r.u8();
    Bytes out;
    Conn& c = conns_[fd];
    if (!c.hello) {  // the first frame must be a hello with this job's token
      if (cmd != kHello) return false;
      const std::uint32_t magic = r.u32(), version = r.u32();
      const std::string token = r.str();
      if (!r.ok || magic != kMagic) return false;
      if (version != kProtocol || !same_token(token, token_)) {
        send_frame(fd, Bytes{kDenied}, std::chrono::milliseconds(100));
        return false;
      }
      c.hello = true;
      return send_frame(fd, Bytes{kOk}, kSendGrace);
    }
    switch (cmd) {
      case kSet: {
        std::string key = r.str();
        Bytes value = r.bytes();
        if (!r.ok) return false;
        data_[std::move(key)] = std::move(value);
        out.push_back(kOk);
        if (!send_frame(fd, out, kSendGrace)) return false;
        release_waiters();
        return true;
      }
      case kGet: {
        const std::string key = r.str();
        if (!r.ok) return false;
        auto it = data_.find(key);
        if (it == data_.end()) {
          out.push_back(kMissing);
        } else {
          out.push_back(kOk);
          put_bytes(out, it->second.data(), it->second.size());
        }
        return send_frame(fd, out, kSendGrace);
      }
      case kAdd: {
        const std::string key = r.str();
        const std::int64_t delta = r.i64();
        if (!r.ok) return false;
        auto it = data_.find(key);
        std::int64_t v = delta;
        if (it != data_.end()) {
          const std::string s(it->second.begin(), it->second.end());
          char* end = nullptr;
          errno = 0;
          const long long cur = std::strtoll(s.c_str(), &end, 10);
          long long sum = 0;
          if (s.empty() || *end != '\0' || errno == ERANGE ||
              __builtin_add_overflow(cur, static_cast<long long>(delta), &sum)) {
            out.push_back(kBadValue);  // not a counter, or the sum would overflow
            return send_frame(fd, out, kSendGrace);
          }
          v = sum;
        }
        data_[key] = detail::encode_counter(v);
        out.push_back(kOk);
        put_i64(out, v);
        if (!send_frame(fd, out, kSendGrace)) return false;
        release_waiters();
        return true;
      }
      case kCheck: {
        const auto keys = r.strs();
        if (!r.ok) return false;
        out.push_back(has_all(keys) ? kOk : kMissing);
        return send_frame(fd, out, kSendGrace);
      }
      case kWait: {
        auto keys = r.strs();
        const std::int64_t ms = r.i64();
        if (!r.ok) return false;
        if (has_all(keys)) {
          out.push_back(kOk);
          return send_frame(fd, out, kSendGrace);
        }
        // The client's deadline, bounded: a year at most, never in the past by more than now.
        const auto wait = std::chrono::milliseconds(
            std::clamp<std::int64_t>(ms, 0, 1000LL * 3600 * 24 * 365));
        waiters_.push_back({fd, std::move(keys), Clock::now() + wait});
        return true;
      }
      default: return false;
    }
  }

  void release_waiters() {
    for (std::size_t i = 0; i < waiters_.size();) {
      if (has_all(waiters_[i].keys)) {
        const int fd = waiters_[i].fd;
        waiters_.erase(waiters_.begin() + static_cast<std::ptrdiff_t>(i));
        if (!send_frame(fd, Bytes{kOk}, kSendGrace)) drop(fd);
        i = 0;  // drop() may have shifted the list
      } else {
        ++i;
      }
    }
  }

  void expire_waiters() {
    const auto now = Clock::now();
    for (std::size_t i = 0; i < waiters_.size();) {
      if (waiters_[i].deadline <= now) {
        Waiter w = std::move(waiters_[i]);
        waiters_.erase(waiters_.begin() + static_cast<std::ptrdiff_t>(i));
        Bytes out{kMissing};
        std::vector<std::string> missing;
        for (const auto& k : w.keys)
          if (!data_.count(k)) missing.push_back(k);
        put_u32(out, static_cast<std::uint32_t>(missing.size()));
        for (const auto& k : missing) put_str(out, k);
        if (!send_frame(w.fd, out, kSendGrace)) drop(w.fd);
        i = 0;
      } else {
        ++i;
      }
    }
  }

  const std::string token_;
  const std::chrono::milliseconds handshake_;
  bool accept_paused_ = false;
  int listen_fd_ = -1;
  int port_ = 0;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  std::map<int, Conn> conns_;
  std::vector<Waiter> waiters_;
  std::map<std::string, Bytes> data_;
  std::thread thread_;
};

TcpStoreServer::TcpStoreServer(const std::string& bind_host, int port, std::string token)
    : impl_(std::make_unique<Impl>(bind_host, port, std::move(token))) {}
TcpStoreServer::~TcpStoreServer() = default;
int TcpStoreServer::port() const { return impl_->port(); }

}  // namespace cohort::comm::detail
