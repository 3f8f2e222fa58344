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

}  // namespace cohort
