// The network of PyTorch's examples/mnist/main.py, with the same state_dict names (conv1, conv2,
// fc1, fc2), so its checkpoints load into that script's Net and back.
#pragma once

#include "cohort/layers.hpp"

namespace cohort::examples {

inline nn::ModulePtr mnist_net(Device& dev) {
  return nn::make<nn::Sequential>(std::vector<std::pair<std::string, nn::ModulePtr>>{
      {"conv1", nn::make<nn::Conv2d>(nn::Conv2dOptions(1, 32, 3), dev)},
      {"relu1", nn::make<nn::ReLU>()},
      {"conv2", nn::make<nn::Conv2d>(nn::Conv2dOptions(32, 64, 3), dev)},
      {"relu2", nn::make<nn::ReLU>()},
      {"pool", nn::make<nn::MaxPool2d>(nn::MaxPool2dOptions(2))},
      {"dropout1", nn::make<nn::Dropout>(0.25f)},
      {"flatten", nn::make<nn::Flatten>()},
      {"fc1", nn::make<nn::Linear>(9216, 128, dev)},
      {"relu3", nn::make<nn::ReLU>()},
      {"dropout2", nn::make<nn::Dropout>(0.5f)},
      {"fc2", nn::make<nn::Linear>(128, 10, dev)},
      {"log_softmax", nn::make<nn::LogSoftmax>(1)}});
}

}  // namespace cohort::examples
