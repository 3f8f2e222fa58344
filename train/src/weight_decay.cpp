// set_weight_decay (weight_decay.hpp): the reference script's split of a model's parameters into
// weight-decay groups.
#include "cohort/train/weight_decay.hpp"

#include <map>

#include "cohort/core/error.hpp"

namespace cohort::train {
namespace {

bool is_norm(const nn::Module& m) {
  const std::string& t = m.type_name();
  return t == "BatchNorm2d" || t == "LayerNorm" || t == "GroupNorm" || t == "SyncBatchNorm";
}

}  // namespace

std::vector<WeightDecayGroup> set_weight_decay(
    const nn::Module& model, double weight_decay, std::optional<double> norm_weight_decay,
    const std::vector<std::pair<std::string, double>>& custom_keys) {
  std::vector<WeightDecayGroup> groups = {{"other", {}, {}, weight_decay},
                                          {"norm", {}, {}, norm_weight_decay.value_or(0.0)}};
  for (const auto& [key, wd] : custom_keys) {
    for (const auto& g : groups)
      COHORT_CHECK(g.key != key, "set_weight_decay: key '", key, "' given twice");
    groups.push_back({key, {}, {}, wd});
  }
  // Names as state_dict's: the parameters' order is named_parameters()'s, which is the walk's.
  const auto named = model.named_parameters();
  std::map<const Parameter*, std::string> name_of;
  for (const auto& np : named) name_of[np.param.get()] = np.name;
  const auto walk = [&](const auto& self, const nn::Module& m) -> void {
    for (const auto& [name, p] : m.own_parameters()) {
      if (!p->requires_grad) continue;
      WeightDecayGroup* to = nullptr;
      for (std::size_t k = 2; k < groups.size() && !to; ++k)
        if (groups[k].key == name) to = &groups[k];
      if (!to) to = norm_weight_decay && is_norm(m) ? &groups[1] : &groups[0];
      to->params.push_back(p);
      to->names.push_back(name_of.count(p.get()) ? name_of[p.get()] : name);
    }
    for (const auto& child : m.children()) self(self, *child.second);
  };
  walk(walk, model);
  std::vector<WeightDecayGroup> out;
  for (auto& g : groups)
    if (!g.params.empty()) out.push_back(std::move(g));
  return out;
}

std::vector<std::pair<std::string, double>> reference_custom_keys(
    std::optional<double> bias_weight_decay, std::optional<double> transformer_embedding_decay) {
  std::vector<std::pair<std::string, double>> keys;
  if (bias_weight_decay) keys.emplace_back("bias", *bias_weight_decay);
  if (transformer_embedding_decay)
    for (const char* k : {"class_token", "position_embedding", "relative_position_bias_table"})
      keys.emplace_back(k, *transformer_embedding_decay);
  return keys;
}

}  // namespace cohort::train
