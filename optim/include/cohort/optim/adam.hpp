// torch.optim.Adam and torch.optim.AdamW, PyTorch 1.13's update order (t = the parameter's step):
//   g = grad (negated if maximize)
//   Adam:  g = g + weight_decay * p            AdamW:  p = p * (1 - lr * weight_decay)
//   m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g * g
//   vmax = max(vmax, v) and use vmax in place of v            (if amsgrad)
//   p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
#pragma once

#include <array>
#include <string>

#include "cohort/optim/optimizer.hpp"

namespace cohort::optim {

struct AdamOptions {
  double lr = 1e-3;
  std::array<double, 2> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0.0;  // L2 penalty added to the gradient
  bool amsgrad = false;
  bool maximize = false;

  // lr, eps, weight_decay finite and >= 0; each beta in [0, 1).
  void check(const std::string& optimizer) const;
  template <class Self, class F>
  static void fields(Self& o, F&& f) {
    f("lr", o.lr);
    f("betas.0", o.betas[0]);
    f("betas.1", o.betas[1]);
    f("eps", o.eps);
    f("weight_decay", o.weight_decay);
    f("amsgrad", o.amsgrad);
    f("maximize", o.maximize);
  }
};

// Same fields as AdamOptions; weight_decay is decoupled (applied to the weights) and defaults to
// 1e-2, as in torch.optim.AdamW.
struct AdamWOptions {
  double lr = 1e-3;
  std::array<double, 2> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
  bool maximize = false;

  void check(const std::string& optimizer) const;
  template <class Self, class F>
  static void fields(Self& o, F&& f) {
    AdamOptions::fields(o, f);
  }
};

// State per parameter: "exp_avg", "exp_avg_sq" and, with amsgrad, "max_exp_avg_sq".
class Adam final : public detail::OptimizerWith<AdamOptions> {
 public:
  Adam(const std::vector<ParameterPtr>& params, const AdamOptions& options = {});

 private:
  void update(std::size_t group, Slot& slot) override;
  const std::vector<std::string>& required_buffers() const override;
  const std::vector<std::string>& optional_buffers() const override;
};

class AdamW final : public detail::OptimizerWith<AdamWOptions> {
 public:
  AdamW(const std::vector<ParameterPtr>& params, const AdamWOptions& options = {});

 private:
  void update(std::size_t group, Slot& slot) override;
  const std::vector<std::string>& required_buffers() const override;
  const std::vector<std::string>& optional_buffers() const override;
};

}  // namespace cohort::optim
