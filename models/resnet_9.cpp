// ResNet9 (see cohort/models/resnet.hpp); PyTorch twin: ResNet9 in models/torch_models.py, whose
// forward is conv1, conv2, res1(out) + out, conv3, conv4, res2(out) + out, classifier. The two
// residuals inline their nn.Sequential so the names stay res1.0.0.weight, not res1.block.0.0.
#include <string>

#include "cohort/layers.hpp"
#include "checks.hpp"
#include "cohort/models/resnet.hpp"

namespace cohort::models {
namespace {
nn::ModulePtr conv_block(Device& dev, std::int64_t in, std::int64_t out, bool pool) {
  using nn::make;
  std::vector<std::pair<std::string, nn::ModulePtr>> l = {
      {"0", make<nn::Conv2d>(nn::Conv2dOptions(in, out, 3).padding(1), dev)},
      {"1", make<nn::BatchNorm2d>(out, dev)},
      {"2", make<nn::ReLU>()}};
  if (pool) l.emplace_back("3", make<nn::MaxPool2d>(nn::MaxPool2dOptions(2)));
  return nn::make<nn::Sequential>(std::move(l));
}

nn::ModulePtr residual(Device& dev, std::int64_t width) {
  auto block = nn::sequential({{"0", conv_block(dev, width, width, false)},
                               {"1", conv_block(dev, width, width, false)}});
  return nn::make<nn::Residual>(block, nullptr, nn::ResidualOptions().inline_block());
}
}  // namespace

nn::ModulePtr resnet9(Device& dev, const ModelConfig& c) {
  detail::check_config("resnet9", c, 8);
  using nn::make;
  return nn::sequential(
      {{"conv1", conv_block(dev, c.in_channels, 64, false)},
       {"conv2", conv_block(dev, 64, 128, true)},
       {"res1", residual(dev, 128)},
       {"conv3", conv_block(dev, 128, 256, true)},
       {"conv4", conv_block(dev, 256, 512, true)},
       {"res2", residual(dev, 512)},
       {"classifier",
        nn::sequential({{"0", make<nn::MaxPool2d>(nn::MaxPool2dOptions(c.image_size / 8))},
                        {"1", make<nn::Flatten>()},
                        {"2", make<nn::Dropout>(0.2f)},
                        {"3", make<nn::Linear>(512, c.num_classes, dev)}})}});
}

}  // namespace cohort::models
