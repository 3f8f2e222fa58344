// torchvision's ResNet family (see cohort/models/resnet.hpp): the stem, four stages of
// BasicBlocks (resnet18, resnet34) or Bottlenecks (resnet50, resnet101, resnet152,
// wide_resnet50_2), global average pool and fc, with torchvision's initialisation.
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

// torchvision's Bottleneck: conv1 1x1 (to width = planes x width_per_group / 64), bn1, relu,
// conv2 3x3 (stride), bn2, relu, conv3 1x1 (x4 expansion), bn3, + identity or downsample (1x1
// conv with stride, bn), relu. BasicBlock: conv1 3x3 (stride), bn1, relu, conv2 3x3, bn2, + the
// same shortcut, relu.
nn::ModulePtr block(Device& dev, bool bottleneck, std::int64_t in, std::int64_t planes,
                    std::int64_t stride, std::int64_t width_per_group) {
  const std::int64_t out = planes * (bottleneck ? 4 : 1);
  const std::int64_t width = planes * width_per_group / 64;
  auto body =
      bottleneck
          ? nn::sequential({{"conv1", conv(dev, in, width, 1, 1)},
                            {"bn1", make<nn::BatchNorm2d>(width, dev)},
                            {"relu1", make<nn::ReLU>()},
                            {"conv2", conv(dev, width, width, 3, stride)},
                            {"bn2", make<nn::BatchNorm2d>(width, dev)},
                            {"relu2", make<nn::ReLU>()},
                            {"conv3", conv(dev, width, out, 1, 1)},
                            {"bn3", make<nn::BatchNorm2d>(out, dev)}})
          : nn::sequential({{"conv1", conv(dev, in, planes, 3, stride)},
                            {"bn1", make<nn::BatchNorm2d>(planes, dev)},
                            {"relu1", make<nn::ReLU>()},
                            {"conv2", conv(dev, planes, planes, 3, 1)},
                            {"bn2", make<nn::BatchNorm2d>(planes, dev)}});
  nn::ModulePtr downsample;
  if (stride != 1 || in != out)
    downsample = nn::sequential({{"0", conv(dev, in, out, 1, stride)},
                                 {"1", make<nn::BatchNorm2d>(out, dev)}});
  return make<nn::Residual>(
      body, downsample,
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

struct Family {
  const char* name;
  bool bottleneck;
  std::int64_t blocks[4];
  std::int64_t width_per_group;
};

nn::ModulePtr build(Device& dev, const ModelConfig& c, const Family& f) {
  detail::check_config(f.name, c, 1);
  COHORT_CHECK(c.image_size >= 32, f.name,
               ": image_size must be at least 32 (five stride-2 steps), got ", c.image_size);
  std::vector<std::pair<std::string, nn::ModulePtr>> top = {
      {"conv1", conv(dev, c.in_channels, 64, 7, 2)},
      {"bn1", make<nn::BatchNorm2d>(64, dev)},
      {"relu", make<nn::ReLU>()},
      {"maxpool", make<nn::MaxPool2d>(nn::MaxPool2dOptions(3).stride(2).padding(1))}};
  std::int64_t in = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const std::int64_t planes = 64LL << stage;
    std::vector<std::pair<std::string, nn::ModulePtr>> layer;
    for (std::int64_t b = 0; b < f.blocks[stage]; ++b) {
      layer.emplace_back(std::to_string(b), block(dev, f.bottleneck, in, planes,
                                                  b == 0 && stage > 0 ? 2 : 1, f.width_per_group));
      in = planes * (f.bottleneck ? 4 : 1);
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
}  // namespace

nn::ModulePtr resnet18(Device& dev, const ModelConfig& c) {
  return build(dev, c, {"resnet18", false, {2, 2, 2, 2}, 64});
}
nn::ModulePtr resnet34(Device& dev, const ModelConfig& c) {
  return build(dev, c, {"resnet34", false, {3, 4, 6, 3}, 64});
}
nn::ModulePtr resnet50(Device& dev, const ModelConfig& c) {
  return build(dev, c, {"resnet50", true, {3, 4, 6, 3}, 64});
}
nn::ModulePtr resnet101(Device& dev, const ModelConfig& c) {
  return build(dev, c, {"resnet101", true, {3, 4, 23, 3}, 64});
}
nn::ModulePtr resnet152(Device& dev, const ModelConfig& c) {
  return build(dev, c, {"resnet152", true, {3, 8, 36, 3}, 64});
}
nn::ModulePtr wide_resnet50_2(Device& dev, const ModelConfig& c) {
  return build(dev, c, {"wide_resnet50_2", true, {3, 4, 6, 3}, 128});
}

}  // namespace cohort::models
