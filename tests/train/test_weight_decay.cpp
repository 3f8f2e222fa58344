// Weight-decay groups as torchvision's reference script splits a model (set_weight_decay), by hand
// from the state_dict names: ResNet-18 with --norm-weight-decay 0 --bias-weight-decay 0.5 (every
// bias, batch norms' included, in "bias": the custom keys come first), the ViT with
// --transformer-embedding-decay (class_token only: torchvision's name for the position embedding
// is pos_embedding), no norm decay given (batch norms stay in "other"); the optimizer built with
// one parameter group per weight-decay group, its hyper-parameters in the optimizer's state.
#include <doctest/doctest.h>

#include "../common/testing.hpp"
#include "cohort/devices.hpp"
#include "cohort/models.hpp"
#include "cohort/optim.hpp"
#include "cohort/train/weight_decay.hpp"

namespace train = cohort::train;

namespace {
bool ends_with(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}
bool contains(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }
}  // namespace

TEST_CASE("set_weight_decay: torchvision's split of ResNet-18 and the ViT") {
  auto& dev = cohort::host_device();
  auto resnet = cohort::models::make("resnet18", dev);
  const auto groups =
      train::set_weight_decay(*resnet, 1e-4, 0.0, train::reference_custom_keys(0.5, {}));
  REQUIRE(groups.size() == 3);
  CHECK(groups[0].key == "other");
  CHECK(groups[1].key == "norm");
  CHECK(groups[2].key == "bias");
  CHECK(groups[0].weight_decay == 1e-4);
  CHECK(groups[1].weight_decay == 0.0);
  CHECK(groups[2].weight_decay == 0.5);
  // By hand from the names, in named_parameters() order.
  std::vector<std::string> other, norm, bias;
  for (const auto& np : resnet->named_parameters()) {
    const bool bn = contains(np.name, "bn") || contains(np.name, "downsample.1");
    if (ends_with(np.name, ".bias")) bias.push_back(np.name);
    else if (bn) norm.push_back(np.name);
    else other.push_back(np.name);
  }
  CHECK(groups[0].names == other);
  CHECK(groups[1].names == norm);
  CHECK(groups[2].names == bias);
  CHECK(other.size() == 21);  // 20 convolutions and fc.weight
  CHECK(norm.size() == 20);   // 20 batch-norm weights
  CHECK(bias.size() == 21);   // 20 batch-norm biases and fc.bias

  // Without a norm decay the batch norms stay in "other"; empty groups are left out.
  const auto plain = train::set_weight_decay(*resnet, 1e-4);
  REQUIRE(plain.size() == 1);
  CHECK(plain[0].params.size() == resnet->named_parameters().size());

  auto vit = cohort::models::make("vit", dev);
  const auto vg = train::set_weight_decay(*vit, 0.05, {}, train::reference_custom_keys({}, 0.0));
  REQUIRE(vg.size() == 2);
  CHECK(vg[1].key == "class_token");
  CHECK(vg[1].names == std::vector<std::string>{"class_token"});
  CHECK(std::find(vg[0].names.begin(), vg[0].names.end(), "encoder.pos_embedding") !=
        vg[0].names.end());
  // With a norm decay: the LayerNorms' weights and biases.
  const auto vn = train::set_weight_decay(*vit, 0.05, 0.0);
  REQUIRE(vn.size() == 2);
  for (const auto& n : vn[1].names) CHECK((contains(n, "ln") || contains(n, "norm")));
  CHECK(vn[1].names.size() == 2 * (2 * 6 + 1));  // ln_1, ln_2 per layer, the final ln

  CHECK(cohort::testing::mentions(
      cohort::testing::error_of([&] {
        train::set_weight_decay(*resnet, 0.1, {}, {{"bias", 0.1}, {"bias", 0.2}});
      }),
      "key 'bias' given twice"));
}

TEST_CASE("make_grouped_optimizer: one parameter group per weight-decay group") {
  auto& dev = cohort::host_device();
  auto resnet = cohort::models::make("resnet18", dev);
  const auto groups =
      train::set_weight_decay(*resnet, 1e-4, 0.0, train::reference_custom_keys(0.5, {}));
  cohort::optim::SGDOptions o;
  o.lr = 0.1;
  o.momentum = 0.9;
  auto opt = train::make_grouped_optimizer<cohort::optim::SGD>(groups, o);
  REQUIRE(opt->num_param_groups() == 3);
  for (std::size_t g = 0; g < 3; ++g) {
    CHECK(opt->params(g).size() == groups[g].params.size());
    CHECK(opt->options(g).weight_decay == groups[g].weight_decay);
    CHECK(opt->options(g).momentum == 0.9);
  }
  const auto state = opt->state();
  CHECK(state.scalars.at("param_groups.2.weight_decay") == 0.5);
  CHECK(state.scalars.at("param_groups.1.weight_decay") == 0.0);
}
