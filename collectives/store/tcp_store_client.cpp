// The TCP store's client, and make_tcp_store(): every rank (rank 0 included) talks to the store
// over TCP, so all ranks go through the same code path; on rank 0 it also owns the server
// (tcp_store_server.cpp, where the threat model is: who may connect and what a bad client cannot
// do). The frames are in tcp_wire.hpp.
//
// Clients keep a small pool of connections: each call takes an idle one (or opens a new one), so
// one thread blocked in get() never holds up another thread's set() (torch.distributed's
// TCPStore client has exactly that problem with a single socket).
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "cohort/collectives/store.hpp"
#include "cohort/core/error.hpp"
#include "store/store_util.hpp"
#include "store/tcp_store_server.hpp"
#include "store/tcp_wire.hpp"

namespace cohort::comm {
namespace {

using namespace detail::wire;

// COHORT_JOB_TOKEN, or "" (no token: any client of this protocol is accepted).
std::string job_token() {
  const char* t = std::getenv("COHORT_JOB_TOKEN");
  return t ? std::string(t) : std::string();
}

class TcpStore final : public Store {
 public:
  TcpStore(const std::string& host, int port, bool is_server, std::chrono::milliseconds timeout)
      : host_(host), timeout_(timeout), token_(job_token()) {
    if (is_server) {
      const char* bind = std::getenv("COHORT_STORE_BIND");
      server_ = std::make_unique<detail::TcpStoreServer>(bind && *bind ? std::string(bind) : host,
                                                         port, token_);
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

  std::vector<std::uint8_t> get(const std::string& key,
                                std::chrono::milliseconds timeout) override {
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
    COHORT_CHECK(!resp.empty() && resp[0] != kBadValue, "store ", address(), ": add(", delta,
                 ") on key '", key, "' whose value is not an integer, or would overflow");
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

  // Says hello on a new connection: this job's token. Closes it and throws when the server
  // refuses (another job's store, or COHORT_JOB_TOKEN differs) or does not answer.
  void hello(int fd) {
    Bytes req{kHello};
    put_u32(req, kMagic);
    put_u32(req, kProtocol);
    put_str(req, token_);
    const Bytes resp = exchange(fd, req, timeout_, "the hello");
    if (!resp.empty() && resp[0] == kOk) return;
    ::close(fd);
    COHORT_FAIL("store ", address(), " refused this process: its job token (COHORT_JOB_TOKEN, ",
                token_.empty() ? "unset" : "set", ") differs from the server's. Is this rank "
                "started by another job's launcher, or is COHORT_JOB_TOKEN set on some ranks "
                "only? (cohortrun sets one per job)");
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
      if (fd >= 0) {
        hello(fd);
        return fd;
      }
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
    Bytes reply = exchange(fd, req, reply_timeout, what);
    release(fd);
    return reply;
  }

  // Sends `req` on `fd` and reads one reply frame; closes fd and throws on failure.
  Bytes exchange(int fd, const Bytes& req, std::chrono::milliseconds reply_timeout,
                 const std::string& what) {
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
      const int pr =
          left > 0 ? ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 1 << 30))) : 0;
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
    return Bytes(buf.begin() + 4, buf.end());
  }

  std::string host_;
  int port_ = 0;
  std::chrono::milliseconds timeout_;
  const std::string token_;
  std::unique_ptr<detail::TcpStoreServer> server_;
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

