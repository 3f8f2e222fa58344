// Optimizer family: sgd_step, adam_step (Adam and AdamW), adadelta_step, rmsprop_step, each one
// fused update per element of a parameter and its state, in place.
//
// The order of operations is PyTorch 1.13's single-tensor loop (torch/optim/*.py), one rounding to
// float per tensor op there, one per expression here; the scalar coefficients arrive precomputed
// (cohort/core/optim_args.hpp documents each formula). The CUDA backend compiles this without FMA
// contraction (--fmad=false), and sqrtf and '/' are correctly rounded on both sides, so the two
// backends agree bit for bit.
#pragma once

#include <cstdint>
#include <type_traits>

#include "cohort/backend/op_calls.hpp"
#include "common/ops/common.hpp"

namespace cohort::kernels {

struct SgdUpdate {
  SgdArgs a;
  float* param;
  const float* grad;
  float* momentum_buffer;  // read and written only when a.momentum != 0
  COHORT_HD void operator()(std::int64_t i) const {
    float g = a.maximize ? -grad[i] : grad[i];
    const float p = param[i];
    if (a.weight_decay != 0.0f) g = g + a.weight_decay * p;
    if (a.momentum != 0.0f) {
      const float buf =
          a.first_step ? g : momentum_buffer[i] * a.momentum + a.one_minus_dampening * g;
      momentum_buffer[i] = buf;
      g = a.nesterov ? g + a.momentum * buf : buf;
    }
    param[i] = p + a.neg_lr * g;
  }
};

// next(std::true_type{}) or next(std::false_type{}): turns a runtime option into a template
// argument of the update instance (visit_adam, visit_adadelta). Host code.
template <class Next>
void with_flag(bool b, Next&& next) {
  if (b)
    next(std::true_type{});
  else
    next(std::false_type{});
}

// Adam and AdamW. Like Adadelta below, the options that change the arithmetic's shape are
// template parameters (kDecay: 0 none, 1 L2 into the gradient, 2 decoupled, AdamW), so that the
// host loop vectorises; visit_adam() picks the instance.
template <bool kMaximize, int kDecay, bool kAmsgrad>
struct AdamUpdate {
  AdamArgs a;
  float* param;
  const float* grad;
  float* exp_avg;
  float* exp_avg_sq;
  float* max_exp_avg_sq;  // read and written only when kAmsgrad
  COHORT_HD void operator()(std::int64_t i) const {
    float g = kMaximize ? -grad[i] : grad[i];
    float p = param[i];
    if (kDecay == 2)
      p = p * a.param_scale;
    else if (kDecay == 1)
      g = g + a.weight_decay * p;
    const float m = exp_avg[i] * a.beta1 + a.one_minus_beta1 * g;
    const float v = exp_avg_sq[i] * a.beta2 + a.one_minus_beta2 * g * g;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    float s = v;
    if (kAmsgrad) {
      const float old = max_exp_avg_sq[i];
      // torch.maximum: NaN in either operand gives NaN.
      s = (old != old || v != v) ? old + v : (old > v ? old : v);
      max_exp_avg_sq[i] = s;
    }
    const float denom = sqrtf(s) / a.bias_correction2_sqrt + a.eps;
    param[i] = p + a.neg_step_size * m / denom;
  }
};

// Calls fn(AdamUpdate<...>{...}) with the instance a's options select. Host code.
template <class Fn>
void visit_adam(const AdamArgs& a, float* param, const float* grad, float* exp_avg,
                float* exp_avg_sq, float* max_exp_avg_sq, Fn&& fn) {
  auto with_decay = [&](auto next) {
    if (a.decoupled_weight_decay)
      next(std::integral_constant<int, 2>{});
    else if (a.weight_decay != 0.0f)
      next(std::integral_constant<int, 1>{});
    else
      next(std::integral_constant<int, 0>{});
  };
  with_flag(a.maximize, [&](auto m) {
    with_decay([&](auto d) {
      with_flag(a.amsgrad, [&](auto ams) {
        fn(AdamUpdate<decltype(m)::value, decltype(d)::value, decltype(ams)::value>{
            a, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq});
      });
    });
  });
}

// Adadelta. The options that change the shape of the arithmetic (maximize, weight decay, the
// subnormal flush) are template parameters, not tests inside the element loop: as runtime
// branches they kept GCC's host loop scalar ("not vectorized: control flow in loop": sqrtss and
// divss, ~3 ms of a one-thread MNIST step), fixed per instance the loop vectorises.
// visit_adadelta() below picks the instance.
template <bool kMaximize, bool kWeightDecay, bool kFlush>
struct AdadeltaUpdate {
  AdadeltaArgs a;
  float* param;
  const float* grad;
  float* square_avg;
  float* acc_delta;
  COHORT_HD void operator()(std::int64_t i) const {
    float g = kMaximize ? -grad[i] : grad[i];
    const float p = param[i];
    if (kWeightDecay) g = g + a.weight_decay * p;
    // See AdadeltaArgs::flush_subnormal_state: (2^-63)^2 is FLT_MIN. The product keeps torch's
    // addcmul order, (one_minus_rho * g) * g, so unflushed results stay bit-identical.
    const bool tiny_g = kFlush && fabsf(g) < 1.0842022e-19f;
    float sq = square_avg[i] * a.rho + (tiny_g ? 0.0f : a.one_minus_rho * g * g);
    if (kFlush && sq < 1.17549435e-38f) sq = 0.0f;
    square_avg[i] = sq;
    const float std_dev = sqrtf(sq + a.eps);
    const float acc = acc_delta[i];
    const float delta = sqrtf(acc + a.eps) / std_dev * g;
    float acc_new = acc * a.rho + a.one_minus_rho * delta * delta;
    if (kFlush && acc_new < 1.17549435e-38f) acc_new = 0.0f;
    acc_delta[i] = acc_new;
    param[i] = p + a.neg_lr * delta;
  }
};

// Calls fn(AdadeltaUpdate<...>{a, param, grad, square_avg, acc_delta}) with the instance a's
// options select. Host code (the backends' run()).
template <class Fn>
void visit_adadelta(const AdadeltaArgs& a, float* param, const float* grad, float* square_avg,
                    float* acc_delta, Fn&& fn) {
  with_flag(a.maximize, [&](auto m) {
    with_flag(a.weight_decay != 0.0f, [&](auto w) {
      with_flag(a.flush_subnormal_state, [&](auto f) {
        fn(AdadeltaUpdate<decltype(m)::value, decltype(w)::value, decltype(f)::value>{
            a, param, grad, square_avg, acc_delta});
      });
    });
  });
}

struct RmspropUpdate {
  RmspropArgs a;
  float* param;
  const float* grad;
  float* square_avg;
  float* grad_avg;         // read and written only when a.centered
  float* momentum_buffer;  // read and written only when a.momentum > 0
  COHORT_HD void operator()(std::int64_t i) const {
    float g = a.maximize ? -grad[i] : grad[i];
    const float p = param[i];
    if (a.weight_decay != 0.0f) g = g + a.weight_decay * p;
    const float sq = square_avg[i] * a.alpha + a.one_minus_alpha * g * g;
    square_avg[i] = sq;
    float avg;
    if (a.centered) {
      const float ga = grad_avg[i] * a.alpha + a.one_minus_alpha * g;
      grad_avg[i] = ga;
      avg = sqrtf(sq + -1.0f * ga * ga);
    } else {
      avg = sqrtf(sq);
    }
    avg = avg + a.eps;
    if (a.momentum > 0.0f) {
      const float buf = momentum_buffer[i] * a.momentum + g / avg;
      momentum_buffer[i] = buf;
      param[i] = p + a.neg_lr * buf;
    } else {
      param[i] = p + a.neg_lr * g / avg;
    }
  }
};

template <class Exec>
void run(Exec& e, const calls::SgdStep& c) {
  e.for_each("cohort::sgd_step", static_cast<i64>(c.n),
             SgdUpdate{c.a, c.param, c.grad, c.momentum_buffer});
}
template <class Exec>
void run(Exec& e, const calls::AdamStep& c) {
  visit_adam(c.a, c.param, c.grad, c.exp_avg, c.exp_avg_sq, c.max_exp_avg_sq,
             [&](const auto& update) {
               e.for_each("cohort::adam_step", static_cast<i64>(c.n), update);
             });
}
template <class Exec>
void run(Exec& e, const calls::AdadeltaStep& c) {
  visit_adadelta(c.a, c.param, c.grad, c.square_avg, c.acc_delta, [&](const auto& update) {
    e.for_each("cohort::adadelta_step", static_cast<i64>(c.n), update);
  });
}
template <class Exec>
void run(Exec& e, const calls::RmspropStep& c) {
  e.for_each("cohort::rmsprop_step", static_cast<i64>(c.n),
             RmspropUpdate{c.a, c.param, c.grad, c.square_avg, c.grad_avg, c.momentum_buffer});
}

// The GradScaler's pass (calls::UnscaleMaxAbs): item = block. Scales its elements in place and
// keeps the largest |x|, NaN winning (once m is NaN no comparison replaces it); every element is
// scaled, so no early exit.
struct UnscaleMaxAbsItem {
  float inv;
  float* x;
  i64 n, block;
  float* out;
  i64 cost() const { return block; }
  COHORT_HD void operator()(i64 b) const {
    const i64 lo = b * block, hi = lo + block < n ? lo + block : n;
    float m = 0.0f;
    for (i64 i = lo; i < hi; ++i) {
      const float v = x[i] * inv;
      x[i] = v;
      const float a = v < 0.0f ? -v : v;
      if (a > m || a != a) m = a;
    }
    out[b] = m;
  }
};

template <class Exec>
void run(Exec& e, const calls::UnscaleMaxAbs& c) {
  const i64 n = static_cast<i64>(c.n), block = static_cast<i64>(c.block);
  e.for_each("cohort::unscale_max_abs", (n + block - 1) / block,
             UnscaleMaxAbsItem{c.inv, c.x, n, block, c.out});
}

}  // namespace cohort::kernels
