// Pooling over NCHW input: MaxPool2d, AvgPool2d and AdaptiveAvgPool2d, as their torch.nn
// namesakes (ceil_mode=False; AdaptiveAvgPool2d for output sizes that divide the input, which
// includes the global pooling AdaptiveAvgPool2d(1) of ResNets).
#pragma once

#include "cohort/core/layer_ops.hpp"
#include "cohort/layers/module.hpp"

namespace cohort::nn {

// MaxPool2dOptions(kernel).stride(s).padding(p).dilation(d); stride defaults to the kernel size.
struct MaxPool2dOptions {
  explicit MaxPool2dOptions(std::int64_t k) : MaxPool2dOptions(k, k) {}
  MaxPool2dOptions(std::int64_t kh, std::int64_t kw) {
    p.kind = PoolKind::max;
    p.kh = p.stride_h = kh;
    p.kw = p.stride_w = kw;
  }
  MaxPool2dOptions& stride(std::int64_t s) { return stride(s, s); }
  MaxPool2dOptions& stride(std::int64_t h, std::int64_t w) {
    p.stride_h = h;
    p.stride_w = w;
    return *this;
  }
  MaxPool2dOptions& padding(std::int64_t s) { return padding(s, s); }
  MaxPool2dOptions& padding(std::int64_t h, std::int64_t w) {
    p.pad_h = h;
    p.pad_w = w;
    return *this;
  }
  MaxPool2dOptions& dilation(std::int64_t s) { return dilation(s, s); }
  MaxPool2dOptions& dilation(std::int64_t h, std::int64_t w) {
    p.dil_h = h;
    p.dil_w = w;
    return *this;
  }
  ops::Pool2dParams p;
};

// AvgPool2dOptions(kernel).stride(s).padding(p).count_include_pad(b).
struct AvgPool2dOptions {
  explicit AvgPool2dOptions(std::int64_t k) : AvgPool2dOptions(k, k) {}
  AvgPool2dOptions(std::int64_t kh, std::int64_t kw) {
    p.kind = PoolKind::avg;
    p.kh = p.stride_h = kh;
    p.kw = p.stride_w = kw;
  }
  AvgPool2dOptions& stride(std::int64_t s) { return stride(s, s); }
  AvgPool2dOptions& stride(std::int64_t h, std::int64_t w) {
    p.stride_h = h;
    p.stride_w = w;
    return *this;
  }
  AvgPool2dOptions& padding(std::int64_t s) { return padding(s, s); }
  AvgPool2dOptions& padding(std::int64_t h, std::int64_t w) {
    p.pad_h = h;
    p.pad_w = w;
    return *this;
  }
  AvgPool2dOptions& count_include_pad(bool b) { p.count_include_pad = b; return *this; }
  ops::Pool2dParams p;
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(const MaxPool2dOptions& o) : Module("MaxPool2d"), params_(o.p) {}
  const ops::Pool2dParams& params() const { return params_; }

 protected:
  Tensor forward_impl(const Tensor& x) override;
  Tensor backward_impl(const Tensor& grad_output, bool need_input_grad) override;
  Shape output_shape_impl(const Shape& input) const override;
  void release_saved() override { argmax_ = Tensor(); }

 private:
  ops::Pool2dParams params_;
  Shape x_shape_;
  Tensor argmax_;  // i32, per output: the winner's index in its input plane
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(const AvgPool2dOptions& o) : Module("AvgPool2d"), params_(o.p) {}
  const ops::Pool2dParams& params() const { return params_; }

 protected:
  Tensor forward_impl(const Tensor& x) override;
  Tensor backward_impl(const Tensor& grad_output, bool need_input_grad) override;
  Shape output_shape_impl(const Shape& input) const override;

 private:
  ops::Pool2dParams params_;
  Shape x_shape_;
};

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(std::int64_t output_size)
      : AdaptiveAvgPool2d(output_size, output_size) {}
  AdaptiveAvgPool2d(std::int64_t out_h, std::int64_t out_w)
      : Module("AdaptiveAvgPool2d"), out_h_(out_h), out_w_(out_w) {}

 protected:
  Tensor forward_impl(const Tensor& x) override;
  Tensor backward_impl(const Tensor& grad_output, bool need_input_grad) override;
  Shape output_shape_impl(const Shape& input) const override;

 private:
  ops::Pool2dParams params_for(const Shape& input) const;  // the equivalent average pooling
  std::int64_t out_h_, out_w_;
  Shape x_shape_;
};

}  // namespace cohort::nn
