// The TCP store: rank 0 serves a key/value map from a background thread; every rank (rank 0
// included) talks to it as a client over TCP, so all ranks go through the same code path.
//
// Wire format: every message is a frame `u32 length | payload` (little endian). Requests start
// with a command byte; strings are `u32 length | bytes`, integers 8 bytes. The server answers each
// request with one frame whose first byte is a status. wait() is answered by the server when the
// keys exist or when the deadline the client sent has passed, so no request outlives its timeout
// and a connection is never left with a stale reply in flight.
//
// Clients keep a small pool of connections: each call takes an idle one (or opens a new one), so
// one thread blocked in get() never holds up another thread's set() (torch.distributed's
// TCPStore client has exactly that problem with a single socket).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "cohort/collectives/store.hpp"
#include "cohort/core/error.hpp"
#include "store/store_util.hpp"

namespace cohort::comm {
namespace {

using Clock = std::chrono::steady_clock;
using Bytes = std::vector<std::uint8_t>;

enum Cmd : std::uint8_t { kSet = 1, kGet = 2, kAdd = 3, kCheck = 4, kWait = 5 };
enum Status : std::uint8_t { kOk = 0, kMissing = 1, kBadValue = 2 };
constexpr std::uint32_t kMaxFrame = 256u << 20;

// --- encoding ---
void put_u32(Bytes& b, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void put_i64(Bytes& b, std::int64_t v) {
  const auto u = static_cast<std::uint64_t>(v);
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<std::uint8_t>(u >> (8 * i)));
}
void put_bytes(Bytes& b, const std::uint8_t* p, std::size_t n) {
  put_u32(b, static_cast<std::uint32_t>(n));
  b.insert(b.end(), p, p + n);
}
void put_str(Bytes& b, const std::string& s) {
  put_bytes(b, reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
}

// Reads fields from a payload; `ok` turns false on a short or malformed payload.
struct Reader {
  const std::uint8_t* p;
  std::size_t n;
  bool ok = true;
  bool need(std::size_t k) {
    if (n < k) ok = false;
    return ok;
  }
  std::uint8_t u8() {
    if (!need(1)) return 0;
    --n;
    return *p++;
  }
  std::uint32_t u32() {
    if (!need(4)) return 0;
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(p[i]) << (8 * i);
    p += 4;
    n -= 4;
    return v;
  }
  std::int64_t i64() {
    if (!need(8)) return 0;
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
    p += 8;
    n -= 8;
    return static_cast<std::int64_t>(v);
  }
  Bytes bytes() {
    const std::uint32_t k = u32();
    if (!need(k)) return {};
    Bytes v(p, p + k);
    p += k;
    n -= k;
    return v;
  }
  std::string str() {
    const Bytes b = bytes();
    return std::string(b.begin(), b.end());
  }
  std::vector<std::string> strs() {
    const std::uint32_t k = u32();
    std::vector<std::string> v;
    for (std::uint32_t i = 0; i < k && ok; ++i) v.push_back(str());
    return v;
  }
};

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Sends a whole buffer (blocking). False when the peer is gone.
bool send_all(int fd, const std::uint8_t* p, std::size_t n) {
  while (n) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pfd{fd, POLLOUT, 0};
      ::poll(&pfd, 1, 1000);
      continue;
    }
    if (k <= 0) return false;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

bool send_frame(int fd, const Bytes& payload) {
  Bytes frame;
  frame.reserve(payload.size() + 4);
  put_u32(frame, static_cast<std::uint32_t>(payload.size()));
  frame.insert(frame.end(), payload.begin(), payload.end());
  return send_all(fd, frame.data(), frame.size());
}

// ---------------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------------
class Server {
 public:
  // Listens on all interfaces at `port` (0: any free port). Throws when it cannot.
  explicit Server(int port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    COHORT_CHECK(listen_fd_ >= 0, "store: socket(): ", std::strerror(errno));
    int one = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listen_fd_, 512) != 0) {
      const int err = errno;
      ::close(listen_fd_);
      COHORT_FAIL("store: rank 0 cannot serve on port ", port, ": ", std::strerror(err),
                  err == EADDRINUSE ? " (another job on this port? choose another MASTER_PORT, or "
                                      "cohortrun --master-port 0)"
                                    : "");
    }
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    COHORT_CHECK(::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) == 0, "store: pipe(): ",
                 std::strerror(errno));
    thread_ = std::thread([this] { loop(); });
  }

  ~Server() {
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
      for (const auto& w : waiters_) {
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(w.deadline - now)
                            .count() + 1;
        wait_ms = wait_ms < 0 ? static_cast<int>(std::max<long long>(ms, 0))
                              : std::min(wait_ms, static_cast<int>(std::max<long long>(ms, 0)));
      }
      const int r = ::poll(fds.data(), fds.size(), wait_ms);
      if (r < 0 && errno != EINTR) break;
      expire_waiters();
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
      if (fd < 0) return;
      set_nodelay(fd);
      conns_[fd];
    }
  }

  void drop(int fd) {
    waiters_.erase(std::remove_if(waiters_.begin(), waiters_.end(),
                                  [fd](const Waiter& w) { return w.fd == fd; }),
                   waiters_.end());
    conns_.erase(fd);
    ::close(fd);
  }

  void read_client(int fd) {
    auto& in = conns_[fd].in;
    std::uint8_t buf[65536];
    for (;;) {
      const ssize_t k = ::recv(fd, buf, sizeof(buf), 0);
      if (k > 0) {
        in.insert(in.end(), buf, buf + k);
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
      if (len > kMaxFrame) {
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
    switch (cmd) {
      case kSet: {
        std::string key = r.str();
        Bytes value = r.bytes();
        if (!r.ok) return false;
        data_[std::move(key)] = std::move(value);
        out.push_back(kOk);
        if (!send_frame(fd, out)) return false;
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
        return send_frame(fd, out);
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
          const long long cur = std::strtoll(s.c_str(), &end, 10);
          if (s.empty() || *end != '\0') {
            out.push_back(kBadValue);
            return send_frame(fd, out);
          }
          v = cur + delta;
        }
        data_[key] = detail::encode_counter(v);
        out.push_back(kOk);
        put_i64(out, v);
        if (!send_frame(fd, out)) return false;
        release_waiters();
        return true;
      }
      case kCheck: {
        const auto keys = r.strs();
        if (!r.ok) return false;
        out.push_back(has_all(keys) ? kOk : kMissing);
        return send_frame(fd, out);
      }
      case kWait: {
        auto keys = r.strs();
        const std::int64_t ms = r.i64();
        if (!r.ok) return false;
        if (has_all(keys)) {
          out.push_back(kOk);
          return send_frame(fd, out);
        }
        waiters_.push_back({fd, std::move(keys), Clock::now() + std::chrono::milliseconds(ms)});
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
        if (!send_frame(fd, Bytes{kOk})) drop(fd);
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
        if (!send_frame(w.fd, out)) drop(w.fd);
        i = 0;
      } else {
        ++i;
      }
    }
  }

  int listen_fd_ = -1;
  int port_ = 0;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  std::map<int, Conn> conns_;
  std::vector<Waiter> waiters_;
  std::map<std::string, Bytes> data_;
  std::thread thread_;
};

// ---------------------------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------------------------
class TcpStore final : public Store {
 public:
  TcpStore(const std::string& host, int port, bool is_server, std::chrono::milliseconds timeout)
      : host_(host), timeout_(timeout) {
    if (is_server) {
      server_ = std::make_unique<Server>(port);
      port = server_->port();
    }
    COHORT_CHECK(port > 0 && port <= 65535, "store tcp://", host, ":", port,
                 ": a client needs the server's port (1..65535)");
    port_ = port;
    // Connect once now, so a wrong address fails here rather than at first use.
    release(acquire(timeout_));
  }

  ~TcpStore() override {
    for (int fd : idle_) ::close(fd);
  }

  void set(const std::string& key, const std::vector<std::uint8_t>& value) override {
    Bytes req{kSet};
    put_str(req, key);
    put_bytes(req, value.data(), value.size());
    const Bytes resp = call(req, timeout_, "set('" + key + "')");
    check_status(resp, "set('" + key + "')");
  }

  std::vector<std::uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) override {
    wait({key}, timeout);
    Bytes req{kGet};
    put_str(req, key);
    const Bytes resp = call(req, timeout_, "get('" + key + "')");
    check_status(resp, "get('" + key + "')");
    Reader r{resp.data() + 1, resp.size() - 1};
    Bytes v = r.bytes();
    COHORT_CHECK(r.ok, "store ", address(), ": malformed reply to get('", key, "')");
    return v;
  }

  std::int64_t add(const std::string& key, std::int64_t delta) override {
    Bytes req{kAdd};
    put_str(req, key);
    put_i64(req, delta);
    const Bytes resp = call(req, timeout_, "add('" + key + "')");
    COHORT_CHECK(!resp.empty() && resp[0] != kBadValue, "store ", address(), ": add() on key '",
                 key, "' whose value is not an integer");
    check_status(resp, "add('" + key + "')");
    Reader r{resp.data() + 1, resp.size() - 1};
    const std::int64_t v = r.i64();
    COHORT_CHECK(r.ok, "store ", address(), ": malformed reply to add('", key, "')");
    return v;
  }

  bool check(const std::vector<std::string>& keys) override {
    Bytes req{kCheck};
    put_u32(req, static_cast<std::uint32_t>(keys.size()));
    for (const auto& k : keys) put_str(req, k);
    const Bytes resp = call(req, timeout_, "check()");
    COHORT_CHECK(!resp.empty(), "store ", address(), ": empty reply to check()");
    return resp[0] == kOk;
  }

  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    Bytes req{kWait};
    put_u32(req, static_cast<std::uint32_t>(keys.size()));
    for (const auto& k : keys) put_str(req, k);
    put_i64(req, timeout.count());
    // The server answers by the deadline; allow the store's own timeout on top for the network.
    const Bytes resp = call(req, timeout + timeout_, "wait()");
    COHORT_CHECK(!resp.empty(), "store ", address(), ": empty reply to wait()");
    if (resp[0] == kOk) return;
    Reader r{resp.data() + 1, resp.size() - 1};
    const auto missing = r.strs();
    detail::throw_store_timeout(address(), r.ok ? missing : keys, timeout);
  }

  std::string address() const override {
    return "tcp://" + host_ + ":" + std::to_string(port_);
  }

 private:
  void check_status(const Bytes& resp, const std::string& what) {
    COHORT_CHECK(!resp.empty() && resp[0] == kOk, "store ", address(), ": unexpected reply to ",
                 what);
  }

  int connect_once(std::string* why) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(host_.c_str(), std::to_string(port_).c_str(), &hints, &res);
    if (rc != 0) {
      *why = std::string("cannot resolve '") + host_ + "': " + gai_strerror(rc);
      return -1;
    }
    int fd = -1;
    for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
      fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
        *why = std::strerror(errno);
        ::close(fd);
        fd = -1;
      }
    }
    ::freeaddrinfo(res);
    if (fd >= 0) set_nodelay(fd);
    return fd;
  }

  // An idle connection, or a new one (retrying until `timeout`: the server may start later).
  int acquire(std::chrono::milliseconds timeout) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!idle_.empty()) {
        const int fd = idle_.back();
        idle_.pop_back();
        return fd;
      }
    }
    const auto deadline = Clock::now() + timeout;
    std::string why;
    auto pause = std::chrono::milliseconds(5);
    for (;;) {
      const int fd = connect_once(&why);
      if (fd >= 0) return fd;
      if (Clock::now() >= deadline) break;
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(200));
    }
    COHORT_FAIL("store ", address(), ": cannot connect within ", timeout.count(), " ms (", why,
                "); is rank 0 running and MASTER_ADDR/MASTER_PORT right?");
  }

  void release(int fd) {
    std::lock_guard<std::mutex> lock(mu_);
    idle_.push_back(fd);
  }

  // One request/reply on a pooled connection. A connection that failed or timed out is closed,
  // never returned to the pool.
  Bytes call(const Bytes& req, std::chrono::milliseconds reply_timeout, const std::string& what) {
    const int fd = acquire(timeout_);
    if (!send_frame(fd, req)) {
      ::close(fd);
      COHORT_FAIL("store ", address(), ": connection lost while sending ", what,
                  " (did rank 0 exit?)");
    }
    const auto deadline = Clock::now() + reply_timeout;
    Bytes buf;
    std::size_t need = 4;
    bool have_len = false;
    while (buf.size() < need) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd pfd{fd, POLLIN, 0};
      const int pr = left > 0 ? ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 1 << 30)))
                              : 0;
      if (pr < 0 && errno == EINTR) continue;
      if (pr <= 0) {
        ::close(fd);
        COHORT_FAIL("store ", address(), ": no reply to ", what, " within ",
                    reply_timeout.count(), " ms");
      }
      std::uint8_t tmp[65536];
      const ssize_t k = ::recv(fd, tmp, sizeof(tmp), 0);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) {
        ::close(fd);
        COHORT_FAIL("store ", address(), ": connection lost while waiting for the reply to ", what,
                    " (did rank 0 exit?)");
      }
      buf.insert(buf.end(), tmp, tmp + k);
      if (!have_len && buf.size() >= 4) {
        Reader h{buf.data(), 4};
        need = 4 + h.u32();
        have_len = true;
      }
    }
    release(fd);
    return Bytes(buf.begin() + 4, buf.end());
  }

  std::string host_;
  int port_ = 0;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<Server> server_;
  std::mutex mu_;
  std::vector<int> idle_;
};

}  // namespace

std::shared_ptr<Store> make_tcp_store(const std::string& host, int port, bool is_server,
                                      std::chrono::milliseconds timeout) {
  COHORT_CHECK(!host.empty(), "make_tcp_store: empty host (set MASTER_ADDR)");
  COHORT_CHECK(port >= 0 && port <= 65535, "make_tcp_store: port ", port, " out of range");
  return std::make_shared<TcpStore>(host, port, is_server, timeout);
}

}  // namespace cohort::comm
