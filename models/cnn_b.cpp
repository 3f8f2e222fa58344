// CNN-B (see cohort/models/cnn.hpp); PyTorch twin: CnnB in models/torch_models.py. Children of
// `features` and `classifier` are numbered like the nn.Sequential they mirror (features.0.weight,
// features.1.running_mean, classifier.3.bias).
#include <string>

#include "cohort/layers.hpp"
#include "checks.hpp"
#include "cohort/models/cnn.hpp"

namespace cohort::models {

nn::ModulePtr cnn_b(Device& dev, const ModelConfig& c) {
  detail::check_config("cnn_b", c, 8);
  using nn::make;
  std::vector<std::pair<std::string, nn::ModulePtr>> f;
  auto add = [&f](nn::ModulePtr m) { f.emplace_back(std::to_string(f.size()), std::move(m)); };
  std::int64_t in = c.in_channels;
  for (std::int64_t width : {64, 128, 256}) {
    for (int i = 0; i < 2; ++i) {
      add(make<nn::Conv2d>(nn::Conv2dOptions(in, width, 3).padding(1).bias(false), dev));
      add(make<nn::BatchNorm2d>(width, dev));
      add(make<nn::ReLU>());
      in = width;
    }
    add(make<nn::MaxPool2d>(nn::MaxPool2dOptions(2)));
  }
  const std::int64_t s = c.image_size / 8;
  return nn::sequential(
      {{"features", make<nn::Sequential>(std::move(f))},
       {"flatten", make<nn::Flatten>()},
       {"classifier", nn::sequential({{"0", make<nn::Linear>(256 * s * s, 512, dev)},
                                      {"1", make<nn::ReLU>()},
                                      {"2", make<nn::Dropout>(0.5f)},
                                      {"3", make<nn::Linear>(512, c.num_classes, dev)}})}});
}

}  // namespace cohort::models
