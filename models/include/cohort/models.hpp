// The model zoo: the reference networks of docs/MODELS.md, by name, with PyTorch's state_dict
// names (models/torch_models.py holds their PyTorch definitions; torchvision's for ResNet-50 and
// the ViT), so `model.load_state_dict(safetensors.torch.load_file(path))` works with strict=True.
//
//   auto model = cohort::models::make("resnet9", device, {/*num_classes=*/10});
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cohort/layers/module.hpp"
#include "cohort/models/cnn.hpp"
#include "cohort/models/config.hpp"
#include "cohort/models/mnist.hpp"
#include "cohort/models/resnet.hpp"
#include "cohort/models/vit.hpp"

namespace cohort::models {

// "cnn_a", "cnn_b", "resnet9", "resnet50", "vit", "mnist_net", "resnet18", "resnet34",
// "resnet101", "resnet152", "wide_resnet50_2" (the names make() takes).
std::vector<std::string> names();

// The model `name` on `device` with `config`; an unknown name is an error listing names().
nn::ModulePtr make(const std::string& name, Device& device, const ModelConfig& config = {});

}  // namespace cohort::models
