// The ucx test harness (harness.hpp says what it offers): the in-memory and directory Stores and the
// process launcher.
#include "harness.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "cohort/core/error.hpp"
#include "ucx/ucx_communicator.hpp"

extern char** environ;

namespace ucxtest {
namespace {

using Clock = std::chrono::steady_clock;
using Bytes = std::vector<std::uint8_t>;

std::int64_t parse_int(const Bytes& v) {
  return v.empty() ? 0 : std::stoll(std::string(v.begin(), v.end()));
}
Bytes int_bytes(std::int64_t x) {
  const std::string s = std::to_string(x);
  return Bytes(s.begin(), s.end());
}

class MemoryStore final : public cohort::comm::Store {
 public:
  void set(const std::string& key, const Bytes& value) override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      kv_[key] = value;
    }
    cv_.notify_all();
  }
  Bytes get(const std::string& key, std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lk(mu_);
    if (!cv_.wait_for(lk, timeout, [&] { return kv_.count(key) != 0; }))
      COHORT_FAIL("test memory store: key '", key, "' not set within ", timeout.count(), " ms");
    return kv_[key];
  }
  std::int64_t add(const std::string& key, std::int64_t delta) override {
    std::int64_t v;
    {
      std::lock_guard<std::mutex> lk(mu_);
      v = parse_int(kv_[key]) + delta;
      kv_[key] = int_bytes(v);
    }
    cv_.notify_all();
    return v;
  }
  bool check(const std::vector<std::string>& keys) override {
    std::lock_guard<std::mutex> lk(mu_);
    for (const auto& k : keys)
      if (!kv_.count(k)) return false;
    return true;
  }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    for (const auto& k : keys) get(k, timeout);
  }
  std::string address() const override { return "memory (ucx test)"; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Bytes> kv_;
};

class DirectoryStore final : public cohort::comm::Store {
 public:
  explicit DirectoryStore(std::string dir) : dir_(std::move(dir)) {}

  void set(const std::string& key, const Bytes& value) override { write(path(key), value); }
  Bytes get(const std::string& key, std::chrono::milliseconds timeout) override {
    const auto limit = Clock::now() + timeout;
    for (;;) {
      Bytes v;
      if (read(path(key), &v)) return v;
      if (Clock::now() > limit)
        COHORT_FAIL("test directory store ", dir_, ": key '", key, "' not set within ",
                    timeout.count(), " ms");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  std::int64_t add(const std::string& key, std::int64_t delta) override {
    const int fd = ::open((dir_ + "/.lock").c_str(), O_CREAT | O_RDWR, 0600);
    COHORT_CHECK(fd >= 0, "cannot open ", dir_, "/.lock: ", std::strerror(errno));
    ::flock(fd, LOCK_EX);
    Bytes v;
    read(path(key), &v);
    const std::int64_t x = parse_int(v) + delta;
    write(path(key), int_bytes(x));
    ::flock(fd, LOCK_UN);
    ::close(fd);
    return x;
  }
  bool check(const std::vector<std::string>& keys) override {
    for (const auto& k : keys)
      if (::access(path(k).c_str(), F_OK) != 0) return false;
    return true;
  }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    for (const auto& k : keys) get(k, timeout);
  }
  std::string address() const override { return "file://" + dir_; }

 private:
  std::string path(const std::string& key) const {
    std::string f;
    for (char c : key)
      f += c == '/' ? std::string("%2F") : c == '%' ? std::string("%25") : std::string(1, c);
    return dir_ + "/" + f;
  }
  static bool read(const std::string& p, Bytes* out) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return false;
    out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return true;
  }
  static void write(const std::string& p, const Bytes& v) {
    const std::string tmp =
        p + ".tmp." + std::to_string(::getpid()) + "." +
        std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id()));
    {
      std::ofstream out(tmp, std::ios::binary);
      out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size()));
    }
    COHORT_CHECK(std::rename(tmp.c_str(), p.c_str()) == 0, "rename ", tmp, ": ",
                 std::strerror(errno));
  }
  std::string dir_;
};

}  // namespace

std::shared_ptr<cohort::comm::Store> memory_store() { return std::make_shared<MemoryStore>(); }
std::shared_ptr<cohort::comm::Store> directory_store(const std::string& dir) {
  return std::make_shared<DirectoryStore>(dir);
}

cohort::comm::ProcessGroupInfo group_info(int rank, int n) {
  cohort::comm::ProcessGroupInfo info;
  info.rank = rank;
  info.world_size = n;
  info.local_rank = rank;
  info.local_world_size = n;
  info.source = "test";
  return info;
}

std::vector<std::string> run_ranks(int n, const std::function<void(Communicator&)>& body) {
  auto store = memory_store();
  std::mutex mu;
  std::vector<std::string> failures;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto comm = cohort::comm::ucx::factory().create(group_info(r, n), store);
        body(*comm);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lk(mu);
        failures.push_back("rank " + std::to_string(r) + ": " + e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  return failures;
}

std::vector<int> run_processes(int n, const std::vector<std::string>& args,
                               std::chrono::seconds limit) {
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> a = {"/proc/self/exe"};
    a.insert(a.end(), args.begin(), args.end());
    a.push_back(std::to_string(r));
    std::vector<char*> argv;
    for (auto& s : a) argv.push_back(s.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    COHORT_CHECK(posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ) == 0,
                 "posix_spawn failed: ", std::strerror(errno));
    pids.push_back(pid);
  }
  std::vector<int> codes(static_cast<std::size_t>(n), -1);
  std::vector<bool> done(static_cast<std::size_t>(n), false);
  const auto deadline = Clock::now() + limit;
  int left = n;
  while (left > 0 && Clock::now() < deadline) {
    for (int r = 0; r < n; ++r) {
      if (done[static_cast<std::size_t>(r)]) continue;
      int status = 0;
      if (waitpid(pids[static_cast<std::size_t>(r)], &status, WNOHANG) > 0) {
        done[static_cast<std::size_t>(r)] = true;
        codes[static_cast<std::size_t>(r)] =
            WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        --left;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int r = 0; r < n; ++r) {
    if (done[static_cast<std::size_t>(r)]) continue;
    kill(pids[static_cast<std::size_t>(r)], SIGKILL);
    waitpid(pids[static_cast<std::size_t>(r)], nullptr, 0);
  }
  return codes;
}

// ---- typed data ----

bool is_float(DType dt) {
  return dt == DType::f32 || dt == DType::f64 || dt == DType::bf16 || dt == DType::f16;
}

double input_value(DType dt, int rank, std::size_t i, int salt) {
  // A cheap hash of (rank, i, salt): the big cases have millions of elements to check.
  std::uint64_t h = static_cast<std::uint64_t>(i) * 0x9e3779b97f4a7c15ull ^
                    (static_cast<std::uint64_t>(rank) + 1) * 0xc2b2ae3d27d4eb4full ^
                    static_cast<std::uint64_t>(salt) * 0x165667b19e3779f9ull;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 32;
  // Floats: not dyadic (the /3), so sums really round; magnitudes up to ~1.5.
  const double f = (static_cast<double>(h % 200001) - 100000.0) / 65536.0 / 3.0;
  switch (dt) {
    case DType::f32:
      return static_cast<float>(f);
    case DType::f64:
      return f;
    case DType::bf16:
      return cohort::bf16_to_float(cohort::float_to_bf16(static_cast<float>(f)));
    case DType::f16:
      return cohort::f16_to_float(cohort::float_to_f16(static_cast<float>(f)));
    case DType::i32:
      return static_cast<double>(static_cast<std::int64_t>(h % 200001) - 100000);
    // beyond 32 bits, exact in a double, no overflow over 4 ranks
    case DType::i64:
      return static_cast<double>(static_cast<std::int64_t>(h % (1ull << 40)) - (1ll << 39));
    case DType::u8:
      return static_cast<double>(h % 60);  // sums over 4 ranks stay below 256
  }
  return 0;
}

void store_value(DType dt, std::uint8_t* buf, std::size_t i, double v) {
  switch (dt) {
    case DType::f32: {
      const float x = static_cast<float>(v);
      std::memcpy(buf + 4 * i, &x, 4);
      return;
    }
    case DType::f64:
      std::memcpy(buf + 8 * i, &v, 8);
      return;
    case DType::bf16: {
      const std::uint16_t x = cohort::float_to_bf16(static_cast<float>(v));
      std::memcpy(buf + 2 * i, &x, 2);
      return;
    }
    case DType::f16: {
      const std::uint16_t x = cohort::float_to_f16(static_cast<float>(v));
      std::memcpy(buf + 2 * i, &x, 2);
      return;
    }
    case DType::i32: {
      const auto x = static_cast<std::int32_t>(v);
      std::memcpy(buf + 4 * i, &x, 4);
      return;
    }
    case DType::i64: {
      const auto x = static_cast<std::int64_t>(v);
      std::memcpy(buf + 8 * i, &x, 8);
      return;
    }
    case DType::u8:
      buf[i] = static_cast<std::uint8_t>(v);
      return;
  }
}

double load_value(DType dt, const std::uint8_t* buf, std::size_t i) {
  switch (dt) {
    case DType::f32: {
      float x;
      std::memcpy(&x, buf + 4 * i, 4);
      return x;
    }
    case DType::f64: {
      double x;
      std::memcpy(&x, buf + 8 * i, 8);
      return x;
    }
    case DType::bf16: {
      std::uint16_t x;
      std::memcpy(&x, buf + 2 * i, 2);
      return cohort::bf16_to_float(x);
    }
    case DType::f16: {
      std::uint16_t x;
      std::memcpy(&x, buf + 2 * i, 2);
      return cohort::f16_to_float(x);
    }
    case DType::i32: {
      std::int32_t x;
      std::memcpy(&x, buf + 4 * i, 4);
      return x;
    }
    case DType::i64: {
      std::int64_t x;
      std::memcpy(&x, buf + 8 * i, 8);
      return static_cast<double>(x);
    }
    case DType::u8:
      return buf[i];
  }
  return 0;
}

std::vector<std::uint8_t> make_input(DType dt, int rank, std::size_t count, int salt) {
  std::vector<std::uint8_t> v(count * cohort::dtype_size(dt) + 1);  // +1: never a null data()
  for (std::size_t i = 0; i < count; ++i)
    store_value(dt, v.data(), i, input_value(dt, rank, i, salt));
  return v;
}

std::string check_reduced(DType dt, ReduceOp op, int n, const std::uint8_t* got, std::size_t count,
                          std::size_t first, int salt) {
  const double eps = dt == DType::f32   ? std::ldexp(1.0, -24)
                     : dt == DType::f64 ? std::ldexp(1.0, -53)
                     : dt == DType::f16 ? std::ldexp(1.0, -11)
                                        : std::ldexp(1.0, -8);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t j = first + i;
    double ref = input_value(dt, 0, j, salt), sum_abs = std::fabs(ref);
    std::int64_t iref = static_cast<std::int64_t>(ref);
    for (int r = 1; r < n; ++r) {
      const double x = input_value(dt, r, j, salt);
      sum_abs += std::fabs(x);
      switch (op) {
        case ReduceOp::sum:
        case ReduceOp::avg:
          ref += x;
          iref += static_cast<std::int64_t>(x);
          break;
        case ReduceOp::min:
          ref = std::min(ref, x);
          iref = std::min(iref, static_cast<std::int64_t>(x));
          break;
        case ReduceOp::max:
          ref = std::max(ref, x);
          iref = std::max(iref, static_cast<std::int64_t>(x));
          break;
      }
    }
    const double g = load_value(dt, got, i);
    bool ok;
    if (!is_float(dt)) {
      if (op == ReduceOp::avg) iref /= n;  // truncating, like the backends
      ok = static_cast<std::int64_t>(g) == iref;
      ref = static_cast<double>(iref);
    } else if (op == ReduceOp::min || op == ReduceOp::max) {
      ok = g == ref;
    } else {
      double tol = eps * (n + 2) * sum_abs;
      if (op == ReduceOp::avg) {
        ref /= n;
        tol = tol / n + eps * std::fabs(ref);
      }
      ok = std::fabs(g - ref) <= tol;
    }
    if (!ok) {
      std::ostringstream os;
      os.precision(17);
      os << cohort::dtype_name(dt) << " " << cohort::comm::reduce_op_name(op) << " over " << n
         << " ranks: element " << j << " is " << g << ", expected " << ref;
      return os.str();
    }
  }
  return "";
}

}  // namespace ucxtest
