// Comparison of a computed tensor with a golden one, and the module-case runner, shared by the
// golden tests of the transformer pieces (tests/layers/test_attention.cpp) and of the ViT
// (tests/models/test_vit.cpp). The tolerance is test_golden.cpp's:
//   |got - want| <= 1e-5 |want| + floor,  floor = 1e-6 * max(1, max |want| over the tensor)
// (values near zero are differences of terms of the tensor's scale and carry a few ulps of it).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cohort/layers/module.hpp"
#include "golden.hpp"

namespace golden_cmp {

// Checks `got` against tensor `name` of case `cs`; returns the worst error / tolerance.
inline double expect_close(const cohort::testing::GoldenFile& g, const std::string& cs,
                           const std::string& name, const cohort::Tensor& got) {
  const auto want = g.tensor(cs, name);
  CAPTURE(cs);
  CAPTURE(name);
  REQUIRE(got.shape() == want.as_shape());
  const std::vector<float> v = got.to_vector<float>();
  double scale = 1.0;
  for (float w : want.data) scale = std::max(scale, std::fabs(static_cast<double>(w)));
  double worst = 0.0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double w = want.data[i];
    const double tol = 1e-5 * std::fabs(w) + 1e-6 * scale;
    const double err = std::fabs(static_cast<double>(v[i]) - w);
    worst = std::max(worst, err / tol);
    if (!(err <= tol)) {
      FAIL_CHECK(cs << " " << name << "[" << i << "]: got " << v[i] << ", PyTorch " << w
                    << " (|diff| " << err << " > tolerance " << tol << ")");
      break;
    }
  }
  return worst;
}

// Loads the case's state_dict into m strictly (every key of m's in the file, by name), runs
// forward on "input" and backward with "grad_output" (training mode), and compares the output,
// the input gradient and every parameter gradient. Returns the worst error / tolerance.
inline double run_module_case(const cohort::testing::GoldenFile& g, const std::string& cs,
                              cohort::nn::Module& m, cohort::Device& dev) {
  std::vector<cohort::nn::NamedTensor> state;
  for (const auto& e : m.state_dict()) state.push_back({e.name, g.load(cs, e.name, dev)});
  m.load_state_dict(state, true);
  m.train(true);
  m.zero_grad();
  double worst = expect_close(g, cs, "output", m.forward(g.load(cs, "input", dev)));
  worst = std::max(worst,
                   expect_close(g, cs, "grad_input", m.backward(g.load(cs, "grad_output", dev))));
  for (const auto& np : m.named_parameters())
    worst = std::max(worst, expect_close(g, cs, "grad." + np.name, np.param->grad));
  return worst;
}

}  // namespace golden_cmp
