// The zoo's vision transformer (models/vit.cpp), one suite per ctest entry (models_vit_<suite>):
//   names    the state_dict names and shapes, in order, are torchvision's (tests/golden/vit.json,
//            "zoo_state_dict", written by tests/golden/make_vit_golden.py); the registry makes it;
//   golden   a small ViT's forward and backward against torchvision's VisionTransformer with the
//            same weights (every parameter gradient, the input gradient);
//   fd       a small ViT (image 8, patch 4: 4 tokens + the class token) against finite
//            differences;
//   train    the zoo ViT (32x32) takes 5 Adam steps on a fixed batch of 8 and the loss goes down;
//   errors   bad configurations and inputs name the model.
// "timing" (skipped unless --no-skip) prints the forward + backward time of a batch of 64.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "cohort/core/ops.hpp"
#include "cohort/devices.hpp"
#include "cohort/layers.hpp"
#include "cohort/models.hpp"
#include "cohort/optim.hpp"
#include "golden_compare.hpp"
#include "layer_testing.hpp"

namespace nn = cohort::nn;
namespace models = cohort::models;
using cohort::Shape;
using cohort::Tensor;
using cohort::testing::GoldenFile;

namespace {

std::string golden_path() { return cohort::testing::golden_dir() + "/vit.json"; }

const GoldenFile& golden() {
  static const GoldenFile g(golden_path());
  return g;
}

models::ViTConfig vit_config(const nlohmann::json& c) {
  models::ViTConfig v;
  v.image_size = c.at("image_size");
  v.patch_size = c.at("patch_size");
  v.num_layers = c.at("num_layers");
  v.num_heads = c.at("num_heads");
  v.hidden_dim = c.at("hidden_dim");
  v.mlp_dim = c.at("mlp_dim");
  v.num_classes = c.at("num_classes");
  return v;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// image 8, patch 4 (2 x 2 patches + the class token), 2 blocks of 4 heads, hidden 16, MLP 32.
models::ViTConfig small_config() {
  models::ViTConfig c;
  c.image_size = 8;
  c.num_layers = 2;
  c.num_heads = 4;
  c.hidden_dim = 16;
  c.mlp_dim = 32;
  c.num_classes = 5;
  return c;
}

}  // namespace

TEST_SUITE("names") {

TEST_CASE("the zoo ViT's state_dict is torchvision's, name by name, in order") {
  std::ifstream in(golden_path());
  REQUIRE(in.good());
  nlohmann::json j;
  in >> j;
  const auto& zoo = j.at("zoo_state_dict");
  const auto& cfg = zoo.at("config");
  // The golden config is the zoo's: patch 4, 6 layers, 8 heads, hidden 256, MLP 512, 32x32, K=10.
  const models::ViTConfig want_cfg = vit_config(cfg);
  const models::ViTConfig zoo_cfg;
  CHECK(want_cfg.patch_size == zoo_cfg.patch_size);
  CHECK(want_cfg.num_layers == zoo_cfg.num_layers);
  CHECK(want_cfg.num_heads == zoo_cfg.num_heads);
  CHECK(want_cfg.hidden_dim == zoo_cfg.hidden_dim);
  CHECK(want_cfg.mlp_dim == zoo_cfg.mlp_dim);

  models::ModelConfig mc;
  mc.num_classes = cfg.at("num_classes");
  mc.image_size = cfg.at("image_size");
  const nn::ModulePtr model = models::make("vit", lt::host(), mc);
  const auto state = model->state_dict();
  const auto& entries = zoo.at("entries");
  REQUIRE(state.size() == entries.size());
  for (std::size_t i = 0; i < state.size(); ++i) {
    CAPTURE(i);
    CHECK(state[i].name == entries[i].at(0).get<std::string>());
    CHECK(state[i].tensor.shape() == Shape(entries[i].at(1).get<std::vector<std::int64_t>>()));
  }
  CHECK(model->num_parameters() == 3'195'146);  // torchvision's count for this configuration
}

TEST_CASE("the registry knows the ViT; torchvision's initialisation") {
  bool listed = false;
  for (const auto& n : models::names()) listed = listed || n == "vit";
  CHECK(listed);
  nn::manual_seed(3);
  const nn::ModulePtr m = models::vit(lt::host());
  auto param = [&](const std::string& name) {
    for (const auto& np : m->named_parameters())
      if (np.name == name) return np.param->value.to_vector<float>();
    FAIL("no parameter " << name);
    return std::vector<float>{};
  };
  auto max_abs = [](const std::vector<float>& v) {
    float a = 0.0f;
    for (float x : v) a = std::max(a, std::fabs(x));
    return a;
  };
  auto rms = [](const std::vector<float>& v) {
    double s = 0.0;
    for (float x : v) s += static_cast<double>(x) * x;
    return std::sqrt(s / static_cast<double>(v.size()));
  };
  CHECK(max_abs(param("class_token")) == 0.0f);
  CHECK(max_abs(param("heads.head.weight")) == 0.0f);
  CHECK(max_abs(param("heads.head.bias")) == 0.0f);
  CHECK(max_abs(param("conv_proj.bias")) == 0.0f);
  CHECK(rms(param("conv_proj.weight")) == doctest::Approx(std::sqrt(1.0 / 48)).epsilon(0.05));
  CHECK(max_abs(param("conv_proj.weight")) <= 2.0f);
  CHECK(rms(param("encoder.pos_embedding")) == doctest::Approx(0.02).epsilon(0.05));
  CHECK(max_abs(param("encoder.layers.encoder_layer_0.self_attention.in_proj_bias")) == 0.0f);
  CHECK(max_abs(param("encoder.layers.encoder_layer_0.mlp.0.bias")) < 1e-5f);
  CHECK(max_abs(param("encoder.layers.encoder_layer_0.mlp.0.weight")) <=
        static_cast<float>(std::sqrt(6.0 / (256 + 512))));
}

TEST_CASE("grad-ready hooks: once per parameter, in reverse state_dict order") {
  const nn::ModulePtr m = models::vision_transformer(lt::host(), small_config());
  std::vector<std::string> order;
  m->register_grad_ready_hook([&](const cohort::NamedParameter& p) { order.push_back(p.name); });
  const Tensor y = m->forward(lt::uniform({2, 3, 8, 8}, -1, 1, 4));
  m->backward(lt::uniform(y.shape(), -1, 1, 5), false);
  std::vector<std::string> want;
  const auto params = m->named_parameters();
  for (auto it = params.rbegin(); it != params.rend(); ++it) want.push_back(it->name);
  CHECK(order == want);
}

}  // TEST_SUITE names

TEST_SUITE("golden") {

TEST_CASE("a small ViT matches torchvision forward and backward") {
  const GoldenFile& g = golden();
  int cases = 0;
  double worst = 0.0;
  for (const std::string& cs : g.cases()) {
    const auto& cfg = g.config(cs);
    if (!cfg.contains("vit")) continue;
    CAPTURE(cs);
    ++cases;
    const nn::ModulePtr m = models::vision_transformer(lt::host(), vit_config(cfg.at("vit")));
    worst = std::max(worst, golden_cmp::run_module_case(g, cs, *m, lt::host()));
  }
  CHECK(cases == 1);
  MESSAGE("ViT: worst error / tolerance " << worst);
}

}  // TEST_SUITE golden

TEST_SUITE("fd") {

TEST_CASE("a small ViT against finite differences") {
  nn::manual_seed(7);
  const nn::ModulePtr m = models::vision_transformer(lt::host(), small_config());
  // torchvision zeroes the class token and the head, which would leave every other gradient 0.
  for (const auto& np : m->named_parameters())
    if (np.name == "class_token" || np.name.rfind("heads.head.", 0) == 0)
      np.param->value.copy_from(lt::uniform(np.param->value.shape(), -0.5f, 0.5f, 8));
  lt::check_module(*m, lt::uniform({2, 3, 8, 8}, -1, 1, 9));
}

}  // TEST_SUITE fd

TEST_SUITE("train") {

TEST_CASE("the zoo ViT learns a fixed batch: 5 Adam steps lower the loss") {
  nn::manual_seed(11);
  cohort::Device& dev = lt::host();
  const nn::ModulePtr model = models::make("vit", dev, {});
  cohort::optim::AdamOptions ao;
  ao.lr = 1e-3;
  cohort::optim::Adam opt(model->parameters(), ao);
  nn::CrossEntropyLoss criterion;
  const Tensor images = lt::uniform({8, 3, 32, 32}, -1, 1, 12);
  const Tensor labels = lt::labels(8, 10, 13);
  std::vector<float> losses;
  for (int step = 0; step < 5; ++step) {
    opt.zero_grad();
    losses.push_back(criterion.forward(model->forward(images), labels).item());
    model->backward(criterion.backward(), /*need_input_grad=*/false);
    opt.step();
  }
  const float final_loss = criterion.forward(model->forward(images), labels).item();
  std::string trace;
  for (float l : losses) trace += std::to_string(l) + " ";
  MESSAGE("losses: " << trace << "-> " << final_loss);
  CHECK(losses[0] == doctest::Approx(std::log(10.0)).epsilon(1e-6));  // the zero head: uniform
  for (std::size_t i = 1; i < losses.size(); ++i) CHECK(losses[i] < losses[i - 1]);
  CHECK(final_loss < losses.back());
  CHECK(final_loss < 0.8f * losses[0]);
}

}  // TEST_SUITE train

TEST_SUITE("errors") {

TEST_CASE("bad configurations and inputs name the model") {
  models::ViTConfig c = small_config();
  c.image_size = 30;
  CHECK(contains(lt::error_of([&] { models::vision_transformer(lt::host(), c); }),
                 "VisionTransformer: image_size 30 is not divisible by patch_size 4"));
  CHECK(contains(lt::error_of([] { models::make("vit", lt::host(), {10, 3, 30}); }),
                 "VisionTransformer: image_size 30 is not divisible by patch_size 4"));
  c = small_config();
  c.hidden_dim = 18;
  CHECK(contains(lt::error_of([&] { models::vision_transformer(lt::host(), c); }),
                 "VisionTransformer: hidden_dim 18 is not divisible by num_heads 4"));
  c = small_config();
  c.num_classes = 0;
  CHECK(contains(lt::error_of([&] { models::vision_transformer(lt::host(), c); }),
                 "must be positive"));
  const nn::ModulePtr m = models::vision_transformer(lt::host(), small_config());
  CHECK(contains(lt::error_of([&] { m->forward(lt::uniform({2, 3, 16, 16}, -1, 1, 1)); }),
                 "VisionTransformer: expected input [N, 3, 8, 8], got [2, 3, 16, 16]"));
  CHECK(contains(lt::error_of([&] { m->forward(lt::uniform({2, 1, 8, 8}, -1, 1, 1)); }),
                 "expected input [N, 3, 8, 8], got [2, 1, 8, 8]"));
  CHECK(contains(lt::error_of([&] { m->output_shape(Shape{2, 3, 8}); }),
                 "VisionTransformer: expected input [N, 3, 8, 8], got [2, 3, 8]"));
  CHECK(m->output_shape(Shape{4, 3, 8, 8}) == Shape{4, 5});
}

TEST_CASE("summary lists every layer with its output shape") {
  const nn::ModulePtr m = models::vision_transformer(lt::host(), small_config());
  const std::string s = m->summary(Shape{2, 3, 8, 8});
  CHECK(contains(s, "conv_proj (Conv2d)"));
  CHECK(contains(s, "[2, 16, 2, 2]"));
  CHECK(contains(s, "encoder.layers.encoder_layer_1.self_attention (MultiheadAttention)"));
  CHECK(contains(s, "encoder.layers.encoder_layer_1.mlp.3 (Linear)"));
  CHECK(contains(s, "heads.head (Linear)"));
  CHECK(contains(s, "[2, 5]"));
  CHECK(contains(s, "Total params: "));
}

}  // TEST_SUITE errors

// One host thread, as torch.set_num_threads(1) (THREADS=n to change), so the number compares
// with PyTorch's for the same model.
TEST_CASE("timing: the zoo ViT, forward + backward of a batch of 64 at 32x32" * doctest::skip()) {
  const char* threads = std::getenv("THREADS");
  cohort::set_host_threads(threads ? std::atoi(threads) : 1);
  MESSAGE(cohort::host_threads().threads << " host thread(s)");
  cohort::Device& dev = lt::host();
  const nn::ModulePtr model = models::vit(dev);
  const Tensor images = lt::uniform({64, 3, 32, 32}, -1, 1, 21);
  const Tensor labels = lt::labels(64, 10, 22);
  nn::CrossEntropyLoss criterion;
  double best = 1e9;
  for (int i = 0; i < 4; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    model->zero_grad();
    criterion.forward(model->forward(images), labels);
    model->backward(criterion.backward(), false);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    MESSAGE("forward + backward: " << s * 1e3 << " ms");
    best = std::min(best, s);
  }
  MESSAGE("best of 4: " << best * 1e3 << " ms");
}
