// Flatten: a reshape view forward and backward (tensors are contiguous, so no copy is needed).
#include "cohort/layers/flatten.hpp"

namespace cohort::nn {

Shape Flatten::output_shape_impl(const Shape& input) const {
  const int rank = static_cast<int>(input.rank());
  const int s = start_ < 0 ? start_ + rank : start_;
  const int e = end_ < 0 ? end_ + rank : end_;
  COHORT_MODULE_CHECK(rank >= 1 && s >= 0 && s < rank && e >= 0 && e < rank && s <= e,
                      "start_dim ", start_, " and end_dim ", end_, " do not fit input ", input);
  std::vector<std::int64_t> d;
  for (int i = 0; i < s; ++i) d.push_back(input[i]);
  std::int64_t m = 1;
  for (int i = s; i <= e; ++i) m *= input[i];
  d.push_back(m);
  for (int i = e + 1; i < rank; ++i) d.push_back(input[i]);
  return Shape(d);
}

Tensor Flatten::forward_impl(const Tensor& x) {
  x_shape_ = x.shape();
  return x.reshape(output_shape_impl(x.shape()));
}

Tensor Flatten::backward_impl(const Tensor& grad_output, bool need_input_grad) {
  return need_input_grad ? grad_output.reshape(x_shape_) : Tensor();
}

}  // namespace cohort::nn
