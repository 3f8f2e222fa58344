// Residual networks: the fast CIFAR-10 ResNet9 and torchvision's ResNet family.
#pragma once

#include "cohort/core/device.hpp"
#include "cohort/layers/module.hpp"
#include "cohort/models/config.hpp"

namespace cohort::models {

// ResNet9 as the common PyTorch CIFAR-10 recipe writes it (ResNet9 in models/torch_models.py):
// conv_block(c_in, c_out) = Conv 3x3 pad 1, BatchNorm, ReLU (+ MaxPool 2 where marked);
//   conv1 = block(C, 64), conv2 = block(64, 128, pool), res1 = block(128, 128) x 2 added to its
//   input, conv3 = block(128, 256, pool), conv4 = block(256, 512, pool), res2 = block(512, 512) x 2
//   added to its input, classifier = MaxPool S/8, Flatten, Dropout 0.2, Linear 512 -> classes.
// Input [N, C, S, S] with S a multiple of 8.
nn::ModulePtr resnet9(Device& device, const ModelConfig& config = {});

// torchvision.models.resnet50(num_classes=K) with its structure, initialisation (Kaiming-normal
// fan-out convolutions, batch norm 1/0) and state_dict names (conv1, bn1, layer1.0.conv1, ...,
// layer1.0.downsample.0, fc). Bottleneck v1.5 (stride on the 3x3). The global average pool makes
// any S >= 32 work (64 for TinyImageNet).
nn::ModulePtr resnet50(Device& device, const ModelConfig& config = {});
// The rest of torchvision's family, by its names, structures and state_dict keys: resnet18 and
// resnet34 (BasicBlock, [2, 2, 2, 2] and [3, 4, 6, 3]), resnet101 and resnet152 (Bottleneck,
// [3, 4, 23, 3] and [3, 8, 36, 3]), wide_resnet50_2 (Bottleneck [3, 4, 6, 3] with twice the
// inner width). The same initialisation; any S >= 32.
nn::ModulePtr resnet18(Device& device, const ModelConfig& config = {});
nn::ModulePtr resnet34(Device& device, const ModelConfig& config = {});
nn::ModulePtr resnet101(Device& device, const ModelConfig& config = {});
nn::ModulePtr resnet152(Device& device, const ModelConfig& config = {});
nn::ModulePtr wide_resnet50_2(Device& device, const ModelConfig& config = {});

}  // namespace cohort::models
