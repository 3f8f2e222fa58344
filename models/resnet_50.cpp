// torchvision's ResNet-50 (see cohort/models/resnet.hpp): the stem, four stages of Bottleneck
// blocks [3, 4, 6, 3], global average pool and fc, with torchvision's initialisation.
#include <cmath>
#include <string>

#include "cohort/layers.hpp"
#include "checks.hpp"
#include "cohort/models/resnet.hpp"

namespace cohort::models {
namespace {
using nn::make;

nn::ModulePtr conv(Device& dev, std::int64_t in, std::int64_t out, std::int64_t k,
                   std::int64_t stride) {
  return make<nn::Conv2d>(nn::Conv2dOptions(in, out, k).stride(stride).padding(k / 2).bias(false),
                          dev);
}

// torchvision's Bottleneck: conv1 1x1, bn1, relu, conv2 3x3 (stride), bn2, relu, conv3 1x1
// (x4 expansion), bn3, + identity or downsample (1x1 conv with stride, bn), relu.
nn::ModulePtr bottleneck(Device& dev, std::int64_t in, std::int64_t planes, std::int64_t stride) {
  const std::int64_t out = planes * 4;
  auto block = nn::sequential({{"conv1", conv(dev, in, planes, 1, 1)},
                               {"bn1", make<nn::BatchNorm2d>(planes, dev)},
                               {"relu1", make<nn::ReLU>()},
                               {"conv2", conv(dev, planes, planes, 3, stride)},
                               {"bn2", make<nn::BatchNorm2d>(planes, dev)},
                               {"relu2", make<nn::ReLU>()},
                               {"conv3", conv(dev, planes, out, 1, 1)},
                               {"bn3", make<nn::BatchNorm2d>(out, dev)}});
  nn::ModulePtr downsample;
  if (stride != 1 || in != out)
    downsample = nn::sequential({{"0", conv(dev, in, out, 1, stride)},
                                 {"1", make<nn::BatchNorm2d>(out, dev)}});
  return make<nn::Residual>(
      block, downsample,
      nn::ResidualOptions().inline_block().shortcut_name("downsample").relu_after());
}

// torchvision's init: convolutions kaiming_normal_(mode="fan_out", nonlinearity="relu"), i.e.
// N(0, sqrt(2 / (out * kh * kw))); batch norms weight 1, bias 0 (their defaults already); fc keeps
// Linear's default.
void torchvision_init(nn::Module& m, Device& dev) {
  if (m.type_name() == "Conv2d") {
    Tensor& w = m.own_parameters().front().second->value;
    const double fan_out = static_cast<double>(w.shape()[0] * w.shape()[2] * w.shape()[3]);
    w.copy_from(Tensor::normal(w.shape(), 0.0f, static_cast<float>(std::sqrt(2.0 / fan_out)),
                               nn::next_seed(), dev));
  }
  for (const auto& [name, child] : m.children()) torchvision_init(*child, dev);
}
}  // namespace

nn::ModulePtr resnet50(Device& dev, const ModelConfig& c) {
  detail::check_config("resnet50", c, 1);
  COHORT_CHECK(c.image_size >= 32,
               "resnet50: image_size must be at least 32 (five stride-2 steps), got ",
               c.image_size);
  std::vector<std::pair<std::string, nn::ModulePtr>> top = {
      {"conv1", conv(dev, c.in_channels, 64, 7, 2)},
      {"bn1", make<nn::BatchNorm2d>(64, dev)},
      {"relu", make<nn::ReLU>()},
      {"maxpool", make<nn::MaxPool2d>(nn::MaxPool2dOptions(3).stride(2).padding(1))}};
  std::int64_t in = 64;
  const std::int64_t blocks[4] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    const std::int64_t planes = 64LL << stage;
    std::vector<std::pair<std::string, nn::ModulePtr>> layer;
    for (std::int64_t b = 0; b < blocks[stage]; ++b) {
      layer.emplace_back(std::to_string(b),
                         bottleneck(dev, in, planes, b == 0 && stage > 0 ? 2 : 1));
      in = planes * 4;
    }
    top.emplace_back("layer" + std::to_string(stage + 1), make<nn::Sequential>(std::move(layer)));
  }
  top.emplace_back("avgpool", make<nn::AdaptiveAvgPool2d>(1));
  top.emplace_back("flatten", make<nn::Flatten>());
  top.emplace_back("fc", make<nn::Linear>(in, c.num_classes, dev));
  auto model = make<nn::Sequential>(std::move(top));
  torchvision_init(*model, dev);
  return model;
}

}  // namespace cohort::models
