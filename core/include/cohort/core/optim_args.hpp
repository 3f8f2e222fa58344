// The scalar arguments of the fused optimizer ops (sgd_step, adam_step, adadelta_step,
// rmsprop_step): one plain struct per op, shared by the op table (cohort/backend/op_calls.hpp), the
// kernels written once (backends/common/ops/optim.hpp) and the checked front end
// (cohort/core/optim_ops.hpp).
//
// Every field is a float exactly as PyTorch 1.13's single-tensor loop hands it to its tensor
// kernels: the optimizer computes derived coefficients (1 - beta1, lr / (1 - beta1^t), ...) in
// double, as Python does, and rounds each to float once. The kernels never recompute them in
// float, so the device sees the same constants as ATen does. Plain data without dependencies, so
// nvcc compiles it for the device as it is.
#pragma once

namespace cohort {

// torch.optim.SGD, one parameter tensor. Per element, in order:
//   g = maximize ? -grad : grad
//   if weight_decay != 0:  g = g + weight_decay * p
//   if momentum != 0:      buf = first_step ? g : buf * momentum + one_minus_dampening * g
//                          g   = nesterov ? g + momentum * buf : buf
//   p = p + neg_lr * g
struct SgdArgs {
  float neg_lr = 0.0f;               // -lr
  float momentum = 0.0f;             // 0: the momentum buffer is neither read nor written
  float one_minus_dampening = 1.0f;  // 1 - dampening
  float weight_decay = 0.0f;
  bool nesterov = false;
  bool maximize = false;
  bool first_step = false;  // the buffer is new: torch clones g into it (old contents ignored)
};

// torch.optim.Adam and torch.optim.AdamW (decoupled_weight_decay), one parameter tensor at step t.
// Per element, in order:
//   g = maximize ? -grad : grad
//   if decoupled_weight_decay:  p = p * param_scale                      (AdamW)
//   else if weight_decay != 0:  g = g + weight_decay * p                 (Adam, L2)
//   m = m * beta1 + one_minus_beta1 * g
//   v = v * beta2 + one_minus_beta2 * g * g
//   if amsgrad:  vmax = max(vmax, v) (NaN propagates, as torch.maximum);  s = vmax  else s = v
//   p = p + neg_step_size * m / (sqrt(s) / bias_correction2_sqrt + eps)
struct AdamArgs {
  float beta1 = 0.9f;
  float one_minus_beta1 = 0.1f;
  float beta2 = 0.999f;
  float one_minus_beta2 = 0.001f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;           // Adam only (AdamW folds it into param_scale)
  float param_scale = 1.0f;            // AdamW: 1 - lr * weight_decay
  float neg_step_size = 0.0f;          // -lr / (1 - beta1^t)
  float bias_correction2_sqrt = 1.0f;  // sqrt(1 - beta2^t)
  bool decoupled_weight_decay = false;
  bool amsgrad = false;  // max_exp_avg_sq is read and written only when set
  bool maximize = false;
};

// torch.optim.Adadelta, one parameter tensor. Per element, in order:
//   g = maximize ? -grad : grad
//   if weight_decay != 0:  g = g + weight_decay * p
//   square_avg = square_avg * rho + one_minus_rho * g * g
//   delta      = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g
//   acc_delta  = acc_delta * rho + one_minus_rho * delta * delta
//   p = p + neg_lr * delta
// With flush_subnormal_state, a square_avg or acc_delta below FLT_MIN is stored as 0 (and a g * g
// below it is taken as 0). Both enter the update only as sqrt(x + eps): for eps > 2^-102 any
// subnormal x is below half an ulp of eps, so x + eps == eps and no parameter, delta or
// later step changes; only the stored state differs, by less than 1.2e-38. Why: a parameter whose
// gradient is 0 (a dead ReLU unit) decays both by rho every step into the subnormal range, where
// x86 arithmetic takes ~100 cycles per operand: the MNIST CNN's optimizer went from 4.1 to 8.3
// ms/step after ~650 steps. The optimizer sets it exactly when eps > 2^-102.
struct AdadeltaArgs {
  float neg_lr = -1.0f;
  float rho = 0.9f;
  float one_minus_rho = 0.1f;
  float eps = 1e-6f;
  float weight_decay = 0.0f;
  bool maximize = false;
  bool flush_subnormal_state = false;
};

// torch.optim.RMSprop, one parameter tensor. Per element, in order:
//   g = maximize ? -grad : grad
//   if weight_decay != 0:  g = g + weight_decay * p
//   square_avg = square_avg * alpha + one_minus_alpha * g * g
//   if centered:  grad_avg = grad_avg * alpha + one_minus_alpha * g
//                 avg = sqrt(square_avg - grad_avg * grad_avg) + eps
//   else          avg = sqrt(square_avg) + eps
//   if momentum > 0:  buf = buf * momentum + g / avg;  p = p + neg_lr * buf
//   else              p = p + neg_lr * g / avg
struct RmspropArgs {
  float neg_lr = -0.01f;
  float alpha = 0.99f;
  float one_minus_alpha = 0.01f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  float momentum = 0.0f;  // > 0: momentum_buffer is read and written
  bool centered = false;  // grad_avg is read and written only when set
  bool maximize = false;
};

}  // namespace cohort
