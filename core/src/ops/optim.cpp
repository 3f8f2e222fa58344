// Optimizer front ends (sgd_step, adam_step, adadelta_step, rmsprop_step, and the GradScaler's
// unscale_max_abs): every state tensor the arguments use checked against the parameter, then one
// fused call of the op table (backends/common/ops/optim.hpp).
#include "cohort/core/optim_ops.hpp"

#include "cohort/backend/dispatch.hpp"
#include "cohort/core/device.hpp"
#include "cohort/core/error.hpp"
#include "ops/checks.hpp"

namespace cohort::ops {

using namespace detail;

namespace {

// Checks that `t`, an operand of `op` the arguments use, matches the parameter.
void require_like_param(const char* op, const char* arg, const Tensor& t, const Tensor& param) {
  COHORT_CHECK(t.defined(), op, ": argument '", arg, "' is an undefined tensor, but the arguments "
               "use it");
  COHORT_CHECK(t.dtype() == DType::f32, op, ": argument '", arg, "' must be f32, got ",
               dtype_name(t.dtype()));
  COHORT_CHECK(t.shape() == param.shape(), op, ": shapes differ: 'param' is ",
               param.shape().str(), ", '", arg, "' is ", t.shape().str());
  COHORT_CHECK(&t.device() == &param.device(), op, ": 'param' is on ", param.device().name(),
               " but '", arg, "' is on ", t.device().name());
}

// Checks `param` itself.
void require_param(const char* op, const Tensor& param) {
  COHORT_CHECK(param.defined(), op, ": argument 'param' is an undefined tensor");
  COHORT_CHECK(param.dtype() == DType::f32, op, ": argument 'param' must be f32, got ",
               dtype_name(param.dtype()));
}

}  // namespace

void sgd_step(Tensor& param, const Tensor& grad, Tensor& momentum_buffer, const SgdArgs& args) {
  const char* op = "sgd_step";
  require_param(op, param);
  require_like_param(op, "grad", grad, param);
  const bool uses_buffer = args.momentum != 0.0f;
  if (uses_buffer) require_like_param(op, "momentum_buffer", momentum_buffer, param);
  if (param.numel() == 0) return;
  Tensor* buffer = uses_buffer ? &momentum_buffer : nullptr;
  dispatch::run(param.device(), {&grad}, {&param, buffer}, [&](const dispatch::Operands& o) {
    return calls::SgdStep{args, o.out<float>(param), o.in<float>(grad), o.out<float>(buffer),
                          count(param)};
  });
}

void adam_step(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
               Tensor& max_exp_avg_sq, const AdamArgs& args) {
  const char* op = "adam_step";
  require_param(op, param);
  require_like_param(op, "grad", grad, param);
  require_like_param(op, "exp_avg", exp_avg, param);
  require_like_param(op, "exp_avg_sq", exp_avg_sq, param);
  if (args.amsgrad) require_like_param(op, "max_exp_avg_sq", max_exp_avg_sq, param);
  if (param.numel() == 0) return;
  Tensor* max_sq = args.amsgrad ? &max_exp_avg_sq : nullptr;
  dispatch::run(param.device(), {&grad}, {&param, &exp_avg, &exp_avg_sq, max_sq},
                [&](const dispatch::Operands& o) {
                  return calls::AdamStep{args,
                                         o.out<float>(param),
                                         o.in<float>(grad),
                                         o.out<float>(exp_avg),
                                         o.out<float>(exp_avg_sq),
                                         o.out<float>(max_sq),
                                         count(param)};
                });
}

void adadelta_step(Tensor& param, const Tensor& grad, Tensor& square_avg, Tensor& acc_delta,
                   const AdadeltaArgs& args) {
  const char* op = "adadelta_step";
  require_param(op, param);
  require_like_param(op, "grad", grad, param);
  require_like_param(op, "square_avg", square_avg, param);
  require_like_param(op, "acc_delta", acc_delta, param);
  if (param.numel() == 0) return;
  dispatch::run(param.device(), {&grad}, {&param, &square_avg, &acc_delta},
                [&](const dispatch::Operands& o) {
                  return calls::AdadeltaStep{args, o.out<float>(param), o.in<float>(grad),
                                             o.out<float>(square_avg), o.out<float>(acc_delta),
                                             count(param)};
                });
}

void rmsprop_step(Tensor& param, const Tensor& grad, Tensor& square_avg, Tensor& grad_avg,
                  Tensor& momentum_buffer, const RmspropArgs& args) {
  const char* op = "rmsprop_step";
  require_param(op, param);
  require_like_param(op, "grad", grad, param);
  require_like_param(op, "square_avg", square_avg, param);
  const bool uses_buffer = args.momentum > 0.0f;
  if (args.centered) require_like_param(op, "grad_avg", grad_avg, param);
  if (uses_buffer) require_like_param(op, "momentum_buffer", momentum_buffer, param);
  if (param.numel() == 0) return;
  Tensor* avg = args.centered ? &grad_avg : nullptr;
  Tensor* buffer = uses_buffer ? &momentum_buffer : nullptr;
  dispatch::run(param.device(), {&grad}, {&param, &square_avg, avg, buffer},
                [&](const dispatch::Operands& o) {
                  return calls::RmspropStep{args,
                                            o.out<float>(param),
                                            o.in<float>(grad),
                                            o.out<float>(square_avg),
                                            o.out<float>(avg),
                                            o.out<float>(buffer),
                                            count(param)};
                });
}

void unscale_max_abs(float inv, Tensor& x, Tensor& out, std::int64_t block) {
  const char* op = "unscale_max_abs";
  COHORT_CHECK(x.defined(), op, ": argument 'x' is an undefined tensor");
  COHORT_CHECK(out.defined(), op, ": argument 'out' is an undefined tensor");
  COHORT_CHECK(x.dtype() == DType::f32, op, ": argument 'x' must be f32, got ",
               dtype_name(x.dtype()));
  COHORT_CHECK(out.dtype() == DType::f32, op, ": argument 'out' must be f32, got ",
               dtype_name(out.dtype()));
  COHORT_CHECK(block >= 1, op, ": block must be >= 1, got ", block);
  const std::int64_t blocks = (x.numel() + block - 1) / block;
  COHORT_CHECK(out.numel() == blocks, op, ": 'out' has ", out.numel(), " elements (shape ",
               out.shape().str(), "), expected ceil(", x.numel(), " / ", block, ") = ", blocks);
  COHORT_CHECK(&out.device() == &x.device(), op, ": 'x' is on ", x.device().name(),
               " but 'out' is on ", out.device().name());
  if (x.numel() == 0) return;
  dispatch::run(x.device(), {}, {&x, &out}, [&](const dispatch::Operands& o) {
    return calls::UnscaleMaxAbs{inv, o.out<float>(x), count(x), static_cast<std::size_t>(block),
                                o.out<float>(out)};
  });
}

}  // namespace cohort::ops
