// Fits a small least-squares problem, min_w mean((X w - y)^2), with every optimizer of
// cohort::optim, each driven by a learning-rate scheduler, then shows that an optimizer restored
// from a saved state continues exactly where the original would have.
//
// The gradient is computed by hand with GEMM: grad = 2/N X^T (X w - y). Everything runs on the
// device chosen by cohort::device() (--device or COHORT_DEVICE; the best available by default).
//
//   build/bin/optim_demo [--device host|cuda] [--steps N]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <cohort/core/ops.hpp>
#include <cohort/devices.hpp>
#include <cohort/optim.hpp>

namespace {

using cohort::Tensor;
namespace optim = cohort::optim;

constexpr std::int64_t kN = 256;  // samples
constexpr std::int64_t kD = 8;    // features

struct Problem {
  Tensor x, y, w_true;
};

Problem make_problem(cohort::Device& dev) {
  Problem p;
  p.x = Tensor::uniform({kN, kD}, -1.0f, 1.0f, /*seed=*/1, dev);
  p.w_true = Tensor::normal({kD, 1}, 0.0f, 1.0f, /*seed=*/2, dev);
  p.y = cohort::ops::matmul(p.x, p.w_true);
  const Tensor noise = Tensor::normal({kN, 1}, 0.0f, 0.01f, /*seed=*/3, dev);
  cohort::ops::add(p.y, noise, p.y);
  return p;
}

// Loss at w, and w's gradient written into param.grad.
float loss_and_grad(const Problem& p, cohort::Parameter& param) {
  Tensor r = cohort::ops::matmul(p.x, param.value);  // X w
  cohort::ops::sub(r, p.y, r);                        // r = X w - y
  cohort::ops::gemm(p.x, /*trans_a=*/true, r, false, param.grad, 2.0f / kN, 0.0f);
  Tensor sq = Tensor::empty(r.shape(), cohort::DType::f32, r.device());
  cohort::ops::mul(r, r, sq);
  return cohort::ops::sum(sq) / kN;
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  const auto x = a.to_vector<float>(), y = b.to_vector<float>();
  float m = 0.0f;
  for (std::size_t i = 0; i < x.size(); ++i) m = std::fmax(m, std::fabs(x[i] - y[i]));
  return m;
}

struct Run {
  std::string optimizer, scheduler;
  std::function<std::unique_ptr<optim::Optimizer>(const std::vector<cohort::ParameterPtr>&)>
      make_optimizer;
  std::function<std::unique_ptr<optim::Scheduler>(optim::Optimizer&, int steps)> make_scheduler;
};

std::vector<Run> runs() {
  using P = std::vector<cohort::ParameterPtr>;
  return {
      {"SGD(lr=0.1, momentum=0.9)", "StepLR(step_size=100, gamma=0.5)",
       [](const P& ps) {
         optim::SGDOptions o;
         o.lr = 0.1;
         o.momentum = 0.9;
         return std::make_unique<optim::SGD>(ps, o);
       },
       [](optim::Optimizer& o, int) { return std::make_unique<optim::StepLR>(o, 100, 0.5); }},
      {"SGD(lr=0.1, momentum=0.9, nesterov)", "CosineAnnealingLR(T_max=steps)",
       [](const P& ps) {
         optim::SGDOptions o;
         o.lr = 0.1;
         o.momentum = 0.9;
         o.nesterov = true;
         return std::make_unique<optim::SGD>(ps, o);
       },
       [](optim::Optimizer& o, int steps) {
         return std::make_unique<optim::CosineAnnealingLR>(o, steps);
       }},
      {"Adam(lr=0.05)", "CosineAnnealingLR(T_max=steps)",
       [](const P& ps) {
         optim::AdamOptions o;
         o.lr = 0.05;
         return std::make_unique<optim::Adam>(ps, o);
       },
       [](optim::Optimizer& o, int steps) {
         return std::make_unique<optim::CosineAnnealingLR>(o, steps);
       }},
      {"AdamW(weight_decay=1e-4)", "OneCycleLR(max_lr=0.1)",
       [](const P& ps) {
         optim::AdamWOptions o;
         o.weight_decay = 1e-4;
         return std::make_unique<optim::AdamW>(ps, o);
       },
       [](optim::Optimizer& o, int steps) {
         optim::OneCycleLRArgs a;
         a.max_lr = {0.1};
         a.total_steps = steps;
         return std::make_unique<optim::OneCycleLR>(o, a);
       }},
      {"Adadelta(lr=1.0)", "ExponentialLR(gamma=0.999)",
       [](const P& ps) { return std::make_unique<optim::Adadelta>(ps); },
       [](optim::Optimizer& o, int) { return std::make_unique<optim::ExponentialLR>(o, 0.999); }},
      {"RMSprop(lr=0.01)", "LinearLR(0.1 -> 1 over 20 steps)",
       [](const P& ps) { return std::make_unique<optim::RMSprop>(ps); },
       [](optim::Optimizer& o, int) { return std::make_unique<optim::LinearLR>(o, 0.1, 1.0, 20); }},
  };
}

}  // namespace

int main(int argc, char** argv) {
  std::string spec;
  int steps = 300;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--device") && i + 1 < argc) {
      spec = argv[++i];
    } else if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--device host|cuda] [--steps N]\n", argv[0]);
      return 2;
    }
  }
  try {
    cohort::Device& dev = cohort::device(spec);
    std::printf("host threads: %d per rank (%s)\n", cohort::host_threads().threads,
                cohort::host_threads().reason.c_str());
    const Problem prob = make_problem(dev);
    std::printf("least squares: X [%lld, %lld], y = X w* + noise(0.01), %d steps on %s\n\n",
                static_cast<long long>(kN), static_cast<long long>(kD), steps,
                dev.name().c_str());
    std::printf("%-37s %-33s %10s %10s %10s %10s %11s %9s\n", "optimizer", "scheduler", "loss@0",
                "loss@50", "loss@100", "final", "max|w-w*|", "final lr");
    for (const Run& run : runs()) {
      auto w = cohort::make_parameter(Tensor::zeros({kD, 1}, cohort::DType::f32, dev));
      auto opt = run.make_optimizer({w});
      auto sched = run.make_scheduler(*opt, steps);
      float loss[3] = {0, 0, 0}, last = 0;
      for (int s = 0; s < steps; ++s) {
        opt->zero_grad();
        last = loss_and_grad(prob, *w);
        if (s == 0) loss[0] = last;
        if (s == 50) loss[1] = last;
        if (s == 100) loss[2] = last;
        opt->step();
        sched->step();
      }
      last = loss_and_grad(prob, *w);
      std::printf("%-37s %-33s %10.3e %10.3e %10.3e %10.3e %11.2e %9.3g\n",
                  run.optimizer.c_str(), run.scheduler.c_str(), loss[0], loss[1], loss[2], last,
                  max_abs_diff(w->value, prob.w_true), opt->lr());
    }

    // Save and restore: Adam + CosineAnnealingLR for 40 steps, state saved at step 20 and
    // restored into a fresh optimizer and scheduler (copied weights) for the last 20.
    std::printf("\nsave/restore: ");
    auto w = cohort::make_parameter(Tensor::zeros({kD, 1}, cohort::DType::f32, dev));
    optim::AdamOptions ao;
    ao.lr = 0.05;
    optim::Adam adam({w}, ao);
    optim::CosineAnnealingLR cos(adam, 40);
    optim::StateDict opt_state, sched_state;
    Tensor w20;
    for (int s = 0; s < 40; ++s) {
      if (s == 20) {
        opt_state = adam.state();
        sched_state = cos.state();
        w20 = w->value.clone();
      }
      loss_and_grad(prob, *w);
      adam.step();
      cos.step();
    }
    auto w2 = cohort::make_parameter(w20);
    optim::Adam adam2({w2});  // default lr: load_state brings back lr = 0.05 and the moments
    optim::CosineAnnealingLR cos2(adam2, 40);
    adam2.load_state(opt_state);
    cos2.load_state(sched_state);
    for (int s = 20; s < 40; ++s) {
      loss_and_grad(prob, *w2);
      adam2.step();
      cos2.step();
    }
    std::printf("state at step 20 has %zu tensors and %zu scalars; after 20 more steps the "
                "restored run differs from the original by %g (max |w - w'|)\n",
                opt_state.tensors.size(), opt_state.scalars.size(),
                max_abs_diff(w->value, w2->value));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "optim_demo: %s\n", e.what());
    return 1;
  }
  return 0;
}
