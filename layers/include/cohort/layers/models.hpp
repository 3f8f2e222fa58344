// Reference networks built from cohort's layers, with PyTorch's state_dict names so their
// checkpoints load into the PyTorch originals and back.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cohort/layers/activation.hpp"
#include "cohort/layers/conv2d.hpp"
#include "cohort/layers/dropout.hpp"
#include "cohort/layers/flatten.hpp"
#include "cohort/layers/linear.hpp"
#include "cohort/layers/pooling.hpp"
#include "cohort/layers/sequential.hpp"
#include "cohort/layers/softmax.hpp"

namespace cohort::nn {

// The network of PyTorch's examples/mnist/main.py (conv1, conv2, fc1, fc2 as in its Net):
// conv 1->32 3x3, ReLU, conv 32->64 3x3, ReLU, max-pool 2, dropout 0.25, flatten, fc 9216->128,
// ReLU, dropout 0.5, fc 128->10, log-softmax. Input [N, 1, 28, 28].
inline ModulePtr mnist_net(Device& dev) {
  return make<Sequential>(std::vector<std::pair<std::string, ModulePtr>>{
      {"conv1", make<Conv2d>(Conv2dOptions(1, 32, 3), dev)},
      {"relu1", make<ReLU>()},
      {"conv2", make<Conv2d>(Conv2dOptions(32, 64, 3), dev)},
      {"relu2", make<ReLU>()},
      {"pool", make<MaxPool2d>(MaxPool2dOptions(2))},
      {"dropout1", make<Dropout>(0.25f)},
      {"flatten", make<Flatten>()},
      {"fc1", make<Linear>(9216, 128, dev)},
      {"relu3", make<ReLU>()},
      {"dropout2", make<Dropout>(0.5f)},
      {"fc2", make<Linear>(128, 10, dev)},
      {"log_softmax", make<LogSoftmax>(1)}});
}

}  // namespace cohort::nn
