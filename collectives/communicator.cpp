#include "cohort/collectives/communicator.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

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

class PlainBuffer final : public CommBuffer {
 public:
  explicit PlainBuffer(std::size_t bytes) : bytes_(bytes) {
    const std::size_t n = (std::max<std::size_t>(bytes, 1) + 63) / 64 * 64;
    p_ = std::aligned_alloc(64, n);
    COHORT_CHECK(p_ != nullptr, "alloc_buffer: out of memory allocating ", bytes, " bytes");
    std::memset(p_, 0, n);
  }
  ~PlainBuffer() override { std::free(p_); }
  void* data() const override { return p_; }
  std::size_t bytes() const override { return bytes_; }

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
