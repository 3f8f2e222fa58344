// Communicator buffers of the shm backend (Communicator::alloc_buffer): collective allocations
// that every rank maps from every other rank, so that an all-reduce reads the peers' data where
// it lies instead of copying it through the segment's slots (allreduce_pipelined.cpp).
//
// Life cycle of one allocation (the n-th alloc_buffer call has id n on every rank):
//   1. each rank creates "<segment name>-r<rank>-b<id>" (O_EXCL), sizes and maps it, and
//      publishes buf_created = id in its RankCtl;
//   2. once every peer has, it opens and maps each peer's file and publishes buf_mapped = id;
//   3. once every peer has, it unlinks its own name.
// As with the segment, the memory then lives exactly as long as some process maps it, so neither
// a clean exit nor a crash leaves litter, except a crash between 1 and 3: that name starts with
// the segment's "/cohort-<job>-", which cohortrun removes when a job ends. While a rank waits, it
// keeps its pending ops moving (a peer may wait in one of them before it reaches alloc_buffer).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cohort/core/error.hpp"
#include "detail/backoff.hpp"
#include "detail/format.hpp"
#include "shm/engine.hpp"

namespace cohort::comm::shm {

// The handle: this rank's own mapping; dropping it unmaps every rank's buffer of the allocation
// here (the peers keep theirs).
class ShmBuffer final : public CommBuffer {
 public:
  ShmBuffer(std::shared_ptr<Engine> e, std::uint64_t id, void* p, std::size_t bytes)
      : eng_(std::move(e)), id_(id), p_(p), bytes_(bytes) {}
  ~ShmBuffer() override {
    std::lock_guard<std::mutex> lock(eng_->mu_);
    auto& v = eng_->buffers_;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (it->id != id_) continue;
      for (std::size_t q = 0; q < it->base.size(); ++q)
        if (it->base[q] != nullptr) ::munmap(it->base[q], it->bytes[q]);
      v.erase(it);
      break;
    }
  }
  void* data() const override { return p_; }
  std::size_t bytes() const override { return bytes_; }

 private:
  std::shared_ptr<Engine> eng_;
  const std::uint64_t id_;
  void* const p_;
  const std::size_t bytes_;
};

namespace {

std::string buffer_name(const std::string& segment, int rank, std::uint64_t id) {
  return segment + "-r" + std::to_string(rank) + "-b" + std::to_string(id);
}

// Maps `bytes` of the shared file `fd` (closed here), or returns nullptr with errno set.
char* map_fd(int fd, std::size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  ::close(fd);
  errno = err;
  return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
}

}  // namespace

std::unique_ptr<CommBuffer> Engine::alloc_buffer(std::size_t bytes, Timeout timeout) {
  const Timeout t = resolve(timeout);
  const auto deadline = std::chrono::steady_clock::now() + t;
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t mapped = (std::max<std::size_t>(bytes, 1) + page - 1) / page * page;

  Mapped m;
  m.base.assign(static_cast<std::size_t>(world), nullptr);
  m.bytes.assign(static_cast<std::size_t>(world), 0);
  std::string mine;
  auto unmap_all = [&m] {
    for (std::size_t q = 0; q < m.base.size(); ++q)
      if (m.base[q] != nullptr) ::munmap(m.base[q], m.bytes[q]);
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_) throw_failure();
    m.id = ++buffers_made_;
    mine = buffer_name(seg_->name(), rank, m.id);
    const int fd = ::shm_open(mine.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    COHORT_CHECK_IN("shm", fd >= 0, "alloc_buffer: cannot create ", mine, ": ",
                    std::strerror(errno));
    if (::ftruncate(fd, static_cast<off_t>(mapped)) != 0) {
      const int err = errno;
      ::close(fd);
      ::shm_unlink(mine.c_str());
      COHORT_FAIL("shm: alloc_buffer: cannot size ", mine, " to ", mapped, " bytes: ",
                  std::strerror(err), " (is /dev/shm large enough?)");
    }
    char* p = map_fd(fd, mapped);
    if (p == nullptr) {
      const int err = errno;
      ::shm_unlink(mine.c_str());
      COHORT_FAIL("shm: alloc_buffer: cannot map ", mine, ": ", std::strerror(err));
    }
    m.base[static_cast<std::size_t>(rank)] = p;
    m.bytes[static_cast<std::size_t>(rank)] = mapped;
    seg_->ctl(rank).buf_created.store(m.id, std::memory_order_release);
  }

  // Waits until every peer's `field` reached m.id, moving pending ops meanwhile.
  auto await = [&](std::atomic<std::uint64_t> RankCtl::*field, const char* what) {
    detail::Backoff backoff(oversubscribed_);
    for (;;) {
      std::vector<int> missing;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (failed_) throw_failure();
        progress_locked();
        check_time_locked();
        for (int q = 0; q < world; ++q)
          if (q != rank && (seg_->ctl(q).*field).load(std::memory_order_acquire) < m.id)
            missing.push_back(q);
        if (missing.empty()) return;
        // The ranks' allocation counts now disagree for good: like a failed op, this fails the
        // communicator (and tells the peers).
        const int dead = exited_peer(missing);
        if (dead >= 0)
          fail_locked("alloc_buffer #" + std::to_string(m.id) + " on rank " +
                      std::to_string(rank) + ": rank " + std::to_string(dead) +
                      " exited before it " + what);
        if (std::chrono::steady_clock::now() >= deadline)
          fail_locked("alloc_buffer #" + std::to_string(m.id) + " on rank " +
                      std::to_string(rank) + " timed out after " + detail::format_timeout(t) +
                      ": " + detail::format_ranks(missing) + " did not " + what +
                      " (every rank must call alloc_buffer the same number of times)");
      }
      backoff.pause();
    }
  };
  try {
    await(&RankCtl::buf_created, "create its buffer");
    for (int q = 0; q < world; ++q) {
      if (q == rank) continue;
      const std::string name = buffer_name(seg_->name(), q, m.id);
      const int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
      COHORT_CHECK_IN("shm", fd >= 0, "alloc_buffer: cannot open rank ", q, "'s buffer ", name,
                      ": ", std::strerror(errno));
      struct stat st;
      if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        COHORT_FAIL("shm: alloc_buffer: cannot stat ", name, ": ", std::strerror(err));
      }
      const auto size = static_cast<std::size_t>(st.st_size);
      char* p = size == 0 ? nullptr : map_fd(fd, size);
      if (size == 0) ::close(fd);
      COHORT_CHECK_IN("shm", p != nullptr, "alloc_buffer: cannot map rank ", q, "'s buffer ",
                      name, " (", size, " bytes): ", std::strerror(errno));
      m.base[static_cast<std::size_t>(q)] = p;
      m.bytes[static_cast<std::size_t>(q)] = size;
    }
    seg_->ctl(rank).buf_mapped.store(m.id, std::memory_order_release);
    await(&RankCtl::buf_mapped, "map this rank's buffer");
  } catch (...) {
    ::shm_unlink(mine.c_str());
    unmap_all();
    throw;
  }
  ::shm_unlink(mine.c_str());

  char* p = m.base[static_cast<std::size_t>(rank)];
  std::lock_guard<std::mutex> lock(mu_);
  buffers_.push_back(std::move(m));
  return std::make_unique<ShmBuffer>(shared_from_this(), buffers_.back().id, p, bytes);
}

bool Engine::find_buffer(const void* p, std::size_t bytes, std::uint64_t* id,
                         std::uint64_t* off) const {
  const char* c = static_cast<const char*>(p);
  for (const Mapped& m : buffers_) {
    const char* base = m.base[static_cast<std::size_t>(rank)];
    const std::size_t size = m.bytes[static_cast<std::size_t>(rank)];
    if (c >= base && c < base + size && bytes <= static_cast<std::size_t>(base + size - c)) {
      *id = m.id;
      *off = static_cast<std::uint64_t>(c - base);
      return true;
    }
  }
  return false;
}

const char* Engine::buffer_of(int q, std::uint64_t id, std::uint64_t* bytes) const {
  for (const Mapped& m : buffers_)
    if (m.id == id) {
      *bytes = m.bytes[static_cast<std::size_t>(q)];
      return m.base[static_cast<std::size_t>(q)];
    }
  return nullptr;
}

}  // namespace cohort::comm::shm
