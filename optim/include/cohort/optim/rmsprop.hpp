// torch.optim.RMSprop, PyTorch 1.13's update order:
//   g = grad (negated if maximize) + weight_decay * p
//   square_avg = alpha * square_avg + (1 - alpha) * g * g
//   centered:  grad_avg = alpha * grad_avg + (1 - alpha) * g;
//              avg = sqrt(square_avg - grad_avg^2) + eps
//   else       avg = sqrt(square_avg) + eps
//   momentum > 0:  buf = momentum * buf + g / avg;  p = p - lr * buf
//   else           p = p - lr * g / avg
#pragma once

#include <string>

#include "cohort/optim/optimizer.hpp"

namespace cohort::optim {

struct RMSpropOptions {
  double lr = 1e-2;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0.0;
  double momentum = 0.0;
  bool centered = false;
  bool maximize = false;

  // lr, alpha, eps, weight_decay, momentum finite and >= 0.
  void check(const std::string& optimizer) const;
  template <class Self, class F>
  static void fields(Self& o, F&& f) {
    f("lr", o.lr);
    f("alpha", o.alpha);
    f("eps", o.eps);
    f("weight_decay", o.weight_decay);
    f("momentum", o.momentum);
    f("centered", o.centered);
    f("maximize", o.maximize);
  }
};

// State per parameter: "square_avg"; "momentum_buffer" when momentum > 0; "grad_avg" when
// centered.
class RMSprop final : public detail::OptimizerWith<RMSpropOptions> {
 public:
  RMSprop(const std::vector<ParameterPtr>& params, const RMSpropOptions& options = {});

 private:
  void update(std::size_t group, Slot& slot) override;
  const std::vector<std::string>& required_buffers() const override;
  const std::vector<std::string>& optional_buffers() const override;
};

}  // namespace cohort::optim
