// The Loss base: the forward/backward pairing and the finite-loss check shared by every loss;
// and the target check and reduction the losses share (loss_shared.hpp).
#include "cohort/core/device.hpp"
#include "cohort/layers/loss.hpp"

#include "cohort/core/ops.hpp"
#include "cohort/layers/module.hpp"
#include "loss_shared.hpp"

#include <cmath>
#include <sstream>
#include <vector>

namespace cohort::nn {
namespace {
// "nan" for every NaN (iostreams print "-nan" for a negative one), the value otherwise.
std::string show(float v) {
  if (std::isnan(v)) return "nan";
  std::ostringstream os;
  os << v;
  return os.str();
}
}  // namespace

namespace detail {

void check_class_targets(const std::string& loss, const Tensor& input, const Tensor& target,
                         const char* input_kind) {
  COHORT_CHECK(input.rank() == 2, loss, ": expected input [N, C] (", input_kind, "), got ",
               input.shape());
  COHORT_CHECK(target.dtype() == DType::i64 && target.rank() == 1 &&
                   target.dim(0) == input.dim(0),
               loss, ": expected target [", input.dim(0), "] of class indices (i64) for input ",
               input.shape(), ", got ", target.shape(), " ", dtype_name(target.dtype()));
}

Tensor reduce_rows(const Tensor& terms, float scale) {
  Tensor loss = Tensor::empty(Shape{}, DType::f32, terms.device());
  ops::reduce_sum(terms.reshape({1, terms.numel()}), loss);
  ops::scale(scale, loss, loss);
  return loss;
}

}  // namespace detail

float Loss::reduce_scale(std::int64_t elements) const {
  return reduction_ == Reduction::mean && elements > 0 ? 1.0f / static_cast<float>(elements)
                                                       : 1.0f;
}

Tensor Loss::forward(const Tensor& input, const Tensor& target) {
  COHORT_CHECK(input.defined() && target.defined(), name_, ": input or target is undefined");
  COHORT_CHECK(input.dtype() == DType::f32, name_, ": input must be f32, got ",
               dtype_name(input.dtype()), " (shape ", input.shape(), ")");
  COHORT_CHECK(&input.device() == &target.device(), name_, ": input is on ", input.device().name(),
               ", target on ", target.device().name());
  pending_ = false;
  Tensor loss;
  try {
    loss = forward_impl(input, target);
  } catch (const LayerError&) {
    throw;
  } catch (const Error& e) {  // an op's error: say which loss ran it
    const std::string l = name_ + ":";
    throw LayerError(e, e.why().compare(0, l.size(), l) == 0 ? e.why() : l + " " + e.why());
  }
  pending_ = true;
  if (check_finite_) {
    value_ = static_cast<float>(loss.item());
    if (!std::isfinite(value_)) {
      // Say where the problem entered: the first non-finite input element, if any.
      std::ostringstream where;
      const std::vector<float> v = input.to_vector<float>();
      for (std::size_t i = 0; i < v.size(); ++i)
        if (!std::isfinite(v[i])) {
          where << "; input element " << i << " (flat index) is " << show(v[i]);
          break;
        }
      if (where.str().empty()) where << "; every input element is finite (the loss overflowed)";
      COHORT_FAIL(name_, ": loss is ", show(value_), " for input ", input.shape(), " and target ",
                  target.shape(), where.str());
    }
  }
  return loss;
}

Tensor Loss::backward(float grad_scale) {
  COHORT_CHECK(pending_, name_, ": backward without a forward to match");
  pending_ = false;
  return backward_impl(grad_scale);
}

}  // namespace cohort::nn
