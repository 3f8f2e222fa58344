// The compressed reducers (DDPOptions::bf16_compression, f16_compression): half the bytes on the
// wire. The bucket is copied to the host, rounded to 16 bits, all-reduced as a 16-bit sum
// (backends combine in float and round back) and widened again. No error feedback.
//  - bf16 (8 significant bits, f32's range): rounded as it is, summed, then divided by n.
//  - f16 (11 significant bits, largest 65504): divided by n before the rounding, as PyTorch's
//    fp16_compress_hook does, so that the sum of n gradients stays within f16's range; a gradient
//    element beyond +-65504 * n becomes infinity (the step then goes non-finite, as in PyTorch).
#include "reducer.hpp"

#include <algorithm>
#include <cstdint>

#include "cohort/core/dtype.hpp"
#include "cohort/core/error.hpp"

namespace cohort::parallel::detail {
namespace {

class CompressedReducer final : public Reducer {
 public:
  CompressedReducer(comm::Communicator& comm, std::int64_t numel, DType wire)
      : comm_(comm),
        wire_(wire),
        host_(static_cast<std::size_t>(numel), 0.0f),
        packed_(static_cast<std::size_t>(numel), 0) {}

  const char* name() const override { return dtype_name(wire_); }

  comm::WorkHandle launch(const std::vector<Tensor>& grads) override {
    if (!grads.empty()) wait_for_compute(grads.front().device());
    gather_to_host(grads, host_.data());
    const std::size_t m = host_.size();
    const float* h = host_.data();
    std::uint16_t* p = packed_.data();
    if (wire_ == DType::f16) {
      const float inv = 1.0f / static_cast<float>(comm_.size());
      for (std::size_t i = 0; i < m; ++i) p[i] = float_to_f16(h[i] * inv);
    } else {
      for (std::size_t i = 0; i < m; ++i) p[i] = float_to_bf16(h[i]);
    }
    return comm_.allreduce(p, p, m, wire_, comm::ReduceOp::sum);
  }

  void complete(const std::vector<Tensor>& grads) override {
    const std::size_t m = host_.size();
    float* h = host_.data();
    const std::uint16_t* p = packed_.data();
    if (wire_ == DType::f16) {
      for (std::size_t i = 0; i < m; ++i) h[i] = f16_to_float(p[i]);
    } else {
      const auto n = static_cast<float>(comm_.size());
      for (std::size_t i = 0; i < m; ++i) h[i] = bf16_to_float(p[i]) / n;
    }
    scatter_from_host(host_.data(), grads);
  }

 private:
  comm::Communicator& comm_;
  const DType wire_;
  std::vector<float> host_;
  std::vector<std::uint16_t> packed_;
};

}  // namespace

std::unique_ptr<Reducer> make_compressed_reducer(comm::Communicator& comm, std::int64_t numel,
                                                 DType wire) {
  COHORT_CHECK(wire == DType::bf16 || wire == DType::f16,
               "DistributedDataParallel: gradient compression is bf16 or f16, not ",
               dtype_name(wire));
  const auto dt = comm.capabilities().dtypes;
  COHORT_CHECK(dt.empty() || std::find(dt.begin(), dt.end(), wire) != dt.end(),
               "DistributedDataParallel: ", dtype_name(wire),
               "_compression needs a communicator that reduces ", dtype_name(wire), "; '",
               comm.backend(), "' does not");
  return std::make_unique<CompressedReducer>(comm, numel, wire);
}

}  // namespace cohort::parallel::detail
