// The rendezvous stores: the same behaviour from every implementation (memory, TCP, file, prefix),
// several threads at once, and timeouts that name the missing keys and the store.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>
#include <thread>

#include "cohort/collectives/store.hpp"
#include "cohort/core/error.hpp"

using namespace cohort::comm;
using namespace std::chrono_literals;

namespace {

// Scratch directories for file stores, removed when the test program exits.
struct TempDirs {
  std::vector<std::string> dirs;
  ~TempDirs() {
    std::error_code ec;
    for (const auto& d : dirs) std::filesystem::remove_all(d, ec);
  }
};
TempDirs g_temp_dirs;

std::string temp_dir() {
  char tmpl[] = "/tmp/cohort-store-test-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  g_temp_dirs.dirs.push_back(tmpl);
  return tmpl;
}

struct StoreKind {
  const char* name;
  std::function<std::shared_ptr<Store>()> make;
};

std::vector<StoreKind> kinds() {
  return {
      {"memory", [] { return make_memory_store(); }},
      {"tcp", [] { return make_tcp_store("127.0.0.1", 0, true, 5000ms); }},
      {"file", [] { return make_file_store(temp_dir()); }},
      {"prefix", [] { return make_prefix_store(make_memory_store(), "job7"); }},
  };
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const cohort::Error& e) {
    return e.what();
  }
  return "(no error)";
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  socklen_t len = sizeof(a);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace

TEST_SUITE("store") {
  TEST_CASE("set, get, overwrite, check, binary values") {
    for (const auto& k : kinds()) {
      CAPTURE(k.name);
      auto s = k.make();
      const std::vector<std::uint8_t> bin = {0, 1, 255, 0, 7};
      s->set("a/b c", bin);
      CHECK(s->get("a/b c", 1000ms) == bin);
      s->set_string("a/b c", "second");
      CHECK(s->get_string("a/b c", 1000ms) == "second");
      s->set("empty", {});
      CHECK(s->get("empty", 1000ms).empty());
      CHECK(s->check({"a/b c", "empty"}));
      CHECK_FALSE(s->check({"a/b c", "nope"}));
    }
  }

  TEST_CASE("get and wait time out naming the missing keys, the timeout and the store") {
    for (const auto& k : kinds()) {
      CAPTURE(k.name);
      auto s = k.make();
      s->set_string("here", "1");
      const auto t0 = std::chrono::steady_clock::now();
      const std::string e1 = error_of([&] { s->get("missing-key", 150ms); });
      const auto waited = std::chrono::steady_clock::now() - t0;
      // (A prefix store reports the full key, prefix included.)
      CHECK(e1.find("timed out after 150 ms waiting for key '") != std::string::npos);
      CHECK(e1.find("missing-key'") != std::string::npos);
      CHECK(e1.find(s->address()) != std::string::npos);
      CHECK(waited >= 140ms);
      CHECK(waited < 3s);
      const std::string e2 = error_of([&] { s->wait({"here", "x", "y"}, 100ms); });
      CHECK(e2.find("waiting for keys '") != std::string::npos);
      CHECK(e2.find("x', '") != std::string::npos);
      CHECK(e2.find("y'") != std::string::npos);
      CHECK(e2.find("here'") == std::string::npos);
    }
  }

  TEST_CASE("add is atomic across threads and starts at zero") {
    for (const auto& k : kinds()) {
      CAPTURE(k.name);
      auto s = k.make();
      constexpr int kThreads = 6, kAdds = 50;
      std::vector<std::vector<std::int64_t>> seen(kThreads);
      std::vector<std::thread> ts;
      for (int t = 0; t < kThreads; ++t)
        ts.emplace_back([&, t] {
          for (int i = 0; i < kAdds; ++i) seen[t].push_back(s->add("counter", 1));
        });
      for (auto& t : ts) t.join();
      std::set<std::int64_t> all;
      for (const auto& v : seen) all.insert(v.begin(), v.end());
      CHECK(all.size() == kThreads * kAdds);  // every add saw a distinct value
      CHECK(*all.begin() == 1);
      CHECK(*all.rbegin() == kThreads * kAdds);
      CHECK(s->add("counter", -10) == kThreads * kAdds - 10);
      CHECK(s->get_string("counter", 100ms) == std::to_string(kThreads * kAdds - 10));
      s->set_string("text", "abc");
      CHECK(error_of([&] { s->add("text", 1); }).find("is not an integer") != std::string::npos);
    }
  }

  TEST_CASE("a blocked get does not hold up other threads; it returns once the key is set") {
    for (const auto& k : kinds()) {
      CAPTURE(k.name);
      auto s = k.make();
      std::atomic<bool> got{false};
      std::string value;
      std::thread waiter([&] {
        value = s->get_string("late", 5000ms);
        got = true;
      });
      std::this_thread::sleep_for(50ms);
      // While the waiter blocks, this thread still gets service from the same Store object.
      s->set_string("other", "x");
      CHECK(s->get_string("other", 1000ms) == "x");
      CHECK_FALSE(got.load());
      s->set_string("late", "finally");
      waiter.join();
      CHECK(got.load());
      CHECK(value == "finally");
    }
  }

  TEST_CASE("tcp: one server, several clients in threads") {
    auto server = make_tcp_store("127.0.0.1", 0, true, 5000ms);
    const std::string addr = server->address();
    const int port = std::atoi(addr.substr(addr.rfind(':') + 1).c_str());
    REQUIRE(port > 0);
    constexpr int kClients = 4;
    std::vector<std::thread> ts;
    std::atomic<int> ok{0};
    for (int c = 0; c < kClients; ++c)
      ts.emplace_back([&, c] {
        auto s = make_tcp_store("localhost", port, false, 5000ms);
        s->set_string("client/" + std::to_string(c), std::to_string(c * c));
        std::vector<std::string> keys;
        for (int o = 0; o < kClients; ++o) keys.push_back("client/" + std::to_string(o));
        s->wait(keys, 5000ms);  // a barrier over the store
        bool good = true;
        for (int o = 0; o < kClients; ++o)
          good &= s->get_string(keys[o], 100ms) == std::to_string(o * o);
        s->add("done", 1);
        if (good) ++ok;
      });
    for (auto& t : ts) t.join();
    CHECK(ok == kClients);
    CHECK(server->get_string("done", 100ms) == std::to_string(kClients));
  }

  TEST_CASE("tcp: clients may start before the server") {
    const int port = free_port();
    std::shared_ptr<Store> client;
    std::thread t([&] { client = make_tcp_store("127.0.0.1", port, false, 5000ms); });
    std::this_thread::sleep_for(200ms);
    auto server = make_tcp_store("127.0.0.1", port, true, 5000ms);
    t.join();
    REQUIRE(client);
    client->set_string("k", "v");
    CHECK(server->get_string("k", 1000ms) == "v");
  }

  TEST_CASE("tcp: errors say where and why") {
    const int port = free_port();
    const std::string e = error_of([&] { make_tcp_store("127.0.0.1", port, false, 200ms); });
    CHECK(e.find("cannot connect within 200 ms") != std::string::npos);
    CHECK(e.find("tcp://127.0.0.1:" + std::to_string(port)) != std::string::npos);
    auto server = make_tcp_store("127.0.0.1", 0, true, 1000ms);
    const std::string addr = server->address();
    const int used = std::atoi(addr.substr(addr.rfind(':') + 1).c_str());
    const std::string busy = error_of([&] { make_tcp_store("127.0.0.1", used, true, 200ms); });
    CHECK(busy.find("cannot serve on 127.0.0.1:" + std::to_string(used)) != std::string::npos);
    const std::string host = error_of([&] { make_tcp_store("no-such-host.invalid", 1, false, 100ms); });
    CHECK(host.find("cannot resolve 'no-such-host.invalid'") != std::string::npos);
  }

  TEST_CASE("tcp: a client whose server went away fails fast") {
    auto server = make_tcp_store("127.0.0.1", 0, true, 1000ms);
    const std::string addr = server->address();
    const int port = std::atoi(addr.substr(addr.rfind(':') + 1).c_str());
    auto client = make_tcp_store("127.0.0.1", port, false, 1000ms);
    client->set_string("a", "1");
    server.reset();
    const auto t0 = std::chrono::steady_clock::now();
    const std::string e = error_of([&] { client->get("b", 10000ms); });
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);
    CHECK(e.find(addr) != std::string::npos);
  }

  TEST_CASE("file: add is atomic across processes") {
    const std::string dir = temp_dir();
    auto s = make_file_store(dir);
    constexpr int kProcs = 3, kAdds = 40;
    std::vector<pid_t> kids;
    for (int p = 0; p < kProcs; ++p) {
      const pid_t pid = ::fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        int code = 0;
        try {
          auto mine = make_file_store(dir);
          for (int i = 0; i < kAdds; ++i) mine->add("n", 1);
        } catch (...) {
          code = 1;
        }
        ::_exit(code);
      }
      kids.push_back(pid);
    }
    for (int i = 0; i < kAdds; ++i) s->add("n", 1);
    for (pid_t k : kids) {
      int st = 0;
      ::waitpid(k, &st, 0);
      CHECK((WIFEXITED(st) && WEXITSTATUS(st) == 0));
    }
    CHECK(s->get_string("n", 100ms) == std::to_string((kProcs + 1) * kAdds));
  }

  TEST_CASE("prefix: keys of different prefixes do not meet") {
    auto base = make_memory_store();
    auto a = make_prefix_store(base, "a");
    auto b = make_prefix_store(base, "b");
    a->set_string("k", "from a");
    b->set_string("k", "from b");
    CHECK(a->get_string("k", 10ms) == "from a");
    CHECK(b->get_string("k", 10ms) == "from b");
    CHECK(base->get_string("a/k", 10ms) == "from a");
    CHECK_FALSE(b->check({"only-a"}));
    a->set_string("only-a", "1");
    CHECK_FALSE(b->check({"only-a"}));
  }
}
