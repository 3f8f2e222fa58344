// The file store: one file per key in a directory every rank sees (a shared file system on a
// cluster, /tmp on one host). set() writes a temporary file and renames it over the key, so
// readers see either no file or a whole value; add() serialises read-modify-write with an fcntl
// lock on "<dir>/.lock" (fcntl locks work across NFS clients) plus a process-wide mutex, since
// fcntl locks do not exclude threads of one process. Waiting polls with a backoff of 1 to 50 ms:
// the store is for rendezvous, not for the data path.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

#include "cohort/collectives/store.hpp"
#include "cohort/core/error.hpp"
#include "store/store_util.hpp"

namespace cohort::comm {
namespace {

using Clock = std::chrono::steady_clock;

void make_dirs(const std::string& dir) {
  std::string path;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    path = dir.substr(0, pos);
    if (path.empty()) continue;
    if (::mkdir(path.c_str(), 0777) != 0 && errno != EEXIST)
      COHORT_FAIL("file store: cannot create directory '", path, "': ", std::strerror(errno));
  }
}

class FileStore final : public Store {
 public:
  explicit FileStore(std::string dir) : dir_(std::move(dir)) {
    while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
    make_dirs(dir_);
    struct stat st;
    COHORT_CHECK(::stat(dir_.c_str(), &st) == 0 && S_ISDIR(st.st_mode), "file store: '", dir_,
                 "' is not a directory");
  }

  void set(const std::string& key, const std::vector<std::uint8_t>& value) override {
    write_atomic(path(key), value);
  }

  std::vector<std::uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) override {
    wait({key}, timeout);
    std::vector<std::uint8_t> v;
    COHORT_CHECK(read_file(path(key), &v), "store ", address(), ": key '", key,
                 "' vanished after it appeared: ", std::strerror(errno));
    return v;
  }

  std::int64_t add(const std::string& key, std::int64_t delta) override {
    // fcntl locks belong to the process, so threads (and other FileStore objects) of this process
    // are excluded by a process-wide mutex instead.
    static std::mutex process_mutex;
    std::lock_guard<std::mutex> guard(process_mutex);
    const std::string lock_path = dir_ + "/.lock";
    const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    COHORT_CHECK(fd >= 0, "store ", address(), ": cannot open '", lock_path, "': ",
                 std::strerror(errno));
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    int rc;
    while ((rc = ::fcntl(fd, F_SETLKW, &fl)) != 0 && errno == EINTR) {
    }
    if (rc != 0) {
      const int err = errno;
      ::close(fd);
      COHORT_FAIL("store ", address(), ": cannot lock '", lock_path, "': ", std::strerror(err));
    }
    std::int64_t v = delta;
    std::vector<std::uint8_t> cur;
    try {
      if (read_file(path(key), &cur)) v += detail::decode_counter(address(), key, cur);
      write_atomic(path(key), detail::encode_counter(v));
    } catch (...) {
      ::close(fd);  // closing drops the fcntl lock
      throw;
    }
    ::close(fd);
    return v;
  }

  bool check(const std::vector<std::string>& keys) override {
    for (const auto& k : keys)
      if (::access(path(k).c_str(), F_OK) != 0) return false;
    return true;
  }

  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    const auto deadline = Clock::now() + timeout;
    auto pause = std::chrono::milliseconds(1);
    while (!check(keys)) {
      if (Clock::now() >= deadline) {
        std::vector<std::string> missing;
        for (const auto& k : keys)
          if (::access(path(k).c_str(), F_OK) != 0) missing.push_back(k);
        detail::throw_store_timeout(address(), missing, timeout);
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(50));
    }
  }

  std::string address() const override { return "file://" + dir_; }

 private:
  // Keys may hold any bytes; file names keep [A-Za-z0-9_-] and escape the rest as %XX.
  std::string path(const std::string& key) const {
    static const char* hex = "0123456789ABCDEF";
    std::string name;
    for (unsigned char c : key) {
      if (std::isalnum(c) || c == '_' || c == '-') {
        name += static_cast<char>(c);
      } else {
        name += '%';
        name += hex[c >> 4];
        name += hex[c & 15];
      }
    }
    COHORT_CHECK(!name.empty() && name.size() <= 240, "store ", address(), ": key '",
                 key.substr(0, 60), "' is empty or too long for a file name");
    return dir_ + "/" + name;
  }

  static bool read_file(const std::string& p, std::vector<std::uint8_t>* out) {
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    out->clear();
    std::uint8_t buf[65536];
    for (;;) {
      const ssize_t k = ::read(fd, buf, sizeof(buf));
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) break;
      out->insert(out->end(), buf, buf + k);
    }
    ::close(fd);
    return true;
  }

  void write_atomic(const std::string& p, const std::vector<std::uint8_t>& value) {
    static std::atomic<unsigned> counter{0};
    const std::string tmp = dir_ + "/.tmp." + std::to_string(::getpid()) + "." +
                            std::to_string(counter.fetch_add(1));
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    COHORT_CHECK(fd >= 0, "store ", address(), ": cannot create '", tmp, "': ",
                 std::strerror(errno));
    std::size_t off = 0;
    while (off < value.size()) {
      const ssize_t k = ::write(fd, value.data() + off, value.size() - off);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) {
        const int err = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        COHORT_FAIL("store ", address(), ": cannot write '", tmp, "': ", std::strerror(err));
      }
      off += static_cast<std::size_t>(k);
    }
    ::close(fd);
    if (::rename(tmp.c_str(), p.c_str()) != 0) {
      const int err = errno;
      ::unlink(tmp.c_str());
      COHORT_FAIL("store ", address(), ": cannot rename '", tmp, "' to '", p, "': ",
                  std::strerror(err));
    }
  }

  std::string dir_;
};

}  // namespace

std::shared_ptr<Store> make_file_store(const std::string& directory) {
  COHORT_CHECK(!directory.empty(), "make_file_store: empty directory");
  return std::make_shared<FileStore>(directory);
}

}  // namespace cohort::comm
