// Argument checks for the fused optimizer ops, then one call into the device's op table.
#include "cohort/core/optim_ops.hpp"

namespace cohort::ops {
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
void require_param(const char* op, Op table_op, const Tensor& param) {
  COHORT_CHECK(param.defined(), op, ": argument 'param' is an undefined tensor");
  COHORT_CHECK(param.dtype() == DType::f32, op, ": argument 'param' must be f32, got ",
               dtype_name(param.dtype()));
  COHORT_CHECK(param.device().supports(table_op, param.dtype()), op, ": device ",
               param.device().name(), " does not support ", op_name(table_op), " on dtype ",
               dtype_name(param.dtype()));
}

std::size_t count(const Tensor& t) { return static_cast<std::size_t>(t.numel()); }

}  // namespace

void sgd_step(Tensor& param, const Tensor& grad, Tensor& momentum_buffer, const SgdArgs& args) {
  const char* op = "sgd_step";
  require_param(op, Op::sgd_step, param);
  require_like_param(op, "grad", grad, param);
  const bool uses_buffer = args.momentum != 0.0f;
  if (uses_buffer) require_like_param(op, "momentum_buffer", momentum_buffer, param);
  if (param.numel() == 0) return;
  param.device().sgd_step(args, param.data<float>(), grad.data<float>(),
                          uses_buffer ? momentum_buffer.data<float>() : nullptr, count(param));
}

void adam_step(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
               Tensor& max_exp_avg_sq, const AdamArgs& args) {
  const char* op = "adam_step";
  require_param(op, Op::adam_step, param);
  require_like_param(op, "grad", grad, param);
  require_like_param(op, "exp_avg", exp_avg, param);
  require_like_param(op, "exp_avg_sq", exp_avg_sq, param);
  if (args.amsgrad) require_like_param(op, "max_exp_avg_sq", max_exp_avg_sq, param);
  if (param.numel() == 0) return;
  param.device().adam_step(args, param.data<float>(), grad.data<float>(), exp_avg.data<float>(),
                           exp_avg_sq.data<float>(),
                           args.amsgrad ? max_exp_avg_sq.data<float>() : nullptr, count(param));
}

void adadelta_step(Tensor& param, const Tensor& grad, Tensor& square_avg, Tensor& acc_delta,
                   const AdadeltaArgs& args) {
  const char* op = "adadelta_step";
  require_param(op, Op::adadelta_step, param);
  require_like_param(op, "grad", grad, param);
  require_like_param(op, "square_avg", square_avg, param);
  require_like_param(op, "acc_delta", acc_delta, param);
  if (param.numel() == 0) return;
  param.device().adadelta_step(args, param.data<float>(), grad.data<float>(),
                               square_avg.data<float>(), acc_delta.data<float>(), count(param));
}

void rmsprop_step(Tensor& param, const Tensor& grad, Tensor& square_avg, Tensor& grad_avg,
                  Tensor& momentum_buffer, const RmspropArgs& args) {
  const char* op = "rmsprop_step";
  require_param(op, Op::rmsprop_step, param);
  require_like_param(op, "grad", grad, param);
  require_like_param(op, "square_avg", square_avg, param);
  const bool uses_buffer = args.momentum > 0.0f;
  if (args.centered) require_like_param(op, "grad_avg", grad_avg, param);
  if (uses_buffer) require_like_param(op, "momentum_buffer", momentum_buffer, param);
  if (param.numel() == 0) return;
  param.device().rmsprop_step(args, param.data<float>(), grad.data<float>(),
                              square_avg.data<float>(),
                              args.centered ? grad_avg.data<float>() : nullptr,
                              uses_buffer ? momentum_buffer.data<float>() : nullptr,
                              count(param));
}

}  // namespace cohort::ops
