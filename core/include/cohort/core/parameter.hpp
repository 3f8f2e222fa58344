// A trainable tensor and its gradient. Shared (by pointer) between the module that owns it, the
// optimizer that updates it and data-parallel training that averages its gradient, so all three
// see one object; layers depend on core, and so do optim and parallel, but not on each other.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cohort/core/tensor.hpp"

namespace cohort {

struct Parameter {
  Tensor value;  // the weights
  // Same shape, dtype and device as value; backward accumulates into it. May be undefined (a
  // released gradient: ZeRO stage 2 frees it once its bucket is reduce-scattered); backward then
  // starts it at zeros (ensure_grad), and zero_grad skips it.
  Tensor grad;
  bool requires_grad = true;
  // Where a released gradient's memory comes from: when set, ensure_grad calls it instead of
  // allocating, and it must leave `grad` zeros of value's shape (ZeRO stage 2 points it at the
  // parameter's slice of its bucket, taken when the first of the bucket's gradients is needed).
  std::function<void(Parameter&)> grad_source;
};
using ParameterPtr = std::shared_ptr<Parameter>;

// A parameter with its PyTorch state_dict name ("features.0.weight", "fc1.bias").
struct NamedParameter {
  std::string name;
  ParameterPtr param;
};

// Makes a parameter holding `value` with a zero gradient of the same shape on the same device.
ParameterPtr make_parameter(Tensor value);

// p.grad, made zeros of value's shape first if it is undefined (by p.grad_source when set):
// what every write of a gradient goes through (Module::backward does it for a module's own
// parameters before its backward).
Tensor& ensure_grad(Parameter& p);

}  // namespace cohort
