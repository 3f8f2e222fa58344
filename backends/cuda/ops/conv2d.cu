// The conv2d family on the CUDA device (conv2d_forward conv2d_backward_data
// conv2d_backward_filter): backends/common/ops/conv2d.hpp on the Thrust executor, and first cuDNN
// (cuda/conv2d.cpp), 16-bit copies under autocast; the shared im2col + cuBLAS where cuDNN declines.
#include "cuda_exec.cuh"

#include "common/ops/conv2d.hpp"

namespace cohort::cuda {

namespace {
// Under autocast a case cuDNN declines in 16-bit runs as an f32 call (cuDNN or the shared kernels).
template <class Call>
Call as_f32(const Call& c) {
  Call f = c;
  f.a.compute = DType::f32;
  return f;
}
}  // namespace

void run(CudaExec& e, const calls::Conv2dForward& c) {
  if (c.a.compute != DType::f32) {
    if (!e.conv_lowp(c)) return run(e, as_f32(c));
  } else {
    bool bias_act = false;  // conv + bias + ReLU in one cuDNN call (cuda/conv2d.cpp)
    if (!e.cudnn().conv_forward(c, nullptr, &bias_act)) return kernels::run(e, c);
    if (bias_act) return;
  }
  kernels::conv2d_bias_act_pass(e, c.a, c.bias, c.y);  // one pass over y for the whole batch
}
void run(CudaExec& e, const calls::Conv2dBackwardData& c) {
  if (c.a.compute != DType::f32) {
    if (!e.conv_lowp(c)) run(e, as_f32(c));
  } else if (!e.cudnn().conv_backward_data(c)) {
    kernels::run(e, c);
  }
}
void run(CudaExec& e, const calls::Conv2dBackwardFilter& c) {
  if (c.a.compute != DType::f32) {
    if (!e.conv_lowp(c)) return run(e, as_f32(c));
  } else if (!e.cudnn().conv_backward_filter(c)) {
    return kernels::run(e, c);
  }
  // dbias += sum dy through cuDNN's reduction: the shared pass is one thread per channel, each
  // summing N * P * Q values (GPU review G2); it stays as the fallback.
  if (c.dbias && !e.cudnn().conv_backward_bias(c)) kernels::conv2d_bias_grad_pass(e, c);
}

}  // namespace cohort::cuda

COHORT_CUDA_RUN_OP_DEF(Conv2dForward)
COHORT_CUDA_RUN_OP_DEF(Conv2dBackwardData)
COHORT_CUDA_RUN_OP_DEF(Conv2dBackwardFilter)
