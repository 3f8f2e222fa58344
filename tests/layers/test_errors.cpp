// Bad input is a clear error that names the layer (by its state_dict path) and the shapes; a NaN
// or infinite loss is an error that says where the non-finite value entered.
#include <cstdlib>

#include "layer_testing.hpp"

#include "../common/remote_device.hpp"

namespace nn = cohort::nn;
using cohort::DType;
using cohort::Shape;
using cohort::Tensor;
using lt::error_of;

namespace {

// A model with names, as the PyTorch MNIST example names its layers.
std::shared_ptr<nn::Sequential> mnist_head() {
  nn::manual_seed(5);
  return nn::make<nn::Sequential>(std::vector<std::pair<std::string, nn::ModulePtr>>{
      {"conv1", nn::make<nn::Conv2d>(nn::Conv2dOptions(1, 32, 3), lt::host())},
      {"relu1", nn::make<nn::ReLU>()},
      {"conv2", nn::make<nn::Conv2d>(nn::Conv2dOptions(32, 4, 3), lt::host())},
      {"flatten", nn::make<nn::Flatten>()},
      {"fc1", nn::make<nn::Linear>(4 * 24 * 24, 10, lt::host())}});
}

}  // namespace

TEST_SUITE("errors") {

TEST_CASE("wrong rank and channel count name the layer and the shapes") {
  auto net = mnist_head();
  const std::string rank = error_of([&] { net->forward(lt::uniform({64, 784}, 0, 1, 1)); });
  CHECK_MESSAGE(rank.find("Conv2d(conv1): expected 4-D input [N, 1, H, W], got [64, 784]") !=
                    std::string::npos,
                rank);
  const std::string channels =
      error_of([&] { net->forward(lt::uniform({2, 3, 28, 28}, 0, 1, 1)); });
  CHECK_MESSAGE(
      channels.find("Conv2d(conv1): expected 4-D input [N, 1, H, W], got [2, 3, 28, 28]") !=
          std::string::npos,
      channels);
  // Users read the message alone; with COHORT_DEBUG=1 the location follows, and it is the check
  // in the layer's source, not the container's.
  CHECK_MESSAGE(channels.find("conv2d.cpp") == std::string::npos, channels);
  setenv("COHORT_DEBUG", "1", 1);
  const std::string located =
      error_of([&] { net->forward(lt::uniform({2, 3, 28, 28}, 0, 1, 1)); });
  unsetenv("COHORT_DEBUG");
  CHECK_MESSAGE(located.find("[at layers/conv2d.cpp:") != std::string::npos, located);
}

TEST_CASE("a too-small input names the kernel and padding") {
  auto net = mnist_head();
  const std::string e = error_of([&] { net->forward(lt::uniform({1, 1, 4, 4}, 0, 1, 1)); });
  CHECK_MESSAGE(e.find("Conv2d(conv2): input [1, 32, 2, 2] is too small for kernel 3x3 with "
                       "padding (0, 0), dilation (1, 1)") != std::string::npos,
                e);
}

TEST_CASE("Linear: wrong feature count, nested path") {
  auto net = mnist_head();
  auto outer = nn::make<nn::Sequential>(std::vector<std::pair<std::string, nn::ModulePtr>>{
      {"features", net}});
  // 26x26 images give conv2 outputs of 4 x 22 x 22 = 1936 features, not 2304.
  const std::string e = error_of([&] { outer->forward(lt::uniform({2, 1, 26, 26}, 0, 1, 1)); });
  CHECK_MESSAGE(e.find("Linear(features.fc1): expected input [*, 2304], got [2, 1936]") !=
                    std::string::npos,
                e);
}

TEST_CASE("output_shape reports the same errors without computing") {
  auto net = mnist_head();
  CHECK(net->output_shape(Shape{8, 1, 28, 28}) == Shape{8, 10});
  const std::string e = error_of([&] { net->output_shape(Shape{8, 1, 28}); });
  CHECK_MESSAGE(e.find("Conv2d(conv1): expected 4-D input [N, 1, H, W], got [8, 1, 28]") !=
                    std::string::npos,
                e);
}

TEST_CASE("BatchNorm2d: channels, rank, one value per channel in training") {
  nn::Sequential net({{"bn1", nn::make<nn::BatchNorm2d>(16, lt::host())}});
  std::string e = error_of([&] { net.forward(lt::uniform({2, 8, 4, 4}, 0, 1, 1)); });
  CHECK_MESSAGE(e.find("BatchNorm2d(bn1): expected 4-D input [N, 16, H, W], got [2, 8, 4, 4]") !=
                    std::string::npos,
                e);
  e = error_of([&] { net.forward(lt::uniform({1, 16, 1, 1}, 0, 1, 1)); });
  CHECK_MESSAGE(e.find("BatchNorm2d(bn1): training needs more than 1 value per channel, got "
                       "input [1, 16, 1, 1]") != std::string::npos,
                e);
  net.eval();  // evaluation uses the running statistics: one value is fine
  CHECK_NOTHROW(net.forward(lt::uniform({1, 16, 1, 1}, 0, 1, 1)));
}

TEST_CASE("pooling: windows larger than the input, padding over half the kernel") {
  nn::Sequential net({{"pool", nn::make<nn::MaxPool2d>(nn::MaxPool2dOptions(3))}});
  std::string e = error_of([&] { net.forward(lt::uniform({1, 2, 2, 2}, 0, 1, 1)); });
  CHECK_MESSAGE(e.find("MaxPool2d(pool): input [1, 2, 2, 2] is smaller than the pooling window "
                       "3x3") != std::string::npos,
                e);
  nn::AvgPool2d avg(nn::AvgPool2dOptions(2).padding(2));
  e = error_of([&] { avg.forward(lt::uniform({1, 2, 6, 6}, 0, 1, 1)); });
  CHECK_MESSAGE(e.find("AvgPool2d: padding (2, 2) must be at most half the kernel size (2, 2)") !=
                    std::string::npos,
                e);
  nn::AdaptiveAvgPool2d ad(4);
  e = error_of([&] { ad.forward(lt::uniform({1, 2, 6, 6}, 0, 1, 1)); });
  CHECK_MESSAGE(e.find("AdaptiveAvgPool2d: output size (4, 4) must divide the input's H and W, "
                       "got [1, 2, 6, 6]") != std::string::npos,
                e);
}

TEST_CASE("backward: wrong gradient shape, no forward, twice") {
  nn::Sequential net({{"relu1", nn::make<nn::ReLU>()}});
  net.forward(lt::uniform({2, 4}, -1, 1, 1));
  std::string e = error_of([&] { net.backward(lt::uniform({2, 3}, -1, 1, 2)); });
  CHECK_MESSAGE(e.find("Sequential: grad_output is [2, 3], expected [2, 4] (the output of the last "
                       "forward)") != std::string::npos,
                e);
  net.forward(lt::uniform({2, 4}, -1, 1, 1));
  CHECK_NOTHROW(net.backward(lt::uniform({2, 4}, -1, 1, 2)));
  e = error_of([&] { net.backward(lt::uniform({2, 4}, -1, 1, 2)); });
  CHECK_MESSAGE(e.find("Sequential: backward without a forward to match") != std::string::npos, e);
  nn::Linear fresh(3, 2, lt::host());
  e = error_of([&] { fresh.backward(lt::uniform({1, 2}, -1, 1, 2)); });
  CHECK_MESSAGE(e.find("Linear: backward without a forward to match") != std::string::npos, e);
}

TEST_CASE("a module instance used twice") {
  auto relu = nn::make<nn::ReLU>();
  SUBCASE("registered twice in one container: refused") {
    nn::Sequential net;
    net.add("a", relu);
    const std::string e = error_of([&] { net.add("b", relu); });
    CHECK_MESSAGE(e.find("the same ReLU instance is registered as 'a' and as 'b'") !=
                      std::string::npos,
                  e);
  }
  SUBCASE("run twice in one forward through two containers: caught at backward") {
    auto a = nn::make<nn::Sequential>(std::initializer_list<nn::ModulePtr>{relu});
    auto b = nn::make<nn::Sequential>(std::initializer_list<nn::ModulePtr>{relu});
    nn::Sequential net({a, b});
    const Tensor y = net.forward(lt::uniform({2, 3}, -1, 1, 1));
    const std::string e = error_of([&] { net.backward(lt::uniform({2, 3}, -1, 1, 2)); });
    CHECK_MESSAGE(e.find("backward without a forward to match (one backward per forward; a module "
                         "instance may appear only once in a model's forward pass)") !=
                      std::string::npos,
                  e);
  }
}

TEST_CASE("Residual: block and shortcut shapes must agree") {
  nn::Sequential net({{"layer1", nn::make<nn::Residual>(nn::make<nn::Conv2d>(
                                     nn::Conv2dOptions(2, 4, 3).padding(1), lt::host()))}});
  const std::string e = error_of([&] { net.forward(lt::uniform({1, 2, 5, 5}, -1, 1, 1)); });
  CHECK_MESSAGE(
      e.find("Residual(layer1): block output [1, 4, 5, 5] and shortcut output [1, 2, 5, 5] "
             "differ for input [1, 2, 5, 5]") != std::string::npos,
      e);
}

TEST_CASE("LayerNorm, Softmax, Flatten, constructor arguments") {
  nn::LayerNorm ln({6}, lt::host());
  std::string e = error_of([&] { ln.forward(lt::uniform({2, 5}, -1, 1, 1)); });
  CHECK_MESSAGE(e.find("LayerNorm: expected input [*, 6], got [2, 5]") != std::string::npos, e);
  nn::Softmax sm(2);
  e = error_of([&] { sm.forward(lt::uniform({2, 5}, -1, 1, 1)); });
  CHECK_MESSAGE(e.find("Softmax: dim 2 is out of range for input [2, 5]") != std::string::npos, e);
  e = error_of([&] { nn::Conv2d c(nn::Conv2dOptions(3, 4, 3).groups(2), lt::host()); });
  CHECK_MESSAGE(e.find("Conv2d: groups = 2 must divide in_channels (3) and out_channels (4)") !=
                    std::string::npos,
                e);
  e = error_of([&] { nn::Dropout d(1.5f); });
  CHECK_MESSAGE(e.find("Dropout: p must be a probability in [0, 1], got 1.5") != std::string::npos,
                e);
}

TEST_CASE("losses: shapes, dtypes, target range") {
  nn::CrossEntropyLoss ce;
  std::string e = error_of([&] {
    ce.forward(lt::uniform({8, 10}, -1, 1, 1), lt::labels(7, 10, 2));
  });
  CHECK_MESSAGE(e.find("CrossEntropyLoss: expected target [8] of class indices (i64) for input "
                       "[8, 10], got [7] i64") != std::string::npos,
                e);
  e = error_of([&] { ce.forward(lt::uniform({8, 10}, -1, 1, 1), lt::uniform({8}, 0, 9, 2)); });
  // An f32 target is read as class probabilities (soft targets), which must be [N, C].
  CHECK_MESSAGE(e.find("CrossEntropyLoss: soft targets (f32) must have the logits' shape [N, C], "
                       "got [8] for logits [8, 10] (class indices are i64 [N])") !=
                    std::string::npos,
                e);
  e = error_of([&] { ce.forward(lt::uniform({8, 10, 2}, -1, 1, 1), lt::labels(8, 10, 2)); });
  CHECK_MESSAGE(e.find("CrossEntropyLoss: expected input [N, C] (logits), got [8, 10, 2]") !=
                    std::string::npos,
                e);
  const Tensor bad = Tensor::from_vector(std::vector<std::int64_t>{1, 12, 3}, Shape{3}, lt::host());
  e = error_of([&] { ce.forward(lt::uniform({3, 10}, -1, 1, 1), bad); });
  CHECK_MESSAGE(e.find("CrossEntropyLoss: nll_forward: target[1] = 12 is not a class index in "
                       "[0, 10)") != std::string::npos,
                e);
  nn::MSELoss mse;
  e = error_of([&] { mse.forward(lt::uniform({4, 3}, -1, 1, 1), lt::uniform({3, 4}, -1, 1, 2)); });
  CHECK_MESSAGE(e.find("MSELoss: input [4, 3] and target [3, 4] f32 must have the same shape") !=
                    std::string::npos,
                e);
  e = error_of([&] { mse.backward(); });
  CHECK_MESSAGE(e.find("MSELoss: backward without a forward to match") != std::string::npos, e);
}

TEST_CASE("NaN or infinity in the loss is an error naming the element") {
  nn::CrossEntropyLoss ce;
  std::vector<float> v = lt::uniform({4, 5}, -1, 1, 1).to_vector<float>();
  v[13] = NAN;
  const Tensor x = Tensor::from_vector(v, Shape{4, 5}, lt::host());
  std::string e = error_of([&] { ce.forward(x, lt::labels(4, 5, 2)); });
  CHECK_MESSAGE(e.find("CrossEntropyLoss: loss is nan for input [4, 5] and target [4]; input "
                       "element 13 (flat index) is nan") != std::string::npos,
                e);
  nn::MSELoss mse(nn::Reduction::sum);
  const Tensor big = Tensor::full(Shape{4}, 1e30, DType::f32, lt::host());
  e = error_of([&] { mse.forward(big, Tensor::zeros(Shape{4}, DType::f32, lt::host())); });
  CHECK_MESSAGE(e.find("MSELoss: loss is inf") != std::string::npos, e);
  CHECK_MESSAGE(e.find("every input element is finite (the loss overflowed)") != std::string::npos,
                e);
  // The check can be switched off (no host read per step); the NaN then flows on.
  ce.set_check_finite(false);
  CHECK(std::isnan(ce.forward(x, lt::labels(4, 5, 2)).item()));
}

TEST_CASE("targets on a device the host cannot address: no readback, NaN for a bad class index") {
  auto& remote = cohort::testing::remote_device();
  const Tensor x = lt::uniform({3, 10}, -1, 1, 1).to(remote);
  const Tensor good = Tensor::from_vector(std::vector<std::int64_t>{1, 2, 3}, Shape{3}, remote);
  const Tensor bad = Tensor::from_vector(std::vector<std::int64_t>{1, 12, -1}, Shape{3}, remote);
  nn::CrossEntropyLoss ce;
  ce.set_check_finite(false);
  nn::NLLLoss nll;
  nll.set_check_finite(false);
  remote.reset();
  const Tensor ok = ce.forward(x, good);
  ce.backward();
  CHECK(remote.readbacks == 0);  // neither the targets nor the loss were read
  CHECK(std::isfinite(ok.item()));
  // Out of range: not an error here (nobody read the targets), but a NaN loss and NaN gradient
  // rows instead of a read outside the row; the DataLoader checks labels before the upload.
  CHECK(std::isnan(ce.forward(x, bad).item()));
  const std::vector<float> dx = ce.backward().to_vector<float>();
  for (int c = 0; c < 10; ++c) {
    CHECK(std::isfinite(dx[c]));
    CHECK(std::isnan(dx[10 + c]));
    CHECK(std::isnan(dx[20 + c]));
  }
  CHECK(std::isnan(nll.forward(x, bad).item()));
  const std::vector<float> nx = nll.backward().to_vector<float>();
  CHECK(nx[1] == doctest::Approx(-1.0f / 3));
  CHECK(std::isnan(nx[10]));
  CHECK(std::isnan(nx[29]));
}

TEST_CASE("op front end: device-level checks name the op and argument") {
  const Tensor x = lt::uniform({2, 3, 5, 5}, -1, 1, 1);
  const Tensor w = lt::uniform({4, 2, 3, 3}, -1, 1, 2);
  Tensor y = Tensor::empty({2, 4, 3, 3}, DType::f32, lt::host());
  const std::string e =
      error_of([&] { cohort::ops::conv2d_forward(x, w, nullptr, y, cohort::ops::Conv2dParams{}); });
  CHECK_MESSAGE(e.find("conv2d: weight [4, 2, 3, 3] expects 2 input channels (2 per group x 1 "
                       "groups), input is [2, 3, 5, 5]") != std::string::npos,
                e);
}

}  // TEST_SUITE
