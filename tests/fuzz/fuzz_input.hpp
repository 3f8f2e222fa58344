// What every file-reader fuzz target shares: the input as a file (the readers take paths), and
// the rule that a reader may reject bad bytes only with cohort::Error, never by crashing,
// reading out of bounds (ASan) or any other exception.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "cohort/core/error.hpp"

namespace fuzz {

// An in-memory file holding `data`; path() names it for the reader. One per input.
class MemFile {
 public:
  MemFile(const std::uint8_t* data, std::size_t size) {
    fd_ = ::memfd_create("cohort-fuzz", MFD_CLOEXEC);
    if (fd_ < 0 || ::write(fd_, data, size) != static_cast<ssize_t>(size)) std::abort();
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { ::close(fd_); }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// Runs `read`; cohort::Error is the expected way to reject an input, anything else aborts (the
// fuzzer then saves the input as a crash).
template <class F>
void expect_clean(F&& read) {
  try {
    read();
  } catch (const cohort::Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reader threw a non-cohort exception: %s\n", e.what());
    std::abort();
  }
}

}  // namespace fuzz
