// Conv2d: 2-D convolution over NCHW input with an OIHW weight, as torch.nn.Conv2d (stride,
// padding, dilation, groups, optional bias; padding_mode 'zeros').
#pragma once

#include <cstdint>

#include "cohort/core/op_options.hpp"
#include "cohort/core/layer_ops.hpp"
#include "cohort/layers/module.hpp"

namespace cohort::nn {

class Sequential;

// Conv2dOptions(in, out, kernel).stride(2).padding(1): square or (h, w) values, PyTorch's defaults.
struct Conv2dOptions {
  Conv2dOptions(std::int64_t in, std::int64_t out, std::int64_t kernel)
      : in_channels(in), out_channels(out), kernel_h(kernel), kernel_w(kernel) {}
  Conv2dOptions(std::int64_t in, std::int64_t out, std::int64_t kh, std::int64_t kw)
      : in_channels(in), out_channels(out), kernel_h(kh), kernel_w(kw) {}
  Conv2dOptions& stride(std::int64_t s) { return stride(s, s); }
  Conv2dOptions& stride(std::int64_t h, std::int64_t w) {
    p.stride_h = h;
    p.stride_w = w;
    return *this;
  }
  Conv2dOptions& padding(std::int64_t s) { return padding(s, s); }
  Conv2dOptions& padding(std::int64_t h, std::int64_t w) {
    p.pad_h = h;
    p.pad_w = w;
    return *this;
  }
  Conv2dOptions& dilation(std::int64_t s) { return dilation(s, s); }
  Conv2dOptions& dilation(std::int64_t h, std::int64_t w) {
    p.dil_h = h;
    p.dil_w = w;
    return *this;
  }
  Conv2dOptions& groups(std::int64_t g) { p.groups = g; return *this; }
  Conv2dOptions& bias(bool b) { with_bias = b; return *this; }

  std::int64_t in_channels, out_channels, kernel_h, kernel_w;
  ops::Conv2dParams p;  // stride, padding, dilation, groups
  bool with_bias = true;
};

class Conv2d : public Module {
 public:
  // weight [out, in / groups, kh, kw] Kaiming-uniform (a = sqrt(5)), bias U(+-1/sqrt(fan_in)),
  // fan_in = in / groups * kh * kw: PyTorch's defaults.
  Conv2d(const Conv2dOptions& options, Device& device);

  const ParameterPtr& weight() const { return weight_; }
  const ParameterPtr& bias() const { return bias_; }  // null without bias
  const Conv2dOptions& options() const { return options_; }

 protected:
  Tensor forward_impl(const Tensor& x) override;
  Tensor backward_impl(const Tensor& grad_output, bool need_input_grad) override;
  Shape output_shape_impl(const Shape& input) const override;
  void release_saved() override { x_ = Tensor(); }

 private:
  // The Sequential fusion (sequential.hpp) is the only caller: internal coordination, not API.
  friend class Sequential;
  // Applies `f` to the output inside the convolution's own pass over it (where it costs nothing:
  // each image's output is still in cache after its GEMM). Sequential uses this for
  // Conv2d -> ReLU/Sigmoid/Tanh pairs, whose backward needs only the output; the activation
  // module then adopts that output (ActivationLayer::adopt_fused_output). Applies to the next
  // forward only.
  void fuse_activation_once(Activation f) { fused_ = f; }

  Conv2dOptions options_;
  ParameterPtr weight_, bias_;
  Activation fused_ = Activation::identity;
  Tensor x_;
};

}  // namespace cohort::nn
