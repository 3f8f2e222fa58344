// Parameter: a tensor with its gradient (and whether it wants one), what optimizers and DDP walk.
#include "cohort/core/parameter.hpp"

namespace cohort {

ParameterPtr make_parameter(Tensor value) {
  COHORT_CHECK(value.defined(), "make_parameter: undefined tensor");
  auto p = std::make_shared<Parameter>();
  p->grad = Tensor::zeros(value.shape(), value.dtype(), value.device());
  p->value = std::move(value);
  return p;
}

Tensor& ensure_grad(Parameter& p) {
  if (p.grad.defined()) return p.grad;
  if (p.grad_source) p.grad_source(p);
  COHORT_CHECK(!p.grad_source || (p.grad.defined() && p.grad.shape() == p.value.shape()),
               "ensure_grad: the parameter's grad_source left no gradient of shape ",
               p.value.shape().str());
  if (!p.grad.defined()) p.grad = Tensor::zeros(p.value.shape(), p.value.dtype(), p.value.device());
  return p.grad;
}

}  // namespace cohort
