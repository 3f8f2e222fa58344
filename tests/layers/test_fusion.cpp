// Sequential's fusion of neighbouring layers (Linear + activation, activation + Dropout), and
// EncoderBlock's residual adds in its second layer norm's passes, against the same model with
// fusion off: outputs, input gradients, every parameter gradient and the
// grad-ready hooks' order must be identical, bit for bit, over training steps (fresh dropout masks)
// and in evaluation; last_fusions() shows each fusion happened, so the comparison is not vacuous.
// The fused passes' values against an independent reference are the parity table's rows
// (tests/parity/parity_rows_fused.cpp). Conv2d + activation: test_module.cpp.
#include <cstdlib>

#include "cohort/core/layer_ops.hpp"
#include "layer_testing.hpp"

namespace nn = cohort::nn;
using cohort::Shape;
using cohort::Tensor;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::shared_ptr<nn::Sequential> mlp() {
  cohort::Device& d = lt::host();
  nn::manual_seed(21);
  return nn::sequential({{"fc1", nn::make<nn::Linear>(12, 16, d)},
                         {"relu1", nn::make<nn::ReLU>()},
                         {"drop1", nn::make<nn::Dropout>(0.5f)},
                         {"fc2", nn::make<nn::Linear>(16, 37, d)},
                         {"gelu", nn::make<nn::GELU>()},
                         {"fc3", nn::make<nn::Linear>(37, 16, d)},
                         {"sigmoid", nn::make<nn::Sigmoid>()},
                         {"drop2", nn::make<nn::Dropout>(0.3f)},
                         {"fc4", nn::make<nn::Linear>(16, 8, d)},
                         {"tanh", nn::make<nn::Tanh>()},
                         {"fc5", nn::make<nn::Linear>(8, 8, d, /*bias=*/false)},
                         {"leaky", nn::make<nn::LeakyReLU>(0.2f)},
                         {"drop3", nn::make<nn::Dropout>(0.25f)},
                         {"fc6", nn::make<nn::Linear>(8, 6, d)},
                         {"relu2", nn::make<nn::ReLU>()}});
}

// One forward and backward of both models; everything they produce must have the same bits.
void same_step(nn::Sequential& fused, nn::Sequential& plain, std::uint64_t seed) {
  std::vector<std::string> hooks_f, hooks_p;
  fused.clear_grad_ready_hooks();
  plain.clear_grad_ready_hooks();
  fused.register_grad_ready_hook(
      [&](const cohort::NamedParameter& p) { hooks_f.push_back(p.name); });
  plain.register_grad_ready_hook(
      [&](const cohort::NamedParameter& p) { hooks_p.push_back(p.name); });
  const Tensor x = lt::uniform({5, 3, 12}, -2, 2, seed);
  const Tensor yf = fused.forward(x), yp = plain.forward(x);
  REQUIRE(yf.shape() == Shape{5, 3, 6});
  CHECK(yf.to_vector<float>() == yp.to_vector<float>());
  const Tensor g = lt::uniform(yf.shape(), -1, 1, seed + 1);
  CHECK(fused.backward(g).to_vector<float>() == plain.backward(g).to_vector<float>());
  const auto pf = fused.named_parameters(), pp = plain.named_parameters();
  REQUIRE(pf.size() == pp.size());
  for (std::size_t i = 0; i < pf.size(); ++i) {
    CAPTURE(pf[i].name);
    CHECK(pf[i].param->grad.to_vector<float>() == pp[i].param->grad.to_vector<float>());
  }
  CHECK(hooks_f == hooks_p);
  std::size_t trained = 0;
  for (const auto& p : pf) trained += p.param->requires_grad;
  CHECK(hooks_f.size() == trained);
}

}  // namespace

TEST_SUITE("module") {
  TEST_CASE("Linear, activation and Dropout fusion gives the unfused bits") {
    auto fused = mlp(), plain = mlp();
    plain->set_fusion(false);
    // Training: each activation before an applied Dropout goes into its pass; the other Linear +
    // activation pairs fuse the bias (ReLU/Sigmoid/Tanh both ways, GELU in backward only); fc5 has
    // no bias, so its LeakyReLU fuses with drop3 instead.
    for (std::uint64_t step = 0; step < 3; ++step) {  // three masks; gradients accumulate
      CAPTURE(step);
      same_step(*fused, *plain, 10 + step);
    }
    CHECK(fused->last_fusions() ==
          std::vector<std::string>{"relu1+drop1 act_dropout", "fc2+gelu linear_bias_grad",
                                   "sigmoid+drop2 act_dropout", "fc4+tanh linear_act",
                                   "leaky+drop3 act_dropout", "fc6+relu2 linear_act"});
    CHECK(plain->last_fusions().empty());
    // Evaluation: the Dropouts drop nothing, so the Linears take their activations.
    fused->eval();
    plain->eval();
    same_step(*fused, *plain, 20);
    CHECK(fused->last_fusions() ==
          std::vector<std::string>{"fc1+relu1 linear_act", "fc2+gelu linear_bias_grad",
                                   "fc3+sigmoid linear_act", "fc4+tanh linear_act",
                                   "fc6+relu2 linear_act"});
    // A frozen bias: the forward fusion stays, the backward one steps aside.
    fused->train();
    plain->train();
    for (auto* m : {fused.get(), plain.get()})
      for (auto& p : m->named_parameters())
        if (p.name == "fc4.bias" || p.name == "fc2.bias") p.param->requires_grad = false;
    same_step(*fused, *plain, 30);
  }

  TEST_CASE("EncoderBlock's residual adds in ln_2's passes give the unfused bits") {
    // Two blocks in a row (the second's input is the first's fused output), with dropout so the
    // MLP's own fusions run too; the plain model has fusion off everywhere.
    auto build = [](bool fused) {
      nn::manual_seed(31);
      auto net = nn::sequential(
          {{"b0", nn::make<nn::EncoderBlock>(16, 4, 24, lt::host(),
                                             nn::EncoderBlockOptions().dropout(0.25f))},
           {"b1", nn::make<nn::EncoderBlock>(16, 4, 24, lt::host())}});
      if (!fused) {
        net->set_fusion(false);
        for (const auto& [name, child] : net->children()) {
          auto& b = static_cast<nn::EncoderBlock&>(*child);
          b.set_fusion(false);
          b.mlp()->set_fusion(false);
        }
      }
      return net;
    };
    auto fused = build(true), plain = build(false);
    CHECK(static_cast<nn::EncoderBlock&>(*fused->children()[0].second).fusion());
    for (std::uint64_t step = 0; step < 2; ++step) {
      CAPTURE(step);
      std::vector<std::string> hooks_f, hooks_p;
      fused->clear_grad_ready_hooks();
      plain->clear_grad_ready_hooks();
      fused->register_grad_ready_hook(
          [&](const cohort::NamedParameter& p) { hooks_f.push_back(p.name); });
      plain->register_grad_ready_hook(
          [&](const cohort::NamedParameter& p) { hooks_p.push_back(p.name); });
      const Tensor x = lt::uniform({3, 5, 16}, -2, 2, 50 + step);
      const Tensor yf = fused->forward(x), yp = plain->forward(x);
      CHECK(yf.to_vector<float>() == yp.to_vector<float>());
      const Tensor g = lt::uniform(yf.shape(), -1, 1, 60 + step);
      CHECK(fused->backward(g).to_vector<float>() == plain->backward(g).to_vector<float>());
      const auto pf = fused->named_parameters(), pp = plain->named_parameters();
      for (std::size_t i = 0; i < pf.size(); ++i) {
        CAPTURE(pf[i].name);
        CHECK(pf[i].param->grad.to_vector<float>() == pp[i].param->grad.to_vector<float>());
      }
      CHECK(hooks_f == hooks_p);
    }
    // Without gradients the fused forward still returns the block's output (its sum is the
    // block's, not ln_2's saved state, which NoGradGuard drops).
    fused->eval();
    plain->eval();
    const Tensor x = lt::uniform({2, 5, 16}, -2, 2, 70);
    nn::NoGradGuard no_grad;
    CHECK(fused->forward(x).to_vector<float>() == plain->forward(x).to_vector<float>());
  }

  TEST_CASE("a failed fused forward leaves no fusion pending") {
    auto fused = mlp(), plain = mlp();
    plain->set_fusion(false);
    // The wrong feature count fails in fc1, before any fused pair ran.
    CHECK(contains(lt::error_of([&] {
                     fused->forward(lt::uniform({2, 11}, -1, 1, 3));
                   }),
                   "expected input [*, 12]"));
    // A bf16 input into the fused ReLU + Dropout pair fails in the activation; then a standalone
    // use of that activation and dropout must run unfused.
    nn::Sequential pair;
    pair.add("relu", nn::make<nn::ReLU>()).add("drop", nn::make<nn::Dropout>(0.5f));
    Tensor bad = Tensor::empty(Shape{4, 4}, cohort::DType::bf16, lt::host());
    cohort::ops::cast(lt::uniform({4, 4}, -1, 1, 4), bad);
    CHECK(contains(lt::error_of([&] { pair.forward(bad); }), "input must be f32"));
    const Tensor x = lt::uniform({4, 4}, -1, 1, 5);
    const Tensor r = pair[0]->forward(x);
    for (float v : r.to_vector<float>()) CHECK(v >= 0.0f);  // ReLU applied, not passed through
    same_step(*fused, *plain, 40);
  }

  TEST_CASE("COHORT_FUSION turns fusion off, and a bad value is refused") {
    ::setenv("COHORT_FUSION", "off", 1);
    CHECK_FALSE(nn::Sequential().fusion());
    CHECK_FALSE(nn::EncoderBlock(8, 2, 16, lt::host()).fusion());
    ::setenv("COHORT_FUSION", "yes", 1);
    const std::string bad = lt::error_of([] { nn::Sequential(); });
    const std::string bad_block = lt::error_of([] { nn::EncoderBlock(8, 2, 16, lt::host()); });
    ::setenv("COHORT_FUSION", "on", 1);
    CHECK(nn::Sequential().fusion());
    ::unsetenv("COHORT_FUSION");
    CHECK(nn::Sequential().fusion());
    CHECK(nn::EncoderBlock(8, 2, 16, lt::host()).fusion());
    for (const std::string& e : {bad, bad_block})
      CHECK_MESSAGE(contains(e,
                             "COHORT_FUSION='yes' is not a fusion setting: use on (the default) "
                             "or off"),
                    e);
  }

  TEST_CASE("the fused ops refuse what they cannot serve, naming the argument") {
    cohort::DropoutArgs a;
    a.p = 0.5f;
    Tensor dy = lt::uniform({8}, -1, 1, 6),
           dx = Tensor::empty(Shape{8}, cohort::DType::f32, lt::host());
    CHECK(contains(lt::error_of([&] {
                     cohort::ops::dropout_backward(a, dy, dx, cohort::Activation::gelu, 0.0f);
                   }),
                   "dropout_backward: the fused activation gelu needs its input x"));
    Tensor x = lt::uniform({7}, -1, 1, 7);
    const std::string wrong_x = lt::error_of(
        [&] { cohort::ops::dropout_backward(a, dy, dx, cohort::Activation::relu, 0.0f, &x); });
    CHECK_MESSAGE(contains(wrong_x, "dropout_backward: 'x' is [7], expected [8]"), wrong_x);
    Tensor db = Tensor::zeros({3}, cohort::DType::f32, lt::host());
    Tensor y = lt::uniform({2, 4}, -1, 1, 8), g = lt::uniform({2, 4}, -1, 1, 9);
    Tensor d = Tensor::empty(Shape{2, 4}, cohort::DType::f32, lt::host());
    const std::string wrong_db = lt::error_of([&] {
      cohort::ops::bias_act_backward(cohort::Activation::relu, 0.0f, y, y, g, d, db, -1);
    });
    CHECK_MESSAGE(contains(wrong_db, "bias_act_backward: 'dbias' is [3], expected [4]"), wrong_db);
    // layer norm's fused adds: the residual needs somewhere to write the sum, dx_add a dx.
    Tensor m = Tensor::empty(Shape{2}, cohort::DType::f32, lt::host()),
           r = Tensor::empty(Shape{2}, cohort::DType::f32, lt::host());
    const std::string no_sum = lt::error_of([&] {
      cohort::ops::layer_norm_forward(y, 4, nullptr, nullptr, d, m, r, 1e-5f, &g, nullptr);
    });
    CHECK_MESSAGE(contains(no_sum,
                           "layer_norm_forward: residual and sum come together (sum = x + "
                           "residual is normalised), got a residual without a sum"),
                  no_sum);
    const std::string no_dx = lt::error_of([&] {
      cohort::ops::layer_norm_backward(y, g, 4, nullptr, m, r, nullptr, nullptr, nullptr, &g);
    });
    CHECK_MESSAGE(contains(no_dx,
                           "layer_norm_backward: dx_add is added to dx, and no dx was asked "
                           "for"),
                  no_dx);
  }

}  // TEST_SUITE
