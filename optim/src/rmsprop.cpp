// torch.optim.RMSprop: option checks and the per-parameter update (one fused device op).
#include "cohort/optim/rmsprop.hpp"

#include "checks.hpp"
#include "cohort/core/optim_ops.hpp"

namespace cohort::optim {

void RMSpropOptions::check(const std::string& who) const {
  detail::check_nonnegative(who, "lr", lr);
  detail::check_nonnegative(who, "alpha", alpha);
  detail::check_nonnegative(who, "eps", eps);
  detail::check_nonnegative(who, "weight_decay", weight_decay);
  detail::check_nonnegative(who, "momentum", momentum);
}

RMSprop::RMSprop(const std::vector<ParameterPtr>& params, const RMSpropOptions& options)
    : OptimizerWith("RMSprop", params, options) {}

const std::vector<std::string>& RMSprop::required_buffers() const {
  static const std::vector<std::string> names = {"square_avg"};
  return names;
}
const std::vector<std::string>& RMSprop::optional_buffers() const {
  static const std::vector<std::string> names = {"momentum_buffer", "grad_avg"};
  return names;
}

void RMSprop::update(std::size_t group, Slot& slot) {
  const RMSpropOptions& o = options_[group];
  RmspropArgs a;
  a.neg_lr = static_cast<float>(-o.lr);
  a.alpha = static_cast<float>(o.alpha);
  a.one_minus_alpha = static_cast<float>(1.0 - o.alpha);
  a.eps = static_cast<float>(o.eps);
  a.weight_decay = static_cast<float>(o.weight_decay);
  a.momentum = static_cast<float>(o.momentum);
  a.centered = o.centered;
  a.maximize = o.maximize;
  Tensor none_avg, none_buf;
  Tensor& square_avg = buffer(slot, "square_avg");
  Tensor& grad_avg = o.centered ? buffer(slot, "grad_avg") : none_avg;
  Tensor& momentum_buffer = a.momentum > 0.0f ? buffer(slot, "momentum_buffer") : none_buf;
  ops::rmsprop_step(slot.param->value, slot.param->grad, square_avg, grad_avg, momentum_buffer,
                    a);
  ++slot.step;
}

}  // namespace cohort::optim
