// CNN-A (see cohort/models/cnn.hpp); PyTorch twin: CnnA in models/torch_models.py.
#include "cohort/layers.hpp"
#include "checks.hpp"
#include "cohort/models/cnn.hpp"

namespace cohort::models {

nn::ModulePtr cnn_a(Device& dev, const ModelConfig& c) {
  detail::check_config("cnn_a", c, 4);
  using nn::make;
  const std::int64_t s = c.image_size / 4;
  return nn::sequential(
      {{"conv1", make<nn::Conv2d>(nn::Conv2dOptions(c.in_channels, 32, 3).padding(1), dev)},
       {"relu1", make<nn::ReLU>()},
       {"pool1", make<nn::MaxPool2d>(nn::MaxPool2dOptions(2))},
       {"conv2", make<nn::Conv2d>(nn::Conv2dOptions(32, 64, 3).padding(1), dev)},
       {"relu2", make<nn::ReLU>()},
       {"pool2", make<nn::MaxPool2d>(nn::MaxPool2dOptions(2))},
       {"flatten", make<nn::Flatten>()},
       {"fc1", make<nn::Linear>(64 * s * s, 256, dev)},
       {"relu3", make<nn::ReLU>()},
       {"fc2", make<nn::Linear>(256, c.num_classes, dev)}});
}

}  // namespace cohort::models
