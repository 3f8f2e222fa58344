// Golden vectors: every layer and loss against PyTorch 1.13 (tests/golden/layers.json, written by
// tests/golden/make_layers_golden.py in float64 from float32 inputs). Each case builds the module
// from the case's config, loads PyTorch's state_dict by name (strict: every key of ours must be in
// PyTorch's and the other way round, so naming is checked too), runs forward and backward, and
// compares the output, the input gradient, every parameter gradient and the buffers after the
// step.
//
// Tolerance: |got - want| <= 1e-5 |want| + floor, floor = 1e-6 * max(1, max |want| over the
// tensor). The floor is for values near zero, whose float32 result is a difference of O(max)
// terms and so carries an absolute error of a few ulps of the tensor's scale (2^-23 ~ 1.2e-7).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <set>
#include <string>

#include "golden.hpp"
#include "layer_testing.hpp"

namespace nn = cohort::nn;
using cohort::DType;
using cohort::Shape;
using cohort::Tensor;
using cohort::testing::GoldenFile;
using nlohmann::json;

namespace {

const GoldenFile& golden() {
  static const GoldenFile g(cohort::testing::golden_dir() + "/layers.json");
  return g;
}

std::int64_t at(const json& a, int i) { return a.at(i).get<std::int64_t>(); }

nn::ModulePtr build(const json& c) {
  cohort::Device& dev = lt::host();
  const std::string t = c.at("type");
  if (t == "Linear") return nn::make<nn::Linear>(c.at("in"), c.at("out"), dev, c.at("bias"));
  if (t == "Conv2d") {
    nn::Conv2dOptions o(c.at("in"), c.at("out"), at(c["kernel"], 0), at(c["kernel"], 1));
    o.stride(at(c["stride"], 0), at(c["stride"], 1))
        .padding(at(c["padding"], 0), at(c["padding"], 1))
        .dilation(at(c["dilation"], 0), at(c["dilation"], 1))
        .groups(c.at("groups"))
        .bias(c.at("bias"));
    return nn::make<nn::Conv2d>(o, dev);
  }
  if (t == "ReLU") return nn::make<nn::ReLU>();
  if (t == "LeakyReLU") return nn::make<nn::LeakyReLU>(c.at("negative_slope").get<float>());
  if (t == "GELU") return nn::make<nn::GELU>();
  if (t == "Sigmoid") return nn::make<nn::Sigmoid>();
  if (t == "Tanh") return nn::make<nn::Tanh>();
  if (t == "MaxPool2d") {
    nn::MaxPool2dOptions o(at(c["kernel"], 0), at(c["kernel"], 1));
    o.stride(at(c["stride"], 0), at(c["stride"], 1))
        .padding(at(c["padding"], 0), at(c["padding"], 1))
        .dilation(at(c["dilation"], 0), at(c["dilation"], 1));
    return nn::make<nn::MaxPool2d>(o);
  }
  if (t == "AvgPool2d") {
    nn::AvgPool2dOptions o(at(c["kernel"], 0), at(c["kernel"], 1));
    o.stride(at(c["stride"], 0), at(c["stride"], 1))
        .padding(at(c["padding"], 0), at(c["padding"], 1))
        .count_include_pad(c.at("count_include_pad"));
    return nn::make<nn::AvgPool2d>(o);
  }
  if (t == "AdaptiveAvgPool2d")
    return nn::make<nn::AdaptiveAvgPool2d>(at(c["output"], 0), at(c["output"], 1));
  if (t == "BatchNorm2d") {
    nn::BatchNormOptions o;
    o.eps = c.at("eps");
    o.momentum = c.at("momentum").is_null() ? std::nullopt
                                            : std::optional<float>(c.at("momentum").get<float>());
    o.affine = c.at("affine");
    o.track_running_stats = c.at("track_running_stats");
    return nn::make<nn::BatchNorm2d>(c.at("features"), dev, o);
  }
  if (t == "Dropout") return nn::make<nn::Dropout>(c.at("p").get<float>());
  if (t == "Flatten") return nn::make<nn::Flatten>(c.at("start_dim"), c.at("end_dim"));
  if (t == "Softmax") return nn::make<nn::Softmax>(c.at("dim"));
  if (t == "LogSoftmax") return nn::make<nn::LogSoftmax>(c.at("dim"));
  if (t == "LayerNorm")
    return nn::make<nn::LayerNorm>(c.at("normalized_shape").get<std::vector<std::int64_t>>(), dev,
                                   c.at("eps").get<float>(), c.at("affine"));
  if (t == "Sequential") {
    auto s = nn::make<nn::Sequential>();
    for (const auto& child : c.at("children")) s->add(child.at(0), build(child.at(1)));
    return s;
  }
  if (t == "Residual")
    return nn::make<nn::Residual>(build(c.at("block")),
                                  c.at("shortcut").is_null() ? nullptr : build(c.at("shortcut")));
  FAIL("unknown module type in golden file: " << t);
  return nullptr;
}

// A golden tensor as a host tensor of `dtype` (golden data is stored as numbers).
Tensor load(const std::string& cs, const std::string& name, DType dtype = DType::f32) {
  const auto g = golden().tensor(cs, name);
  if (dtype == DType::i64) {
    std::vector<std::int64_t> v(g.data.begin(), g.data.end());
    return Tensor::from_vector(v, g.as_shape(), lt::host());
  }
  return Tensor::from_vector(g.data, g.as_shape(), lt::host());
}

// Compares `got` with golden tensor `name`; returns the worst error relative to the tolerance.
double expect_close(const std::string& cs, const std::string& name, const Tensor& got) {
  const auto want = golden().tensor(cs, name);
  CAPTURE(cs);
  CAPTURE(name);
  REQUIRE(got.shape() == want.as_shape());
  std::vector<double> g;
  if (got.dtype() == DType::i64) {
    for (auto v : got.to_vector<std::int64_t>()) g.push_back(static_cast<double>(v));
  } else {
    for (auto v : got.to_vector<float>()) g.push_back(v);
  }
  double scale = 1.0;
  for (float w : want.data) scale = std::max(scale, std::fabs(static_cast<double>(w)));
  const double floor = 1e-6 * scale;
  double worst = 0.0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double w = want.data[i];
    const double tol = 1e-5 * std::fabs(w) + floor;
    const double err = std::fabs(g[i] - w);
    worst = std::max(worst, err / tol);
    if (!(err <= tol)) {
      FAIL_CHECK(cs << " " << name << "[" << i << "]: got " << g[i] << ", PyTorch " << w
                    << " (|diff| " << err << " > tolerance " << tol << ")");
      break;
    }
  }
  return worst;
}

bool is_loss_case(const std::string& cs) { return golden().config(cs).contains("loss"); }

// The tensor names of a case, read from the file directly (GoldenFile looks tensors up by name).
std::vector<std::string> golden_tensor_names(const std::string& cs) {
  static const json all = [] {
    std::ifstream in(cohort::testing::golden_dir() + "/layers.json");
    json j;
    in >> j;
    return j;
  }();
  std::vector<std::string> out;
  for (const auto& [k, v] : all.at("cases").at(cs).at("tensors").items()) out.push_back(k);
  return out;
}

}  // namespace

TEST_SUITE("golden") {

TEST_CASE("layers match PyTorch 1.13") {
  int cases = 0;
  double worst = 0.0;
  for (const std::string& cs : golden().cases()) {
    if (is_loss_case(cs)) continue;
    CAPTURE(cs);
    ++cases;
    const json& cfg = golden().config(cs);
    nn::ModulePtr m = build(cfg.at("module"));
    m->train(cfg.at("train").get<bool>());
    // Load PyTorch's state_dict by name, strictly.
    std::vector<nn::NamedTensor> state;
    for (const auto& e : m->state_dict())
      state.push_back({e.name, load(cs, e.name, e.tensor.dtype())});
    m->load_state_dict(state, true);
    const Tensor x = load(cs, "input");
    const Tensor y = m->forward(x);
    worst = std::max(worst, expect_close(cs, "output", y));
    const Tensor dx = m->backward(load(cs, "grad_output"));
    worst = std::max(worst, expect_close(cs, "grad_input", dx));
    for (const auto& np : m->named_parameters())
      worst = std::max(worst, expect_close(cs, "grad." + np.name, np.param->grad));
    for (const auto& b : m->named_buffers())
      worst = std::max(worst, expect_close(cs, "after." + b.name, b.tensor));
  }
  CHECK(cases >= 40);
  MESSAGE(cases << " layer cases; worst error / tolerance " << worst);
}

TEST_CASE("golden state_dict keys are exactly ours") {
  // The reverse direction of the strict load above: PyTorch has no key we lack.
  for (const std::string& cs : golden().cases()) {
    if (is_loss_case(cs)) continue;
    CAPTURE(cs);
    nn::ModulePtr m = build(golden().config(cs).at("module"));
    std::set<std::string> ours;
    for (const auto& e : m->state_dict()) ours.insert(e.name);
    for (const auto& e : m->named_parameters()) ours.insert("grad." + e.name);
    for (const auto& e : m->named_buffers()) ours.insert("after." + e.name);
    for (const char* fixed : {"input", "output", "grad_output", "grad_input"}) ours.insert(fixed);
    for (const auto& n : golden_tensor_names(cs))
      CHECK_MESSAGE(ours.count(n) == 1, "PyTorch tensor '" << n << "' has no counterpart");
  }
}

TEST_CASE("losses match PyTorch 1.13") {
  int cases = 0;
  double worst = 0.0;
  for (const std::string& cs : golden().cases()) {
    if (!is_loss_case(cs)) continue;
    CAPTURE(cs);
    ++cases;
    const json& cfg = golden().config(cs);
    const std::string kind = cfg.at("loss");
    const nn::Reduction red =
        cfg.at("reduction") == "sum" ? nn::Reduction::sum : nn::Reduction::mean;
    std::unique_ptr<nn::Loss> loss;
    if (kind == "CrossEntropyLoss") loss = std::make_unique<nn::CrossEntropyLoss>(red);
    if (kind == "NLLLoss") loss = std::make_unique<nn::NLLLoss>(red);
    if (kind == "MSELoss") loss = std::make_unique<nn::MSELoss>(red);
    REQUIRE(loss != nullptr);
    const Tensor x = load(cs, "input");
    const Tensor t = load(cs, "target", kind == "MSELoss" ? DType::f32 : DType::i64);
    worst = std::max(worst, expect_close(cs, "output", loss->forward(x, t)));
    worst = std::max(worst, expect_close(cs, "grad_input", loss->backward()));
  }
  CHECK(cases >= 8);
  MESSAGE(cases << " loss cases; worst error / tolerance " << worst);
}

}  // TEST_SUITE
