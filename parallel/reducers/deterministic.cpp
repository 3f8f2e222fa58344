// The deterministic reducer (DDPOptions::deterministic): a fixed reduction order. The bucket (a
// flat f32 tensor on the parameters' device; gradients may be views into it) is all-gathered;
// every rank then sums the n copies in rank order 0..n-1 in f32 on the host and divides by n, so
// the result does not depend on the backend's reduction algorithm or the device, and is
// bit-identical on shm, ucx, nccl, host or GPU parameters. Costs n times the receive bytes of an
// all-reduce. Where the bucket lives and what is copied:
//  - host parameters: communicator-buffer memory, gathered straight from it, the sum written
//    back into it;
//  - device parameters, communicator without device memory (shm, ucx): a HostStage copy, gathered
//    on the host; the sum goes back with the stage's asynchronous upload;
//  - device parameters, communicator with device memory (nccl): gathered on the device, the n
//    copies read back (blocking) for the host sum, the result uploaded (blocking). A device-side
//    sum would need a division op to give the same bits as the host's `acc / n`.
#include <memory>

#include "cohort/core/error.hpp"
#include "reducer.hpp"
#include "reducers/bucket_buffer.hpp"

namespace cohort::parallel::detail {
namespace {

// out[i] = (in[0*count + i] + in[1*count + i] + ... + in[(n-1)*count + i]) / n, in that order.
// out may be in's first copy (each element is read before it is written).
void sum_in_rank_order(const float* in, int n, std::size_t count, float* out) {
  for (std::size_t i = 0; i < count; ++i) {
    float acc = in[i];
    for (int r = 1; r < n; ++r) acc += in[static_cast<std::size_t>(r) * count + i];
    out[i] = acc / static_cast<float>(n);
  }
}

class DeterministicReducer final : public Reducer {
 public:
  DeterministicReducer(comm::Communicator& comm, Device& dev, std::int64_t numel)
      : comm_(comm),
        dev_(dev),
        count_(static_cast<std::size_t>(numel)),
        gathered_(count_ * static_cast<std::size_t>(comm.size()), 0.0f) {
    if (dev.host_accessible()) {
      std::shared_ptr<comm::CommBuffer> buf = comm.alloc_buffer(count_ * sizeof(float));
      void* p = buf->data();
      flat_ = Tensor::wrap(p, Shape{numel}, DType::f32, dev, std::move(buf));
      return;
    }
    flat_ = Tensor::zeros(Shape{numel}, DType::f32, dev);
    if (comm_can_use(comm, dev))
      gathered_dev_ = Tensor::zeros(Shape{numel * comm.size()}, DType::f32, dev);
    else
      stage_ = std::make_unique<HostStage>(comm, dev, count_ * sizeof(float));
  }

  const char* name() const override { return "deterministic"; }
  Tensor flat_bucket() const override { return flat_; }
  bool collective_issued() const override { return !stage_ || stage_->issued(); }

  comm::WorkHandle launch(const std::vector<Tensor>& grads) override {
    pack_into_bucket(grads, flat_);
    if (stage_) {
      stage_->download(flat_.raw());
      return stage_->then(
          [this] { return comm_.allgather(stage_->data(), gathered_.data(), count_, DType::f32); });
    }
    wait_for_compute(comm_, dev_);
    void* into = gathered_dev_.defined() ? gathered_dev_.raw() : gathered_.data();
    return comm_.allgather(flat_.raw(), into, count_, DType::f32);
  }

  void complete(const std::vector<Tensor>& grads) override {
    const int n = comm_.size();
    if (stage_) {
      sum_in_rank_order(gathered_.data(), n, count_, static_cast<float*>(stage_->data()));
      stage_->upload(flat_.raw());
    } else if (gathered_dev_.defined()) {
      dev_.copy_to_host(gathered_.data(), gathered_dev_.raw(), gathered_dev_.nbytes());
      sum_in_rank_order(gathered_.data(), n, count_, gathered_.data());
      dev_.copy_from_host(flat_.raw(), gathered_.data(), count_ * sizeof(float));
    } else {
      sum_in_rank_order(gathered_.data(), n, count_, static_cast<float*>(flat_.raw()));
    }
    unpack_from_bucket(flat_, grads);
  }

 private:
  comm::Communicator& comm_;
  Device& dev_;
  const std::size_t count_;
  std::vector<float> gathered_;  // host, n copies in rank order
  Tensor flat_;                  // f32, the parameters' device
  Tensor gathered_dev_;          // device parameters, communicator with device memory
  std::unique_ptr<HostStage> stage_;  // device parameters, host-only communicator
};

}  // namespace

std::unique_ptr<Reducer> make_deterministic_reducer(comm::Communicator& comm, Device& dev,
                                                    std::int64_t numel) {
  return std::make_unique<DeterministicReducer>(comm, dev, numel);
}

}  // namespace cohort::parallel::detail
