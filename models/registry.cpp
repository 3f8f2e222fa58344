// The zoo by name: one table, so make(), names() and the error for an unknown name agree.
#include <functional>
#include <utility>

#include "cohort/core/error.hpp"
#include "cohort/models.hpp"

namespace cohort::models {
namespace {
using Factory = std::function<nn::ModulePtr(Device&, const ModelConfig&)>;
const std::vector<std::pair<std::string, Factory>>& table() {
  static const std::vector<std::pair<std::string, Factory>> t = {
      {"cnn_a", cnn_a}, {"cnn_b", cnn_b}, {"resnet9", resnet9}, {"resnet50", resnet50},
      {"vit", vit}, {"resnet18", resnet18}, {"resnet34", resnet34}, {"resnet101", resnet101},
      {"resnet152", resnet152}, {"wide_resnet50_2", wide_resnet50_2},
      {"mnist_net", [](Device& d, const ModelConfig& c) { return mnist_net(d, c); }}};
  return t;
}
}  // namespace

std::vector<std::string> names() {
  std::vector<std::string> n;
  for (const auto& [name, f] : table()) n.push_back(name);
  return n;
}

nn::ModulePtr make(const std::string& name, Device& device, const ModelConfig& config) {
  for (const auto& [n, f] : table())
    if (n == name) return f(device, config);
  std::string known;
  for (const auto& n : names()) known += (known.empty() ? "" : ", ") + n;
  COHORT_FAIL("unknown model '", name, "' (known: ", known, ")");
}

}  // namespace cohort::models
