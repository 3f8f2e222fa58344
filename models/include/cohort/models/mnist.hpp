// The network of PyTorch's examples/mnist/main.py (its Net), the README's main job. It lived in
// cohort/layers/models.hpp as nn::mnist_net; the zoo is where models live.
#pragma once

#include "cohort/core/device.hpp"
#include "cohort/layers/module.hpp"
#include "cohort/models/config.hpp"

namespace cohort::models {

// conv1 1->32 3x3, ReLU, conv2 32->64 3x3, ReLU, max-pool 2, dropout 0.25, flatten,
// fc1 9216->128, ReLU, dropout 0.5, fc2 128->10, log-softmax (state_dict names conv1, conv2,
// fc1, fc2 as in Net). Input [N, 1, 28, 28]; output log-probabilities [N, 10] (use NLLLoss).
nn::ModulePtr mnist_net(Device& device);

// The same network for the zoo's ModelConfig (models::make("mnist_net", ...)): conv1 takes
// config.in_channels, fc1 takes 64 * ((S - 4) / 2)^2 features, fc2 gives config.num_classes.
// Input [N, C, S, S] with S even and at least 6. mnist_net(device) is this with {10, 1, 28}.
nn::ModulePtr mnist_net(Device& device, const ModelConfig& config);

}  // namespace cohort::models
