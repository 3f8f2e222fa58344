// The plain reducer: all-reduce(avg) in place on a flat f32 buffer that lives on the parameters'
// device, for communicators that can take that memory (shm and ucx on host memory; nccl or
// CUDA-aware ucx on GPU memory). Gradients are copied into the buffer and back by the device
// itself (no host round trip); the backend does the averaging.
#include "reducer.hpp"

namespace cohort::parallel::detail {
namespace {

class PlainReducer final : public Reducer {
 public:
  PlainReducer(comm::Communicator& comm, Device& dev, std::int64_t numel)
      : comm_(comm), flat_(Tensor::zeros(Shape{numel}, DType::f32, dev)) {}

  const char* name() const override { return "plain"; }

  comm::WorkHandle launch(const std::vector<Tensor>& grads) override {
    std::int64_t off = 0;
    for (const Tensor& g : grads) {
      flat_.slice(off, off + g.numel()).copy_from(g.reshape({-1}));
      off += g.numel();
    }
    wait_for_compute(flat_.device());
    return comm_.allreduce(flat_.raw(), flat_.raw(), static_cast<std::size_t>(flat_.numel()),
                           DType::f32, comm::ReduceOp::avg);
  }

  void complete(const std::vector<Tensor>& grads) override {
    std::int64_t off = 0;
    for (const Tensor& g : grads) {
      Tensor dst = g;  // shares storage
      dst.copy_from(flat_.slice(off, off + g.numel()));
      off += g.numel();
    }
  }

 private:
  comm::Communicator& comm_;
  Tensor flat_;
};

}  // namespace

std::unique_ptr<Reducer> make_plain_reducer(comm::Communicator& comm, Device& dev,
                                            std::int64_t numel) {
  return std::make_unique<PlainReducer>(comm, dev, numel);
}

}  // namespace cohort::parallel::detail
