// End to end: PyTorch's MNIST example CNN built from cohort's layers (conv 1->32 3x3, ReLU,
// conv 32->64 3x3, ReLU, max-pool 2, dropout .25, flatten, fc 9216->128, ReLU, dropout .5,
// fc 128->10, log-softmax, NLL). Forward/backward on a batch of 8 random images, then plain SGD
// steps written out with ops::axpy must lower the loss on that fixed batch; summary() is checked
// line by line.
#include "layer_testing.hpp"

namespace nn = cohort::nn;
using cohort::Shape;
using cohort::Tensor;

namespace {

std::shared_ptr<nn::Sequential> mnist_net(cohort::Device& d) {
  return nn::make<nn::Sequential>(std::vector<std::pair<std::string, nn::ModulePtr>>{
      {"conv1", nn::make<nn::Conv2d>(nn::Conv2dOptions(1, 32, 3), d)},
      {"relu1", nn::make<nn::ReLU>()},
      {"conv2", nn::make<nn::Conv2d>(nn::Conv2dOptions(32, 64, 3), d)},
      {"relu2", nn::make<nn::ReLU>()},
      {"pool", nn::make<nn::MaxPool2d>(nn::MaxPool2dOptions(2))},
      {"dropout1", nn::make<nn::Dropout>(0.25f)},
      {"flatten", nn::make<nn::Flatten>()},
      {"fc1", nn::make<nn::Linear>(9216, 128, d)},
      {"relu3", nn::make<nn::ReLU>()},
      {"dropout2", nn::make<nn::Dropout>(0.5f)},
      {"fc2", nn::make<nn::Linear>(128, 10, d)},
      {"log_softmax", nn::make<nn::LogSoftmax>(1)}});
}

}  // namespace

TEST_SUITE("mnist") {

TEST_CASE("the MNIST CNN trains on a fixed batch with hand-written SGD") {
  cohort::Device& d = lt::host();
  nn::manual_seed(2024);
  auto net = mnist_net(d);
  nn::NLLLoss criterion;
  const Tensor images = Tensor::normal({8, 1, 28, 28}, 0.0f, 1.0f, 100, d);
  const Tensor labels = lt::labels(8, 10, 101);

  // Parameter names as PyTorch's example Net.
  std::vector<std::string> names;
  for (const auto& np : net->named_parameters()) names.push_back(np.name);
  CHECK(names == std::vector<std::string>{"conv1.weight", "conv1.bias", "conv2.weight",
                                          "conv2.bias", "fc1.weight", "fc1.bias", "fc2.weight",
                                          "fc2.bias"});
  CHECK(net->num_parameters() == 1199882);

  // The loss without dropout's noise: evaluation mode.
  auto eval_loss = [&] {
    net->eval();
    criterion.forward(net->forward(images), labels);
    criterion.backward();  // pair the forward (the gradient is not used)
    net->train();
    return criterion.value();
  };
  const float before = eval_loss();
  CHECK(before == doctest::Approx(std::log(10.0)).epsilon(0.1));  // about uniform at init

  std::string trace;
  const float lr = 0.05f;
  for (int step = 0; step < 10; ++step) {  // training mode: dropout on
    net->zero_grad();
    const Tensor logp = net->forward(images);
    REQUIRE(logp.shape() == Shape{8, 10});
    criterion.forward(logp, labels);
    trace += std::to_string(criterion.value()) + " ";
    const Tensor dx = net->backward(criterion.backward(), /*need_input_grad=*/false);
    CHECK_FALSE(dx.defined());
    for (const auto& p : net->parameters()) cohort::ops::axpy(-lr, p->grad, p->value);
  }
  const float after = eval_loss();
  MESSAGE("training losses: " << trace << "; evaluation loss " << before << " -> " << after);
  CHECK(after < 0.5f * before);

  // Evaluation mode is deterministic, and the trained batch is now mostly right.
  net->eval();
  const Tensor a = net->forward(images), b = net->forward(images);
  CHECK(a.to_vector<float>() == b.to_vector<float>());
  Tensor pred = Tensor::empty({8}, cohort::DType::i64, d);
  cohort::ops::argmax(a, pred);
  int correct = 0;
  const auto pv = pred.to_vector<std::int64_t>(), lv = labels.to_vector<std::int64_t>();
  for (int i = 0; i < 8; ++i) correct += pv[i] == lv[i];
  CHECK(correct >= 5);  // chance is about 1 in 8
}

TEST_CASE("the MNIST CNN's summary") {
  nn::manual_seed(1);
  auto net = mnist_net(lt::host());
  const std::string want =
      "Layer (type)              Output shape        Param #\n"
      "=====================================================\n"
      "conv1 (Conv2d)            [64, 32, 26, 26]        320\n"
      "relu1 (ReLU)              [64, 32, 26, 26]          0\n"
      "conv2 (Conv2d)            [64, 64, 24, 24]     18,496\n"
      "relu2 (ReLU)              [64, 64, 24, 24]          0\n"
      "pool (MaxPool2d)          [64, 64, 12, 12]          0\n"
      "dropout1 (Dropout)        [64, 64, 12, 12]          0\n"
      "flatten (Flatten)         [64, 9216]                0\n"
      "fc1 (Linear)              [64, 128]         1,179,776\n"
      "relu3 (ReLU)              [64, 128]                 0\n"
      "dropout2 (Dropout)        [64, 128]                 0\n"
      "fc2 (Linear)              [64, 10]              1,290\n"
      "log_softmax (LogSoftmax)  [64, 10]                  0\n"
      "=====================================================\n"
      "Input: [64, 1, 28, 28]\n"
      "Total params: 1,199,882\n"
      "Trainable params: 1,199,882\n"
      "Non-trainable params: 0\n";
  CHECK(net->summary(Shape{64, 1, 28, 28}) == want);
}

}  // TEST_SUITE
