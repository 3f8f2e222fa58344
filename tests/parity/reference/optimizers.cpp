// Reference of the fused optimizer steps: torch.optim's per-element update rules (SGD, Adam /
// AdamW, Adadelta, RMSprop, as cohort/core/optim_args.hpp writes them out), in double from the
// f32 arguments. The device rounds every step to f32 as PyTorch's tensor ops do, so the two
// differ by a few f32 roundings, never by a changed formula.
#include <algorithm>
#include <cmath>

#include "reference.hpp"

namespace parity_ref {

void sgd_step(const Sgd& a, Vec& p, const Vec& grad, Vec& buf) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    double g = a.maximize ? -grad[i] : grad[i];
    if (a.weight_decay != 0) g += a.weight_decay * p[i];
    if (a.momentum != 0) {
      buf[i] = a.first_step ? g : buf[i] * a.momentum + a.one_minus_dampening * g;
      g = a.nesterov ? g + a.momentum * buf[i] : buf[i];
    }
    p[i] += a.neg_lr * g;
  }
}

void adam_step(const Adam& a, Vec& p, const Vec& grad, Vec& m, Vec& v, Vec& vmax) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    double g = a.maximize ? -grad[i] : grad[i];
    if (a.decoupled_weight_decay)
      p[i] *= a.param_scale;
    else if (a.weight_decay != 0)
      g += a.weight_decay * p[i];
    m[i] = m[i] * a.beta1 + a.one_minus_beta1 * g;
    v[i] = v[i] * a.beta2 + a.one_minus_beta2 * g * g;
    double s = v[i];
    if (a.amsgrad) {
      vmax[i] = std::isnan(v[i]) ? v[i] : std::max(vmax[i], v[i]);
      s = vmax[i];
    }
    p[i] += a.neg_step_size * m[i] / (std::sqrt(s) / a.bias_correction2_sqrt + a.eps);
  }
}

void adadelta_step(const Adadelta& a, Vec& p, const Vec& grad, Vec& square_avg, Vec& acc_delta) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    double g = a.maximize ? -grad[i] : grad[i];
    if (a.weight_decay != 0) g += a.weight_decay * p[i];
    square_avg[i] = square_avg[i] * a.rho + a.one_minus_rho * g * g;
    const double delta = std::sqrt(acc_delta[i] + a.eps) / std::sqrt(square_avg[i] + a.eps) * g;
    acc_delta[i] = acc_delta[i] * a.rho + a.one_minus_rho * delta * delta;
    p[i] += a.neg_lr * delta;
  }
}

void rmsprop_step(const Rmsprop& a, Vec& p, const Vec& grad, Vec& square_avg, Vec& grad_avg,
                  Vec& buf) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    double g = a.maximize ? -grad[i] : grad[i];
    if (a.weight_decay != 0) g += a.weight_decay * p[i];
    square_avg[i] = square_avg[i] * a.alpha + a.one_minus_alpha * g * g;
    double avg = 0;
    if (a.centered) {
      grad_avg[i] = grad_avg[i] * a.alpha + a.one_minus_alpha * g;
      avg = std::sqrt(square_avg[i] - grad_avg[i] * grad_avg[i]) + a.eps;
    } else {
      avg = std::sqrt(square_avg[i]) + a.eps;
    }
    if (a.momentum > 0) {
      buf[i] = buf[i] * a.momentum + g / avg;
      p[i] += a.neg_lr * buf[i];
    } else {
      p[i] += a.neg_lr * g / avg;
    }
  }
}

}  // namespace parity_ref
