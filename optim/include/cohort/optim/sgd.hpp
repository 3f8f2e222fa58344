// torch.optim.SGD: stochastic gradient descent with optional momentum, dampening, Nesterov
// momentum, L2 weight decay and maximisation, with PyTorch 1.13's update order:
//   g = grad (negated if maximize) + weight_decay * p
//   buf = g on the first step, else momentum * buf + (1 - dampening) * g     (if momentum != 0)
//   g = nesterov ? g + momentum * buf : buf
//   p = p - lr * g
#pragma once

#include <limits>
#include <string>

#include "cohort/optim/optimizer.hpp"

namespace cohort::optim {

struct SGDOptions {
  // Required, as in torch (no default): NaN until set, which the constructor refuses.
  double lr = std::numeric_limits<double>::quiet_NaN();
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;  // needs momentum > 0 and dampening == 0
  bool maximize = false;

  // Throws cohort::Error naming `optimizer`, the field and its value: lr, momentum and
  // weight_decay must be finite and >= 0, dampening finite, Nesterov as above.
  void check(const std::string& optimizer) const;
  template <class Self, class F>
  static void fields(Self& o, F&& f) {
    f("lr", o.lr);
    f("momentum", o.momentum);
    f("dampening", o.dampening);
    f("weight_decay", o.weight_decay);
    f("nesterov", o.nesterov);
    f("maximize", o.maximize);
  }
};

// State per parameter: "momentum_buffer" (once a step ran with momentum != 0).
class SGD final : public detail::OptimizerWith<SGDOptions> {
 public:
  SGD(const std::vector<ParameterPtr>& params, const SGDOptions& options);

 private:
  void update(std::size_t group, Slot& slot) override;
  const std::vector<std::string>& required_buffers() const override;
  const std::vector<std::string>& optional_buffers() const override;
};

}  // namespace cohort::optim
