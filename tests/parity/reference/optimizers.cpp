// Reference of the fused optimizer steps: torch.optim's per-element update rules (SGD, Adam /
// AdamW, Adadelta, RMSprop) exactly as cohort/core/optim_args.hpp writes them out, step by step
// in that order, each step's result rounded to f32 once: what PyTorch's single-tensor loop does,
// one f32 tensor op after another, with no fused multiply-add. So the device must match bit for
// bit. Each product or quotient of two f32 values, and their sum here, is computed in double and
// rounded once (double holds the exact product; sqrt and division round correctly through it).
#include <algorithm>
#include <cmath>

#include "reference.hpp"

namespace parity_ref {
namespace {

double sqrt32(double x) { return f32(std::sqrt(x)); }

}  // namespace

void sgd_step(const Sgd& a, Vec& p, const Vec& grad, Vec& buf) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    double g = a.maximize ? -grad[i] : grad[i];
    if (a.weight_decay != 0) g = f32(g + f32(a.weight_decay * p[i]));
    if (a.momentum != 0) {
      buf[i] = a.first_step ? g : f32(f32(buf[i] * a.momentum) + f32(a.one_minus_dampening * g));
      g = a.nesterov ? f32(g + f32(a.momentum * buf[i])) : buf[i];
    }
    p[i] = f32(p[i] + f32(a.neg_lr * g));
  }
}

void adam_step(const Adam& a, Vec& p, const Vec& grad, Vec& m, Vec& v, Vec& vmax) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    double g = a.maximize ? -grad[i] : grad[i];
    if (a.decoupled_weight_decay)
      p[i] = f32(p[i] * a.param_scale);
    else if (a.weight_decay != 0)
      g = f32(g + f32(a.weight_decay * p[i]));
    m[i] = f32(f32(m[i] * a.beta1) + f32(a.one_minus_beta1 * g));
    v[i] = f32(f32(v[i] * a.beta2) + f32(f32(a.one_minus_beta2 * g) * g));
    double s = v[i];
    if (a.amsgrad) {
      vmax[i] = std::isnan(vmax[i]) || std::isnan(v[i]) ? NAN : std::max(vmax[i], v[i]);
      s = vmax[i];
    }
    const double denom = f32(f32(sqrt32(s) / a.bias_correction2_sqrt) + a.eps);
    p[i] = f32(p[i] + f32(f32(a.neg_step_size * m[i]) / denom));
  }
}

void adadelta_step(const Adadelta& a, Vec& p, const Vec& grad, Vec& square_avg, Vec& acc_delta) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    double g = a.maximize ? -grad[i] : grad[i];
    if (a.weight_decay != 0) g = f32(g + f32(a.weight_decay * p[i]));
    square_avg[i] = f32(f32(square_avg[i] * a.rho) + f32(f32(a.one_minus_rho * g) * g));
    const double delta =
        f32(f32(sqrt32(f32(acc_delta[i] + a.eps)) / sqrt32(f32(square_avg[i] + a.eps))) * g);
    acc_delta[i] = f32(f32(acc_delta[i] * a.rho) + f32(f32(a.one_minus_rho * delta) * delta));
    p[i] = f32(p[i] + f32(a.neg_lr * delta));
  }
}

void rmsprop_step(const Rmsprop& a, Vec& p, const Vec& grad, Vec& square_avg, Vec& grad_avg,
                  Vec& buf) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    double g = a.maximize ? -grad[i] : grad[i];
    if (a.weight_decay != 0) g = f32(g + f32(a.weight_decay * p[i]));
    square_avg[i] = f32(f32(square_avg[i] * a.alpha) + f32(f32(a.one_minus_alpha * g) * g));
    double avg = 0;
    if (a.centered) {
      grad_avg[i] = f32(f32(grad_avg[i] * a.alpha) + f32(a.one_minus_alpha * g));
      avg = f32(sqrt32(f32(square_avg[i] - f32(grad_avg[i] * grad_avg[i]))) + a.eps);
    } else {
      avg = f32(sqrt32(square_avg[i]) + a.eps);
    }
    if (a.momentum > 0) {
      buf[i] = f32(f32(buf[i] * a.momentum) + f32(g / avg));
      p[i] = f32(p[i] + f32(a.neg_lr * buf[i]));
    } else {
      p[i] = f32(p[i] + f32(f32(a.neg_lr * g) / avg));
    }
  }
}

// torch.amp's unscale (x * inv rounded to float) and, per block, the largest |x| after it
// (finite values only here; the NaN and inf cases are hand-computed in test_thrust.cpp and the
// GradScaler's golden test).
Vec unscale_max_abs(double inv, Vec& x, std::size_t block) {
  Vec out;
  for (std::size_t lo = 0; lo < x.size(); lo += block) {
    double m = 0;
    for (std::size_t i = lo; i < std::min(x.size(), lo + block); ++i) {
      x[i] = f32(x[i] * inv);
      m = std::max(m, std::fabs(x[i]));
    }
    out.push_back(m);
  }
  return out;
}

}  // namespace parity_ref
