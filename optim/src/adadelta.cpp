// torch.optim.Adadelta: option checks and the per-parameter update (one fused device op).
#include "cohort/optim/adadelta.hpp"
#include <cstdlib>

#include "checks.hpp"
#include "cohort/core/optim_ops.hpp"

namespace cohort::optim {

void AdadeltaOptions::check(const std::string& who) const {
  detail::check_nonnegative(who, "lr", lr);
  detail::check_unit_closed(who, "rho", rho);
  detail::check_nonnegative(who, "eps", eps);
  detail::check_nonnegative(who, "weight_decay", weight_decay);
}

Adadelta::Adadelta(const std::vector<ParameterPtr>& params, const AdadeltaOptions& options)
    : OptimizerWith("Adadelta", params, options) {}

const std::vector<std::string>& Adadelta::required_buffers() const {
  static const std::vector<std::string> names = {"square_avg", "acc_delta"};
  return names;
}
const std::vector<std::string>& Adadelta::optional_buffers() const {
  static const std::vector<std::string> none;
  return none;
}

void Adadelta::update(std::size_t group, Slot& slot) {
  const AdadeltaOptions& o = options_[group];
  AdadeltaArgs a;
  a.neg_lr = static_cast<float>(-o.lr);
  a.rho = static_cast<float>(o.rho);
  a.one_minus_rho = static_cast<float>(1.0 - o.rho);
  a.eps = static_cast<float>(o.eps);
  a.weight_decay = static_cast<float>(o.weight_decay);
  a.maximize = o.maximize;
  // See AdadeltaArgs: with such an eps the flush is invisible in every result.
  a.flush_subnormal_state = a.eps > 0x1p-102f && !std::getenv("COHORT_ADADELTA_NO_FLUSH");
  ops::adadelta_step(slot.param->value, slot.param->grad, buffer(slot, "square_avg"),
                     buffer(slot, "acc_delta"), a);
  ++slot.step;
}

}  // namespace cohort::optim
