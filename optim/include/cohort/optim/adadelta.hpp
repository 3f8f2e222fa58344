// torch.optim.Adadelta (Zeiler 2012), PyTorch 1.13's update order:
//   g = grad (negated if maximize) + weight_decay * p
//   square_avg = rho * square_avg + (1 - rho) * g * g
//   delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g
//   acc_delta = rho * acc_delta + (1 - rho) * delta * delta
//   p = p - lr * delta
#pragma once

#include <string>

#include "cohort/optim/optimizer.hpp"

namespace cohort::optim {

struct AdadeltaOptions {
  double lr = 1.0;
  double rho = 0.9;
  double eps = 1e-6;
  double weight_decay = 0.0;
  bool maximize = false;

  // lr, eps, weight_decay finite and >= 0; rho in [0, 1].
  void check(const std::string& optimizer) const;
  template <class Self, class F>
  static void fields(Self& o, F&& f) {
    f("lr", o.lr);
    f("rho", o.rho);
    f("eps", o.eps);
    f("weight_decay", o.weight_decay);
    f("maximize", o.maximize);
  }
};

// State per parameter: "square_avg", "acc_delta". No momentum: OneCycleLR's momentum cycling
// refuses it, as torch does.
class Adadelta final : public detail::OptimizerWith<AdadeltaOptions> {
 public:
  Adadelta(const std::vector<ParameterPtr>& params, const AdadeltaOptions& options = {});

 private:
  void update(std::size_t group, Slot& slot) override;
  const std::vector<std::string>& required_buffers() const override;
  const std::vector<std::string>& optional_buffers() const override;
};

}  // namespace cohort::optim
