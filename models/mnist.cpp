// PyTorch's MNIST Net (see cohort/models/mnist.hpp); PyTorch twin: Net in
// examples/mnist/main.py (bench/mnist_torch.py). The children are created in Net's order, so a
// seed gives the same weights as before the model moved here from layers/.
#include <string>

#include "checks.hpp"
#include "cohort/layers.hpp"
#include "cohort/models/mnist.hpp"

namespace cohort::models {

nn::ModulePtr mnist_net(Device& dev) {
  ModelConfig c;
  c.num_classes = 10;
  c.in_channels = 1;
  c.image_size = 28;
  return mnist_net(dev, c);
}

nn::ModulePtr mnist_net(Device& dev, const ModelConfig& c) {
  detail::check_config("mnist_net", c, 2);
  // Two unpadded 3x3 convolutions take 4 pixels, the pooling halves what is left.
  COHORT_CHECK(c.image_size >= 6, "mnist_net: image_size must be at least 6, got ", c.image_size);
  using nn::make;
  const std::int64_t s = (c.image_size - 4) / 2;
  return make<nn::Sequential>(std::vector<std::pair<std::string, nn::ModulePtr>>{
      {"conv1", make<nn::Conv2d>(nn::Conv2dOptions(c.in_channels, 32, 3), dev)},
      {"relu1", make<nn::ReLU>()},
      {"conv2", make<nn::Conv2d>(nn::Conv2dOptions(32, 64, 3), dev)},
      {"relu2", make<nn::ReLU>()},
      {"pool", make<nn::MaxPool2d>(nn::MaxPool2dOptions(2))},
      {"dropout1", make<nn::Dropout>(0.25f)},
      {"flatten", make<nn::Flatten>()},
      {"fc1", make<nn::Linear>(64 * s * s, 128, dev)},
      {"relu3", make<nn::ReLU>()},
      {"dropout2", make<nn::Dropout>(0.5f)},
      {"fc2", make<nn::Linear>(128, c.num_classes, dev)},
      {"log_softmax", make<nn::LogSoftmax>(1)}});
}

}  // namespace cohort::models
