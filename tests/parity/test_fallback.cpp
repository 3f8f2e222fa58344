// The host fallback of the op front ends (cohort/backend/dispatch.hpp): a device that supports only
// part of the op table (partial_device.hpp) still trains the MNIST CNN, bit for bit as the host
// does, and only the ops and cases it denies are counted as fallbacks.
#include <doctest/doctest.h>

#include <vector>

#include "cohort/backend/dispatch.hpp"
#include "cohort/core/ops.hpp"
#include "cohort/layers.hpp"
#include "cohort/models/mnist.hpp"
#include "cohort/optim.hpp"
#include "partial_device.hpp"

using namespace cohort;
namespace nn = cohort::nn;

namespace {

// Three Adadelta steps of the MNIST CNN on fixed random data; the final state_dict on the host.
std::vector<std::vector<float>> train(Device& dev) {
  nn::manual_seed(11);
  auto net = models::mnist_net(dev);
  optim::Adadelta opt(net->parameters());
  nn::NLLLoss loss;
  for (int step = 0; step < 3; ++step) {
    const Tensor x = Tensor::normal({4, 1, 28, 28}, 0.0f, 1.0f, 100 + step, host_device()).to(dev);
    const Tensor y =
        Tensor::from_vector<std::int64_t>({1, 7, 3, 0}, {4}, host_device()).to(dev);
    opt.zero_grad();
    loss.forward(net->forward(x), y);
    net->backward(loss.backward(), false);
    opt.step();
  }
  std::vector<std::vector<float>> out;
  for (const auto& e : net->state_dict())
    out.push_back(e.tensor.to(host_device()).to_vector<float>());
  return out;
}

}  // namespace

TEST_CASE("partial device: supports() answers per case, not per op") {
  Device& p = testing::partial_device();
  calls::Gemm g;
  CHECK(p.supports(g));
  g.trans_a = true;
  CHECK_FALSE(p.supports(g));
  CHECK_FALSE(p.supports(calls::Conv2dForward{}));
  CHECK(p.supports(calls::Fill{}));
}

TEST_CASE("a device with part of the op table trains the MNIST CNN to the host's result") {
  const auto before = [](Op op) { return dispatch::fallback_count(op); };
  const std::uint64_t conv0 = before(Op::conv2d_forward), gemm0 = before(Op::gemm),
                      ada0 = before(Op::adadelta_step), pool0 = before(Op::pool2d_backward),
                      nll0 = before(Op::nll_forward), drop0 = before(Op::dropout_forward),
                      sm0 = before(Op::softmax_forward);
  const auto on_host = train(host_device());
  CHECK(dispatch::fallback_count(Op::conv2d_forward) == conv0);  // the host needs no fallback
  const auto on_partial = train(testing::partial_device());
  REQUIRE(on_host.size() == on_partial.size());
  for (std::size_t i = 0; i < on_host.size(); ++i) CHECK(on_host[i] == on_partial[i]);
  // Denied ops and cases ran on the host; claimed ones did not.
  CHECK(dispatch::fallback_count(Op::conv2d_forward) - conv0 == 6);  // 2 convs x 3 steps
  CHECK(dispatch::fallback_count(Op::adadelta_step) - ada0 == 24);   // 8 tensors x 3 steps
  CHECK(dispatch::fallback_count(Op::pool2d_backward) - pool0 == 3);
  CHECK(dispatch::fallback_count(Op::softmax_forward) - sm0 == 3);   // log-softmax is denied
  CHECK(dispatch::fallback_count(Op::gemm) - gemm0 > 0);             // only the transposed-A case
  CHECK(dispatch::fallback_count(Op::nll_forward) == nll0);
  CHECK(dispatch::fallback_count(Op::dropout_forward) == drop0);
}

TEST_CASE("fallback results equal the host's for an op the device denies") {
  Device& p = testing::partial_device();
  const Tensor a = Tensor::uniform({3, 5}, -1, 1, 1, host_device());
  const Tensor b = Tensor::uniform({3, 4}, -1, 1, 2, host_device());
  const Tensor c_host = ops::matmul(a, b, true, false);                       // [5, 4]
  const Tensor c_part = ops::matmul(a.to(p), b.to(p), true, false);          // falls back
  CHECK(&c_part.device() == &p);
  CHECK(c_part.to(host_device()).to_vector<float>() == c_host.to_vector<float>());
}
