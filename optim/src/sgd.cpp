// torch.optim.SGD: the checks of its options and the per-parameter update (one fused device op).
#include "cohort/optim/sgd.hpp"

#include "checks.hpp"
#include "cohort/core/optim_ops.hpp"

namespace cohort::optim {

void SGDOptions::check(const std::string& who) const {
  COHORT_CHECK(!std::isnan(lr), who, ": lr is required (torch.optim.SGD has no default learning "
               "rate): set SGDOptions::lr");
  detail::check_nonnegative(who, "lr", lr);
  detail::check_nonnegative(who, "momentum", momentum);
  detail::check_finite(who, "dampening", dampening);
  detail::check_nonnegative(who, "weight_decay", weight_decay);
  COHORT_CHECK(!nesterov || (momentum > 0.0 && dampening == 0.0), who,
               ": Nesterov momentum requires a momentum and zero dampening (got momentum = ",
               momentum, ", dampening = ", dampening, ")");
}

SGD::SGD(const std::vector<ParameterPtr>& params, const SGDOptions& options)
    : OptimizerWith("SGD", params, options) {}

const std::vector<std::string>& SGD::required_buffers() const {
  static const std::vector<std::string> none;
  return none;
}
const std::vector<std::string>& SGD::optional_buffers() const {
  static const std::vector<std::string> names = {"momentum_buffer"};
  return names;
}

void SGD::update(std::size_t group, Slot& slot) {
  const SGDOptions& o = options_[group];
  SgdArgs a;
  // Each coefficient as Python computes it (double), rounded once to float as ATen does.
  a.neg_lr = static_cast<float>(-o.lr);
  a.momentum = static_cast<float>(o.momentum);
  a.one_minus_dampening = static_cast<float>(1.0 - o.dampening);
  a.weight_decay = static_cast<float>(o.weight_decay);
  a.nesterov = o.nesterov;
  a.maximize = o.maximize;
  Tensor none, fresh;
  Tensor* buf = &none;
  if (a.momentum != 0.0f) {  // as the kernel decides (a momentum that rounds to 0 is none)
    // torch keeps no buffer until the first step with momentum, then clones d_p into it; the new
    // buffer joins the state only once the op has been enqueued.
    const auto it = slot.buffers.find("momentum_buffer");
    a.first_step = it == slot.buffers.end();
    if (a.first_step) {
      const Tensor& v = slot.param->value;
      fresh = Tensor::empty(v.shape(), DType::f32, v.device());
      buf = &fresh;
    } else {
      buf = &it->second;
    }
  }
  ops::sgd_step(slot.param->value, slot.param->grad, *buf, a);
  if (a.first_step) slot.buffers.emplace("momentum_buffer", fresh);
  ++slot.step;
}

}  // namespace cohort::optim
