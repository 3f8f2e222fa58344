// Random front ends (fill_uniform, fill_normal, dropout_forward/backward): checks, then one call
// of the op table (backends/common/ops/random.hpp). Tensor::uniform and Tensor::normal are
// fill_uniform and fill_normal on a new tensor.
#include "cohort/core/layer_ops.hpp"

#include "cohort/core/ops.hpp"
#include "cohort/backend/dispatch.hpp"
#include "cohort/core/device.hpp"
#include "cohort/core/error.hpp"
#include "ops/checks.hpp"

namespace cohort::ops {

using namespace detail;

// ---- dropout ----

void dropout_forward(const DropoutArgs& a, const Tensor& x, Tensor& y, Activation act,
                     float act_alpha) {
  const char* op = "dropout_forward";
  COHORT_CHECK(a.p >= 0.0f && a.p <= 1.0f, op, ": p = ", a.p, " is not a probability");
  req_f32(op, "x", x);
  req_like(op, "y", y, x.shape(), x, "x");
  if (count(x) == 0) return;
  dispatch::run(x.device(), {&x}, {&y}, [&](const dispatch::Operands& o) {
    return calls::DropoutForward{a, o.in<float>(x), o.out<float>(y), count(x), act, act_alpha};
  });
}

void dropout_backward(const DropoutArgs& a, const Tensor& dy, Tensor& dx, Activation act,
                      float act_alpha, const Tensor* x) {
  const char* op = "dropout_backward";
  COHORT_CHECK(a.p >= 0.0f && a.p <= 1.0f, op, ": p = ", a.p, " is not a probability");
  req_f32(op, "dy", dy);
  req_like(op, "dx", dx, dy.shape(), dy, "dy");
  const bool with_act = act != Activation::identity;
  COHORT_CHECK(!with_act || x, op, ": the fused activation ", activation_name(act),
               " needs its input x (the forward's x), got none");
  if (with_act) req_like(op, "x", *x, dy.shape(), dy, "dy");
  if (count(dy) == 0) return;
  const Tensor* xin = with_act ? x : nullptr;
  dispatch::run(dy.device(), {&dy, xin}, {&dx}, [&](const dispatch::Operands& o) {
    return calls::DropoutBackward{a,   o.in<float>(dy), o.out<float>(dx), count(dy),
                                  act, act_alpha,       o.in<float>(xin)};
  });
}

void fill_uniform(Tensor& x, float lo, float hi, std::uint64_t seed, std::uint64_t offset) {
  req_f32("fill_uniform", "x", x);
  COHORT_CHECK(lo <= hi, "fill_uniform: lo ", lo, " > hi ", hi);
  if (count(x) == 0) return;
  dispatch::run(x.device(), {}, {&x}, [&](const dispatch::Operands& o) {
    return calls::FillUniform{o.out<float>(x), count(x), seed, offset, lo, hi};
  });
}

void fill_normal(Tensor& x, float mean, float stddev, std::uint64_t seed, std::uint64_t offset) {
  req_f32("fill_normal", "x", x);
  COHORT_CHECK(stddev >= 0.0f, "fill_normal: stddev ", stddev, " is negative");
  if (count(x) == 0) return;
  dispatch::run(x.device(), {}, {&x}, [&](const dispatch::Operands& o) {
    return calls::FillNormal{o.out<float>(x), count(x), seed, offset, mean, stddev};
  });
}

}  // namespace cohort::ops
