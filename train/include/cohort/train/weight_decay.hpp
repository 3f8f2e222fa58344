// Parameter groups by weight decay, as torchvision's reference script splits a model
// (utils.set_weight_decay behind --norm-weight-decay, --bias-weight-decay and
// --transformer-embedding-decay): walking the module tree depth-first (a module's own parameters,
// then its children), a parameter whose own name is one of the custom keys goes to that key's
// group (the first key that matches); else, with a norm weight decay given, a parameter of a
// normalisation layer (BatchNorm2d, LayerNorm) to the "norm" group; else to "other". Groups come
// in the order other, norm, then the custom keys, empty ones left out; parameters that do not
// require gradients are left out. Each group goes to the optimizer as one parameter group
// (make_param_groups below), whose hyper-parameters the checkpoints save and restore.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cohort/core/error.hpp"
#include "cohort/layers/module.hpp"

namespace cohort::train {

struct WeightDecayGroup {
  std::string key;                    // "other", "norm", or a custom key ("bias", "class_token")
  std::vector<ParameterPtr> params;   // in the walk's order
  std::vector<std::string> names;     // their state_dict names, for messages and tests
  double weight_decay = 0.0;
};

std::vector<WeightDecayGroup> set_weight_decay(
    const nn::Module& model, double weight_decay, std::optional<double> norm_weight_decay = {},
    const std::vector<std::pair<std::string, double>>& custom_keys_weight_decay = {});

// The reference script's custom keys: ("bias", bias_weight_decay) when given, then
// ("class_token" / "position_embedding" / "relative_position_bias_table",
// transformer_embedding_decay) when given. (torchvision's ViT names its position embedding
// "encoder.pos_embedding", which no key matches: there, as here, it stays in "other".)
std::vector<std::pair<std::string, double>> reference_custom_keys(
    std::optional<double> bias_weight_decay, std::optional<double> transformer_embedding_decay);

// An optimizer of type Opt (SGD, Adam, AdamW, RMSprop, ...) with one parameter group per
// weight-decay group: `base` for every group, its weight_decay replaced by the group's.
template <class Opt, class Options>
std::unique_ptr<Opt> make_grouped_optimizer(const std::vector<WeightDecayGroup>& groups,
                                            Options base) {
  COHORT_CHECK(!groups.empty(), "make_grouped_optimizer: no parameter to optimise");
  base.weight_decay = groups.front().weight_decay;
  auto opt = std::make_unique<Opt>(groups.front().params, base);
  for (std::size_t g = 1; g < groups.size(); ++g) {
    base.weight_decay = groups[g].weight_decay;
    opt->add_param_group(groups[g].params, base);
  }
  return opt;
}

}  // namespace cohort::train
