// What the DDP test files share (test_ddp.cpp, test_ddp_device.cpp): the small model, the
// synthetic global batch and each rank's share of it, one SGD training loop, and CountingComm, a
// communicator wrapper that counts collectives and can act as nccl does towards its callers
// (device memory only, on the lazy-stream test device). Inline, so both files use one copy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cohort/collectives/communicator.hpp"
#include "cohort/core/error.hpp"
#include "cohort/data/synthetic.hpp"
#include "cohort/layers.hpp"
#include "cohort/optim.hpp"
#include "cohort/parallel/ddp.hpp"
#include "../common/lazy_stream_device.hpp"
#include "ddp_test.hpp"

namespace ddp_test {
inline constexpr std::int64_t kGlobalBatch = 64;
inline constexpr int kSteps = 20;
inline constexpr double kLr = 0.1;

inline cohort::nn::ModulePtr small_net(std::uint64_t seed, std::int64_t fc_out = 10,
                                       cohort::Device& dev = test_device()) {
  namespace nn = cohort::nn;
  nn::manual_seed(seed);
  return nn::make<nn::Sequential>(std::vector<std::pair<std::string, nn::ModulePtr>>{
      {"conv", nn::make<nn::Conv2d>(nn::Conv2dOptions(1, 4, 3), dev)},
      {"relu", nn::make<nn::ReLU>()},
      {"pool", nn::make<nn::MaxPool2d>(nn::MaxPool2dOptions(2))},
      {"flatten", nn::make<nn::Flatten>()},
      {"fc", nn::make<nn::Linear>(36, fc_out, dev)},
      {"logp", nn::make<nn::LogSoftmax>(1)}});
}

struct Batch {
  cohort::Tensor x, y;
};
// Samples [begin, end) of the step's global batch.
inline Batch batch(const cohort::data::SyntheticDataset& ds, int step, std::int64_t begin,
            std::int64_t end, cohort::Device& dev = test_device()) {
  const std::int64_t n = end - begin, per = ds.sample_shape().numel();
  std::vector<float> x(static_cast<std::size_t>(n * per));
  std::vector<std::int64_t> y(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    y[static_cast<std::size_t>(i)] =
        ds.get((step * kGlobalBatch + begin + i) % ds.size(), x.data() + i * per);
  return {cohort::Tensor::from_vector(x, cohort::Shape{n, 1, 8, 8}, dev),
          cohort::Tensor::from_vector(y, cohort::Shape{n}, dev)};
}

inline const cohort::data::SyntheticDataset& dataset() {
  static cohort::data::SyntheticDataset ds(kGlobalBatch * kSteps, cohort::Shape{1, 8, 8}, 10, 5);
  return ds;
}

inline cohort::optim::SGDOptions sgd() {
  cohort::optim::SGDOptions o;
  o.lr = kLr;
  return o;
}

// One forward + backward of `m` on `b` with the loss scaled by `scale`.
// The loss is not read back (set_check_finite(false)), so a device's readbacks count only what
// DDP does.
inline void forward_backward(cohort::nn::Module& m, const Batch& b, float scale = 1.0f) {
  cohort::nn::NLLLoss loss;
  loss.set_check_finite(false);
  loss.forward(m.forward(b.x), b.y);
  m.backward(loss.backward(scale), false);
}

// `steps` data-parallel steps: this rank takes its share of each global batch. The DDP module is
// used exactly like a model: its backward returns with averaged gradients.
inline void train_ddp(cohort::parallel::DistributedDataParallel& ddp, int steps,
               cohort::Device& dev = test_device()) {
  auto& c = ddp.communicator();
  const std::int64_t per = kGlobalBatch / c.size(), begin = c.rank() * per;
  cohort::optim::SGD opt(ddp.parameters(), sgd());
  for (int s = 0; s < steps; ++s) {
    ddp.zero_grad();
    forward_backward(ddp, batch(dataset(), s, begin, begin + per, dev));
    opt.step();
  }
}

// Forwards to the job's communicator and counts the collectives issued through it.
class CountingComm final : public cohort::comm::Communicator {
 public:
  explicit CountingComm(std::shared_ptr<cohort::comm::Communicator> inner)
      : inner_(std::move(inner)) {}
  int broadcasts = 0, allreduces = 0, allgathers = 0;
  // Set: behaves as nccl does towards its callers. It takes only `device_only`'s memory (host
  // pointers are an error, as nccl's are) and orders itself after the compute stream; the job's
  // communicator underneath moves the bytes (the lazy device's memory is host memory).
  cohort::testing::LazyStreamDevice* device_only = nullptr;
  std::string backend() const override { return inner_->backend(); }
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  cohort::comm::Capabilities capabilities() const override {
    cohort::comm::Capabilities caps = inner_->capabilities();
    if (device_only) {
      caps.host_memory = false;
      caps.device_memory = caps.stream_ordered = true;
    }
    return caps;
  }
  cohort::comm::WorkHandle allreduce(const void* s, void* r, std::size_t n, cohort::DType d,
                                     cohort::comm::ReduceOp op, cohort::comm::Timeout t) override {
    ++allreduces;
    check("allreduce", s, n, d);
    check("allreduce", r, n, d);
    return inner_->allreduce(s, r, n, d, op, t);
  }
  cohort::comm::WorkHandle broadcast(void* b, std::size_t n, cohort::DType d, int root,
                                     cohort::comm::Timeout t) override {
    ++broadcasts;
    check("broadcast", b, n, d);
    return inner_->broadcast(b, n, d, root, t);
  }
  cohort::comm::WorkHandle allgather(const void* s, void* r, std::size_t n, cohort::DType d,
                                     cohort::comm::Timeout t) override {
    ++allgathers;
    check("allgather", s, n, d);
    check("allgather", r, n * static_cast<std::size_t>(size()), d);
    return inner_->allgather(s, r, n, d, t);
  }
  cohort::comm::WorkHandle reduce_scatter(const void* s, void* r, std::size_t n, cohort::DType d,
                                          cohort::comm::ReduceOp op,
                                          cohort::comm::Timeout t) override {
    return inner_->reduce_scatter(s, r, n, d, op, t);
  }
  cohort::comm::WorkHandle barrier(cohort::comm::Timeout t) override { return inner_->barrier(t); }
  cohort::comm::WorkHandle send(const void* b, std::size_t n, cohort::DType d, int peer, int tag,
                                cohort::comm::Timeout t) override {
    return inner_->send(b, n, d, peer, tag, t);
  }
  cohort::comm::WorkHandle recv(void* b, std::size_t n, cohort::DType d, int peer, int tag,
                                cohort::comm::Timeout t) override {
    return inner_->recv(b, n, d, peer, tag, t);
  }

 private:
  void check(const char* op, const void* p, std::size_t n, cohort::DType d) const {
    if (device_only && n > 0)
      COHORT_CHECK(device_only->owns(p, n * cohort::dtype_size(d)), "device-only test ", op,
                   ": not device memory");
  }
  std::shared_ptr<cohort::comm::Communicator> inner_;
};

}  // namespace ddp_test
