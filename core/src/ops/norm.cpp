// Normalisation front ends (batch_norm_forward/backward, layer_norm_forward/backward): checks,
// then one call of the op table (backends/common/ops/norm.hpp).
#include "cohort/core/layer_ops.hpp"

#include "cohort/backend/dispatch.hpp"
#include "cohort/core/device.hpp"
#include "cohort/core/error.hpp"
#include "ops/checks.hpp"

namespace cohort::ops {

using namespace detail;

// ---- batch norm ----

namespace {
BatchNormArgs bn_args(const char* op, const Tensor& x, float eps, float momentum, bool training) {
  req_f32(op, "x", x);
  COHORT_CHECK(x.rank() >= 2, op, ": expected input [N, C, ...], got ", x.shape().str());
  const ChannelDims d = dims_around(x.shape(), 1);
  BatchNormArgs a;
  a.n = d.outer;
  a.c = d.channels;
  a.inner = d.inner;
  a.eps = eps;
  a.momentum = momentum;
  a.training = training;
  COHORT_CHECK(!training || a.n * a.inner > 1, op,
               ": training needs more than 1 value per channel, input is ", x.shape().str());
  return a;
}
}  // namespace

void batch_norm_forward(const Tensor& x, const Tensor* gamma, const Tensor* beta,
                        Tensor* running_mean, Tensor* running_var, Tensor& y, Tensor& save_mean,
                        Tensor& save_invstd, float eps, float momentum, bool training) {
  const char* op = "batch_norm_forward";
  const BatchNormArgs a = bn_args(op, x, eps, momentum, training);
  const Shape cs{a.c};
  if (gamma) req_like(op, "gamma", *gamma, cs, x, "x");
  if (beta) req_like(op, "beta", *beta, cs, x, "x");
  COHORT_CHECK((running_mean == nullptr) == (running_var == nullptr), op,
               ": running_mean and running_var come together");
  COHORT_CHECK(training || running_mean, op, ": evaluation needs running statistics");
  if (running_mean) {
    req_like(op, "running_mean", *running_mean, cs, x, "x");
    req_like(op, "running_var", *running_var, cs, x, "x");
  }
  req_like(op, "y", y, x.shape(), x, "x");
  req_like(op, "save_mean", save_mean, cs, x, "x");
  req_like(op, "save_invstd", save_invstd, cs, x, "x");
  if (a.c == 0 || (count(x) == 0 && !training)) return;
  COHORT_CHECK(count(x) > 0, op, ": empty input ", x.shape().str());
  dispatch::run(x.device(), {&x, gamma, beta}, {running_mean, running_var, &y, &save_mean,
                                                &save_invstd},
                [&](const dispatch::Operands& o) {
                  return calls::BatchNormForward{
                      a, o.in<float>(x), o.in<float>(gamma), o.in<float>(beta),
                      o.out<float>(running_mean), o.out<float>(running_var), o.out<float>(y),
                      o.out<float>(save_mean), o.out<float>(save_invstd)};
                });
}

void batch_norm_backward(const Tensor& x, const Tensor& dy, const Tensor* gamma,
                         const Tensor& save_mean, const Tensor& save_invstd, Tensor* dx,
                         Tensor* dgamma, Tensor* dbeta, bool training) {
  const char* op = "batch_norm_backward";
  const BatchNormArgs a = bn_args(op, x, 0.0f, 0.0f, training);
  const Shape cs{a.c};
  req_like(op, "dy", dy, x.shape(), x, "x");
  if (gamma) req_like(op, "gamma", *gamma, cs, x, "x");
  req_like(op, "save_mean", save_mean, cs, x, "x");
  req_like(op, "save_invstd", save_invstd, cs, x, "x");
  if (dx) req_like(op, "dx", *dx, x.shape(), x, "x");
  if (dgamma) req_like(op, "dgamma", *dgamma, cs, x, "x");
  if (dbeta) req_like(op, "dbeta", *dbeta, cs, x, "x");
  if (a.c == 0 || count(x) == 0) return;
  dispatch::run(x.device(), {&x, &dy, gamma, &save_mean, &save_invstd}, {dx, dgamma, dbeta},
                [&](const dispatch::Operands& o) {
                  return calls::BatchNormBackward{
                      a, o.in<float>(x), o.in<float>(dy), o.in<float>(gamma),
                      o.in<float>(save_mean), o.in<float>(save_invstd), o.out<float>(dx),
                      o.out<float>(dgamma), o.out<float>(dbeta)};
                });
}

// ---- layer norm ----

namespace {
LayerNormArgs ln_args(const char* op, const Tensor& x, i64 normalized, float eps) {
  req_f32(op, "x", x);
  COHORT_CHECK(normalized >= 1 && x.numel() % normalized == 0, op, ": cannot normalise groups of ",
               normalized, " elements of x ", x.shape().str());
  LayerNormArgs a;
  a.cols = normalized;
  a.rows = x.numel() / normalized;
  a.eps = eps;
  return a;
}
}  // namespace

void layer_norm_forward(const Tensor& x, i64 normalized, const Tensor* gamma, const Tensor* beta,
                        Tensor& y, Tensor& save_mean, Tensor& save_rstd, float eps,
                        const Tensor* residual, Tensor* sum) {
  const char* op = "layer_norm_forward";
  const LayerNormArgs a = ln_args(op, x, normalized, eps);
  if (gamma) req_like(op, "gamma", *gamma, Shape{a.cols}, x, "x");
  if (beta) req_like(op, "beta", *beta, Shape{a.cols}, x, "x");
  req_like(op, "y", y, x.shape(), x, "x");
  req_like(op, "save_mean", save_mean, Shape{a.rows}, x, "x");
  req_like(op, "save_rstd", save_rstd, Shape{a.rows}, x, "x");
  COHORT_CHECK((residual == nullptr) == (sum == nullptr), op,
               ": residual and sum come together (sum = x + residual is normalised), got ",
               residual ? "a residual without a sum" : "a sum without a residual");
  if (residual) {
    req_like(op, "residual", *residual, x.shape(), x, "x");
    req_like(op, "sum", *sum, x.shape(), x, "x");
  }
  if (a.rows == 0) return;
  dispatch::run(x.device(), {&x, gamma, beta, residual}, {&y, &save_mean, &save_rstd, sum},
                [&](const dispatch::Operands& o) {
                  return calls::LayerNormForward{a,
                                                 o.in<float>(x),
                                                 o.in<float>(gamma),
                                                 o.in<float>(beta),
                                                 o.out<float>(y),
                                                 o.out<float>(save_mean),
                                                 o.out<float>(save_rstd),
                                                 o.in<float>(residual),
                                                 o.out<float>(sum)};
                });
}

void layer_norm_backward(const Tensor& x, const Tensor& dy, i64 normalized, const Tensor* gamma,
                         const Tensor& save_mean, const Tensor& save_rstd, Tensor* dx,
                         Tensor* dgamma, Tensor* dbeta, const Tensor* dx_add) {
  const char* op = "layer_norm_backward";
  const LayerNormArgs a = ln_args(op, x, normalized, 0.0f);
  req_like(op, "dy", dy, x.shape(), x, "x");
  if (gamma) req_like(op, "gamma", *gamma, Shape{a.cols}, x, "x");
  req_like(op, "save_mean", save_mean, Shape{a.rows}, x, "x");
  req_like(op, "save_rstd", save_rstd, Shape{a.rows}, x, "x");
  if (dx) req_like(op, "dx", *dx, x.shape(), x, "x");
  if (dgamma) req_like(op, "dgamma", *dgamma, Shape{a.cols}, x, "x");
  if (dbeta) req_like(op, "dbeta", *dbeta, Shape{a.cols}, x, "x");
  COHORT_CHECK(dx_add == nullptr || dx != nullptr, op,
               ": dx_add is added to dx, and no dx was asked for");
  if (dx_add) req_like(op, "dx_add", *dx_add, x.shape(), x, "x");
  if (a.rows == 0) return;
  dispatch::run(x.device(), {&x, &dy, gamma, &save_mean, &save_rstd, dx_add}, {dx, dgamma, dbeta},
                [&](const dispatch::Operands& o) {
                  return calls::LayerNormBackward{a,
                                                  o.in<float>(x),
                                                  o.in<float>(dy),
                                                  o.in<float>(gamma),
                                                  o.in<float>(save_mean),
                                                  o.in<float>(save_rstd),
                                                  o.out<float>(dx),
                                                  o.out<float>(dgamma),
                                                  o.out<float>(dbeta),
                                                  o.in<float>(dx_add)};
                });
}

}  // namespace cohort::ops
