// Softmax and LogSoftmax along one dimension, as torch.nn.Softmax(dim) / LogSoftmax(dim).
#pragma once

#include "cohort/layers/module.hpp"

namespace cohort::nn {

class SoftmaxLayer : public Module {
 public:
  int dim() const { return dim_; }

 protected:
  SoftmaxLayer(std::string type, bool log, int dim)
      : Module(std::move(type)), log_(log), dim_(dim) {}
  Tensor forward_impl(const Tensor& x) override;
  Tensor backward_impl(const Tensor& grad_output, bool need_input_grad) override;
  Shape output_shape_impl(const Shape& input) const override;
  void release_saved() override { y_ = Tensor(); }

 private:
  bool log_;
  int dim_;
  Tensor y_;
};

class Softmax : public SoftmaxLayer {
 public:
  explicit Softmax(int dim) : SoftmaxLayer("Softmax", false, dim) {}
};
class LogSoftmax : public SoftmaxLayer {
 public:
  explicit LogSoftmax(int dim) : SoftmaxLayer("LogSoftmax", true, dim) {}
};

}  // namespace cohort::nn
