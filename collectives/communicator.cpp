// The Communicator interface's few shared definitions: reduce-op names and the default
// alloc_buffer (plain page-aligned host memory), for backends without memory of their own.
#include "cohort/collectives/communicator.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#include "cohort/core/error.hpp"

namespace cohort::comm {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::avg: return "avg";
    case ReduceOp::min: return "min";
    case ReduceOp::max: return "max";
  }
  return "?";
}

namespace {

// Whole pages of their own: HostStage page-locks these buffers (Device::register_host_memory,
// cudaHostRegister), and the driver locks whole pages, so two buffers sharing a page would make
// the second registration fail and that bucket's copies synchronous (review finding G12).
class PlainBuffer final : public CommBuffer {
 public:
  explicit PlainBuffer(std::size_t bytes) : bytes_(bytes) {
    const std::size_t page = page_size();
    const std::size_t n = (std::max<std::size_t>(bytes, 1) + page - 1) / page * page;
    p_ = std::aligned_alloc(page, n);
    COHORT_CHECK(p_ != nullptr, "alloc_buffer: out of memory allocating ", bytes, " bytes");
    std::memset(p_, 0, n);
  }
  ~PlainBuffer() override { std::free(p_); }
  void* data() const override { return p_; }
  std::size_t bytes() const override { return bytes_; }
  static std::size_t page_size() {
    const long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<std::size_t>(p) : 4096;
  }

 private:
  void* p_ = nullptr;
  std::size_t bytes_;
};

}  // namespace

std::unique_ptr<CommBuffer> alloc_plain_buffer(std::size_t bytes) {
  return std::make_unique<PlainBuffer>(bytes);
}

std::unique_ptr<CommBuffer> Communicator::alloc_buffer(std::size_t bytes, Timeout) {
  return alloc_plain_buffer(bytes);
}

}  // namespace cohort::comm
