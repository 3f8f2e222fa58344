// Attention front ends (attention_forward/backward): checks, then one call of the op table
// (backends/common/ops/attention.hpp).
#include <cmath>

#include "cohort/backend/dispatch.hpp"
#include "cohort/core/device.hpp"
#include "cohort/core/error.hpp"
#include "cohort/core/layer_ops.hpp"
#include "ops/checks.hpp"

namespace cohort::ops {

using namespace detail;

namespace {

// The extents of qkv [N, T, 3, H, dh], checked.
AttentionArgs attention_args(const char* op, const Tensor& qkv, float scale) {
  req_f32(op, "qkv", qkv);
  COHORT_CHECK(qkv.rank() == 5 && qkv.dim(2) == 3, op, ": 'qkv' is ", qkv.shape().str(),
               ", expected [N, T, 3, H, dh] (the in-projection's output, q, k and v packed)");
  COHORT_CHECK(std::isfinite(scale), op, ": scale ", scale, " is not finite");
  AttentionArgs a;
  a.n = qkv.dim(0);
  a.t = qkv.dim(1);
  a.h = qkv.dim(3);
  a.dh = qkv.dim(4);
  a.scale = scale;
  return a;
}

Shape out_shape(const AttentionArgs& a) { return Shape{a.n, a.t, a.h, a.dh}; }
Shape lse_shape(const AttentionArgs& a) { return Shape{a.n, a.h, a.t}; }

}  // namespace

void attention_forward(const Tensor& qkv, Tensor& out, Tensor& lse, float scale) {
  const char* op = "attention_forward";
  const AttentionArgs a = attention_args(op, qkv, scale);
  req_like(op, "out", out, out_shape(a), qkv, "qkv");
  req_like(op, "lse", lse, lse_shape(a), qkv, "qkv");
  if (count(out) == 0 && count(lse) == 0) return;
  dispatch::run(qkv.device(), {&qkv}, {&out, &lse}, [&](const dispatch::Operands& o) {
    return calls::AttentionForward{a, o.in<float>(qkv), o.out<float>(out), o.out<float>(lse)};
  });
}

void attention_backward(const Tensor& qkv, const Tensor& out, const Tensor& lse, const Tensor& dout,
                        Tensor& dqkv, float scale) {
  const char* op = "attention_backward";
  const AttentionArgs a = attention_args(op, qkv, scale);
  req_like(op, "out", out, out_shape(a), qkv, "qkv");
  req_like(op, "lse", lse, lse_shape(a), qkv, "qkv");
  req_like(op, "dout", dout, out_shape(a), qkv, "qkv");
  req_like(op, "dqkv", dqkv, qkv.shape(), qkv, "qkv");
  if (count(qkv) == 0) return;
  Tensor delta = Tensor::empty(lse_shape(a), DType::f32, qkv.device());
  dispatch::run(qkv.device(), {&qkv, &out, &lse, &dout}, {&delta, &dqkv},
                [&](const dispatch::Operands& o) {
                  return calls::AttentionBackward{a,
                                                  o.in<float>(qkv),
                                                  o.in<float>(out),
                                                  o.in<float>(dout),
                                                  o.in<float>(lse),
                                                  o.out<float>(delta),
                                                  o.out<float>(dqkv)};
                });
}

}  // namespace cohort::ops
