// The rank's side of the run-status page (run_status.hpp): mapped once, on the first note, from
// the file COHORT_RUN_STATUS names (cohortrun creates it, zero-filled, one per rank and attempt).
#include "cohort/core/run_status.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace cohort::run_status {
namespace {

struct Mapped {
  Page* page = nullptr;
  std::mutex mu;  // several threads issue collectives (DDP's comm thread, the training thread)
  Mapped() {
    const char* path = std::getenv("COHORT_RUN_STATUS");
    if (!path || !*path) return;
    const int fd = ::open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return;  // a diagnostic aid: never a reason to fail the run
    void* p = MAP_FAILED;
    if (::ftruncate(fd, sizeof(Page)) == 0)
      p = ::mmap(nullptr, sizeof(Page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) return;
    page = static_cast<Page*>(p);
    page->step = page->resumed_step = page->checkpoint_step = page->checkpoint_writing = -1;
    page->resumed_ns = page->first_step_ns = 0;
    std::memcpy(page->magic, kMagic, sizeof(kMagic));
  }
};

Mapped& mapped() {
  static Mapped m;
  return m;
}

template <class F>
void update(F&& f) {
  Mapped& m = mapped();
  if (!m.page) return;
  std::lock_guard<std::mutex> lock(m.mu);
  f(*m.page);
}

void copy_name(char* dst, std::size_t cap, const char* src) {
  std::size_t i = 0;
  for (; src && src[i] && i + 1 < cap; ++i) dst[i] = src[i];
  dst[i] = '\0';
}

}  // namespace

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void note_step(std::int64_t global_step) {
  update([&](Page& p) {
    p.step = global_step;
    if (p.first_step_ns == 0) p.first_step_ns = now_ns();
  });
}

void note_resumed(std::int64_t step) {
  update([&](Page& p) {
    p.resumed_step = step;
    p.step = step;
    p.resumed_ns = now_ns();
  });
}

void note_checkpoint_writing(std::int64_t step) {
  update([&](Page& p) { p.checkpoint_writing = step; });
}

void note_checkpoint_written(std::int64_t step) {
  update([&](Page& p) {
    p.checkpoint_step = step;
    if (p.checkpoint_writing == step) p.checkpoint_writing = -1;
  });
}

void note_collective(const char* kind, std::size_t count, DType dtype) {
  update([&](Page& p) {
    ++p.collectives;
    p.collective_count = count;
    copy_name(p.collective_kind, sizeof p.collective_kind, kind);
    copy_name(p.collective_dtype, sizeof p.collective_dtype, dtype_name(dtype));
  });
}

}  // namespace cohort::run_status
