// The two CIFAR CNNs (PyTorch definitions: CnnA and CnnB in models/torch_models.py).
#pragma once

#include "cohort/core/device.hpp"
#include "cohort/layers/module.hpp"
#include "cohort/models/config.hpp"

namespace cohort::models {

// CNN-A, the simple CNN: two conv blocks and two linear layers.
//   conv1 in->32 3x3 pad 1, ReLU, max-pool 2, conv2 32->64 3x3 pad 1, ReLU, max-pool 2,
//   flatten, fc1 64*(S/4)^2 -> 256, ReLU, fc2 256 -> classes (logits).
// Input [N, C, S, S] with S a multiple of 4.
nn::ModulePtr cnn_a(Device& device, const ModelConfig& config = {});

// CNN-B, VGG-style: `features` = three stages of two (conv 3x3 pad 1 without bias, BatchNorm,
// ReLU) and a max-pool 2, widths 64, 128, 256; `classifier` = Linear 256*(S/8)^2 -> 512, ReLU,
// Dropout 0.5, Linear 512 -> classes. Input [N, C, S, S] with S a multiple of 8.
nn::ModulePtr cnn_b(Device& device, const ModelConfig& config = {});

}  // namespace cohort::models
