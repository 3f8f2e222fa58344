// Softmax / LogSoftmax: one op each way; backward reads only the output.
#include "cohort/layers/softmax.hpp"

#include "cohort/core/layer_ops.hpp"

namespace cohort::nn {

Shape SoftmaxLayer::output_shape_impl(const Shape& input) const {
  const int rank = static_cast<int>(input.rank());
  COHORT_MODULE_CHECK(rank >= 1 && dim_ >= -rank && dim_ < rank, "dim ", dim_,
                      " is out of range for input ", input);
  return input;
}

Tensor SoftmaxLayer::forward_impl(const Tensor& x) {
  output_shape_impl(x.shape());
  COHORT_MODULE_CHECK(x.dtype() == DType::f32, "input must be f32, got ", dtype_name(x.dtype()));
  Tensor y = Tensor::empty(x.shape(), DType::f32, x.device());
  ops::softmax_forward(log_, x, y, dim_);
  y_ = y;
  return y;
}

Tensor SoftmaxLayer::backward_impl(const Tensor& grad_output, bool need_input_grad) {
  Tensor dx;
  if (need_input_grad) {
    dx = Tensor::empty(grad_output.shape(), DType::f32, grad_output.device());
    ops::softmax_backward(log_, y_, grad_output, dx, dim_);
  }
  y_ = Tensor();
  return dx;
}

}  // namespace cohort::nn
