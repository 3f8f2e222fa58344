// A trainable tensor and its gradient. Shared (by pointer) between the module that owns it, the
// optimizer that updates it and data-parallel training that averages its gradient, so all three
// see one object; layers depend on core, and so do optim and parallel, but not on each other.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cohort/core/tensor.hpp"

namespace cohort {

struct Parameter {
  Tensor value;  // the weights
  Tensor grad;   // same shape, dtype and device as value; backward accumulates into it
  bool requires_grad = true;
};
using ParameterPtr = std::shared_ptr<Parameter>;

// A parameter with its PyTorch state_dict name ("features.0.weight", "fc1.bias").
struct NamedParameter {
  std::string name;
  ParameterPtr param;
};

// Makes a parameter holding `value` with a zero gradient of the same shape on the same device.
ParameterPtr make_parameter(Tensor value);

}  // namespace cohort
