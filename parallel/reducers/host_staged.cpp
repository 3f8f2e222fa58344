// The host-staged reducer: for parameters in memory the communicator cannot take (GPU memory with
// a host-only backend such as shm or ucx). The bucket is a flat f32 tensor on the parameters'
// device (gradients may be views into it, as with the plain reducer); a HostStage copies it to
// page-locked communicator memory on a stream of its own, the all-reduce(avg) runs there once the
// copy has landed, and the average goes back on the compute stream. The host never waits for the
// device: backward keeps being enqueued while buckets download, and the optimizer step is
// ordered after the upload by the compute stream.
#include <memory>

#include "reducer.hpp"
#include "reducers/bucket_buffer.hpp"

namespace cohort::parallel::detail {
namespace {

class HostStagedReducer final : public Reducer {
 public:
  HostStagedReducer(comm::Communicator& comm, Device& dev, std::int64_t numel)
      : comm_(comm),
        numel_(static_cast<std::size_t>(numel)),
        flat_(Tensor::zeros(Shape{numel}, DType::f32, dev)),
        stage_(comm, dev, numel_ * sizeof(float)) {}

  const char* name() const override { return "host_staged"; }
  Tensor flat_bucket() const override { return flat_; }
  bool collective_issued() const override { return stage_.issued(); }

  comm::WorkHandle launch(const std::vector<Tensor>& grads) override {
    pack_into_bucket(grads, flat_);
    stage_.download(flat_.raw());
    return stage_.then([this] {
      return comm_.allreduce(stage_.data(), stage_.data(), numel_, DType::f32,
                             comm::ReduceOp::avg);
    });
  }

  void complete(const std::vector<Tensor>& grads) override {
    stage_.upload(flat_.raw());
    unpack_from_bucket(flat_, grads);
  }

 private:
  comm::Communicator& comm_;
  const std::size_t numel_;
  Tensor flat_;  // f32, the parameters' device
  HostStage stage_;
};

}  // namespace

std::unique_ptr<Reducer> make_host_staged_reducer(comm::Communicator& comm, Device& dev,
                                                  std::int64_t numel) {
  return std::make_unique<HostStagedReducer>(comm, dev, numel);
}

}  // namespace cohort::parallel::detail
