// The plain reducer: all-reduce(avg) in place on a flat f32 buffer, for communicators that can
// take the parameters' memory (shm and ucx on host memory; nccl or CUDA-aware ucx on GPU memory);
// the backend does the averaging.
//  - Host parameters: the buffer comes from Communicator::alloc_buffer, so that shm reduces from
//    the peers' buckets in place instead of copying them through its segment (docs/PARALLEL.md).
//  - Device parameters: the buffer is a tensor on that device; the device itself copies the
//    gradients in and out (no host round trip).
#include "reducer.hpp"

namespace cohort::parallel::detail {
namespace {

class PlainReducer final : public Reducer {
 public:
  PlainReducer(comm::Communicator& comm, Device& dev, std::int64_t numel)
      : comm_(comm), numel_(numel), dev_(dev) {
    if (dev.host_accessible())
      host_ = comm.alloc_buffer(static_cast<std::size_t>(numel) * sizeof(float));
    else
      flat_ = Tensor::zeros(Shape{numel}, DType::f32, dev);
  }

  const char* name() const override { return "plain"; }

  comm::WorkHandle launch(const std::vector<Tensor>& grads) override {
    if (host_) {
      wait_for_compute(dev_);
      gather_to_host(grads, flat());
    } else {
      std::int64_t off = 0;
      for (const Tensor& g : grads) {
        flat_.slice(off, off + g.numel()).copy_from(g.reshape({-1}));
        off += g.numel();
      }
      wait_for_compute(dev_);
    }
    return comm_.allreduce(flat(), flat(), static_cast<std::size_t>(numel_), DType::f32,
                           comm::ReduceOp::avg);
  }

  void complete(const std::vector<Tensor>& grads) override {
    if (host_) {
      scatter_from_host(flat(), grads);
      return;
    }
    std::int64_t off = 0;
    for (const Tensor& g : grads) {
      Tensor dst = g;  // shares storage
      dst.copy_from(flat_.slice(off, off + g.numel()));
      off += g.numel();
    }
  }

 private:
  float* flat() const {
    return host_ ? static_cast<float*>(host_->data()) : static_cast<float*>(flat_.raw());
  }

  comm::Communicator& comm_;
  const std::int64_t numel_;
  Device& dev_;
  std::unique_ptr<comm::CommBuffer> host_;  // host parameters
  Tensor flat_;                             // device parameters
};

}  // namespace

std::unique_ptr<Reducer> make_plain_reducer(comm::Communicator& comm, Device& dev,
                                            std::int64_t numel) {
  return std::make_unique<PlainReducer>(comm, dev, numel);
}

}  // namespace cohort::parallel::detail
