// The compressed reducers (DDPOptions::bf16_compression, f16_compression): half the bytes on the
// wire. The bucket is a flat f32 tensor on the parameters' device (gradients may be views into
// it, as with the plain reducer); it is converted on that device to a 16-bit buffer (ops::cast),
// all-reduced as a 16-bit sum (backends combine in float and round back) and converted back.
// No error feedback.
//  - bf16 (8 significant bits, f32's range): rounded as it is, summed, then multiplied by 1/n.
//  - f16 (11 significant bits, largest 65504): multiplied by 1/n before the rounding, as PyTorch's
//    fp16_compress_hook does, so that the sum of n gradients stays within f16's range; a gradient
//    element beyond +-65504 * n becomes infinity (the step then goes non-finite, as in PyTorch).
// Where the 16-bit buffer lives: communicator-buffer memory for host parameters (shm reduces from
// the peers' buffers in place); a device tensor when the communicator takes device memory (nccl);
// otherwise a device tensor staged through a HostStage copy of its 16 bits (asynchronous, half the
// staging bytes of the host_staged reducer).
#include "reducer.hpp"
#include "reducers/bucket_buffer.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>

#include "cohort/core/dtype.hpp"
#include "cohort/core/error.hpp"
#include "cohort/core/ops.hpp"

namespace cohort::parallel::detail {
namespace {

class CompressedReducer final : public Reducer {
 public:
  CompressedReducer(comm::Communicator& comm, Device& dev, std::int64_t numel, DType wire)
      : comm_(comm), dev_(dev), numel_(numel), wire_(wire) {
    flat_ = Tensor::zeros(Shape{numel}, DType::f32, dev);
    const std::size_t bytes = static_cast<std::size_t>(numel) * dtype_size(wire);
    if (dev.host_accessible()) {
      std::shared_ptr<comm::CommBuffer> buf = comm.alloc_buffer(bytes);
      void* p = buf->data();
      packed_ = Tensor::wrap(p, Shape{numel}, wire, dev, std::move(buf));
    } else {
      packed_ = Tensor::zeros(Shape{numel}, wire, dev);
      if (!comm_can_use(comm, dev)) stage_ = std::make_unique<HostStage>(comm, dev, bytes);
    }
  }

  const char* name() const override { return dtype_name(wire_); }
  Tensor flat_bucket() const override { return flat_; }
  bool collective_issued() const override { return !stage_ || stage_->issued(); }

  comm::WorkHandle launch(const std::vector<Tensor>& grads) override {
    pack_into_bucket(grads, flat_);
    if (wire_ == DType::f16) ops::scale(1.0f / static_cast<float>(comm_.size()), flat_, flat_);
    ops::cast(flat_, packed_);
    if (stage_) {
      stage_->download(packed_.raw());
      return stage_->then([this] {
        return comm_.allreduce(stage_->data(), stage_->data(), static_cast<std::size_t>(numel_),
                               wire_, comm::ReduceOp::sum);
      });
    }
    wait_for_compute(comm_, dev_);
    return comm_.allreduce(packed_.raw(), packed_.raw(), static_cast<std::size_t>(numel_), wire_,
                           comm::ReduceOp::sum);
  }

  void complete(const std::vector<Tensor>& grads) override {
    if (stage_) stage_->upload(packed_.raw());
    ops::cast(packed_, flat_);
    if (wire_ == DType::bf16) ops::scale(1.0f / static_cast<float>(comm_.size()), flat_, flat_);
    unpack_from_bucket(flat_, grads);
  }

 private:
  comm::Communicator& comm_;
  Device& dev_;
  const std::int64_t numel_;
  const DType wire_;
  Tensor flat_;    // f32, the parameters' device
  Tensor packed_;  // 16-bit, the parameters' device (host: communicator-buffer memory)
  std::unique_ptr<HostStage> stage_;  // device parameters, host-only communicator
};

}  // namespace

std::unique_ptr<Reducer> make_compressed_reducer(comm::Communicator& comm, Device& dev,
                                                 std::int64_t numel, DType wire) {
  COHORT_CHECK(wire == DType::bf16 || wire == DType::f16,
               "DistributedDataParallel: gradient compression is bf16 or f16, not ",
               dtype_name(wire));
  const auto dt = comm.capabilities().dtypes;
  COHORT_CHECK(dt.empty() || std::find(dt.begin(), dt.end(), wire) != dt.end(),
               "DistributedDataParallel: ", dtype_name(wire),
               "_compression needs a communicator that reduces ", dtype_name(wire), "; '",
               comm.backend(), "' does not");
  return std::make_unique<CompressedReducer>(comm, dev, numel, wire);
}

}  // namespace cohort::parallel::detail
