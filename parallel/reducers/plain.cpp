// The plain reducer: all-reduce(avg) in place on a flat f32 bucket on the parameters' device, for
// communicators that can take that memory (shm and ucx on host memory; nccl or CUDA-aware ucx on
// GPU memory); the backend does the averaging.
//  - Host parameters: the bucket is Communicator::alloc_buffer memory (wrapped as a tensor), so
//    that shm reduces from the peers' buckets in place instead of copying them through its
//    segment (docs/PARALLEL.md).
//  - Device parameters: the bucket is a tensor on that device.
// Gradients may be views into the bucket (DDPOptions::gradient_as_bucket_view: DDP points them
// there through flat_bucket()); those need no copy in or out. Any other gradient (a view that was
// replaced since) is copied in before and out after, on the device, so nothing is lost either way.
#include "reducer.hpp"
#include "reducers/bucket_buffer.hpp"

#include <utility>

namespace cohort::parallel::detail {
namespace {

class PlainReducer final : public Reducer {
 public:
  PlainReducer(comm::Communicator& comm, Device& dev, std::int64_t numel)
      : comm_(comm), numel_(numel), dev_(dev) {
    if (dev.host_accessible()) {
      std::shared_ptr<comm::CommBuffer> buf =
          comm.alloc_buffer(static_cast<std::size_t>(numel) * sizeof(float));
      void* p = buf->data();
      flat_ = Tensor::wrap(p, Shape{numel}, DType::f32, dev, std::move(buf));
    } else {
      flat_ = Tensor::zeros(Shape{numel}, DType::f32, dev);
    }
  }

  const char* name() const override { return "plain"; }
  Tensor flat_bucket() const override { return flat_; }

  comm::WorkHandle launch(const std::vector<Tensor>& grads) override {
    pack_into_bucket(grads, flat_);
    wait_for_compute(comm_, dev_);
    return comm_.allreduce(flat_.raw(), flat_.raw(), static_cast<std::size_t>(numel_),
                           DType::f32, comm::ReduceOp::avg);
  }

  void complete(const std::vector<Tensor>& grads) override {
    unpack_from_bucket(flat_, grads);
  }

 private:
  comm::Communicator& comm_;
  const std::int64_t numel_;
  Device& dev_;
  Tensor flat_;
};

}  // namespace

std::unique_ptr<Reducer> make_plain_reducer(comm::Communicator& comm, Device& dev,
                                            std::int64_t numel) {
  return std::make_unique<PlainReducer>(comm, dev, numel);
}

}  // namespace cohort::parallel::detail
