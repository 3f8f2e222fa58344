// torch.optim.Adam and AdamW: option checks and the per-parameter update, one fused device op
// (adam_step) for both; AdamW only decouples the weight decay.
#include "cohort/optim/adam.hpp"

#include <cmath>

#include "checks.hpp"
#include "cohort/core/optim_ops.hpp"

namespace cohort::optim {
namespace {

template <class Options>
void check_adam(const Options& o, const std::string& who) {
  detail::check_nonnegative(who, "lr", o.lr);
  detail::check_nonnegative(who, "eps", o.eps);
  detail::check_unit_open(who, "betas.0 (beta1)", o.betas[0]);
  detail::check_unit_open(who, "betas.1 (beta2)", o.betas[1]);
  detail::check_nonnegative(who, "weight_decay", o.weight_decay);
}

const std::vector<std::string>& adam_required() {
  static const std::vector<std::string> names = {"exp_avg", "exp_avg_sq"};
  return names;
}
const std::vector<std::string>& adam_optional() {
  static const std::vector<std::string> names = {"max_exp_avg_sq"};
  return names;
}

}  // namespace

void AdamOptions::check(const std::string& who) const { check_adam(*this, who); }
void AdamWOptions::check(const std::string& who) const { check_adam(*this, who); }

namespace detail {

// One step of torch's _single_tensor_adam / _single_tensor_adamw for one parameter, shared by
// Adam and AdamW; `slot_buffer` returns a state buffer, created as zeros if missing.
template <class Options, class Slot, class BufferFn>
void adam_like_update(const Options& o, bool decoupled, Slot& slot, BufferFn slot_buffer) {
  // torch increments state['step'] before computing the bias corrections; here the count goes
  // up once the op has been enqueued.
  const double t = static_cast<double>(slot.step + 1);
  const double beta1 = o.betas[0], beta2 = o.betas[1];
  const double bias_correction1 = 1.0 - std::pow(beta1, t);
  const double bias_correction2 = 1.0 - std::pow(beta2, t);
  AdamArgs a;
  a.beta1 = static_cast<float>(beta1);
  a.one_minus_beta1 = static_cast<float>(1.0 - beta1);
  a.beta2 = static_cast<float>(beta2);
  a.one_minus_beta2 = static_cast<float>(1.0 - beta2);
  a.eps = static_cast<float>(o.eps);
  a.decoupled_weight_decay = decoupled;
  a.weight_decay = decoupled ? 0.0f : static_cast<float>(o.weight_decay);
  a.param_scale = decoupled ? static_cast<float>(1.0 - o.lr * o.weight_decay) : 1.0f;
  a.neg_step_size = static_cast<float>(-(o.lr / bias_correction1));
  a.bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  a.amsgrad = o.amsgrad;
  a.maximize = o.maximize;
  Tensor none;
  Tensor& m = slot_buffer(slot, "exp_avg");
  Tensor& v = slot_buffer(slot, "exp_avg_sq");
  Tensor& vmax = o.amsgrad ? slot_buffer(slot, "max_exp_avg_sq") : none;
  ops::adam_step(slot.param->value, slot.param->grad, m, v, vmax, a);
  ++slot.step;
}

}  // namespace detail

Adam::Adam(const std::vector<ParameterPtr>& params, const AdamOptions& options)
    : OptimizerWith("Adam", params, options) {}
const std::vector<std::string>& Adam::required_buffers() const { return adam_required(); }
const std::vector<std::string>& Adam::optional_buffers() const { return adam_optional(); }
void Adam::update(std::size_t group, Slot& slot) {
  detail::adam_like_update(options_[group], false, slot,
                           [](Slot& s, const char* n) -> Tensor& { return buffer(s, n); });
}

AdamW::AdamW(const std::vector<ParameterPtr>& params, const AdamWOptions& options)
    : OptimizerWith("AdamW", params, options) {}
const std::vector<std::string>& AdamW::required_buffers() const { return adam_required(); }
const std::vector<std::string>& AdamW::optional_buffers() const { return adam_optional(); }
void AdamW::update(std::size_t group, Slot& slot) {
  detail::adam_like_update(options_[group], true, slot,
                           [](Slot& s, const char* n) -> Tensor& { return buffer(s, n); });
}

}  // namespace cohort::optim
