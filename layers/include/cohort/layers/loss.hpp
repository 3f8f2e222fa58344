// Losses: CrossEntropyLoss (log-softmax and NLL fused: stable for any logits), NLLLoss (on
// log-probabilities) and MSELoss, with mean or sum reduction, as their torch.nn namesakes.
//
//   Tensor loss = criterion.forward(output, target);   // shape [], on the input's device
//   Tensor grad = criterion.backward();                // d(loss)/d(output), output's shape
//
// forward reads the loss back to the host (one synchronisation) and throws when it is NaN or
// infinite, naming the loss, the shapes and the first non-finite input element, so a diverging
// run stops at the step that diverged. value() returns that host copy.
#pragma once

#include <string>

#include "cohort/core/tensor.hpp"

namespace cohort::nn {

enum class Reduction { mean, sum };

class Loss {
 public:
  virtual ~Loss() = default;
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  // Gradient of (grad_scale * loss) w.r.t. the last forward's input.
  Tensor backward(float grad_scale = 1.0f);

  float value() const { return value_; }  // the last forward's loss
  Reduction reduction() const { return reduction_; }
  const std::string& name() const { return name_; }
  // Off: forward does not read the loss back (no synchronisation) and never checks it; value()
  // then keeps the last value read, so read the returned tensor instead.
  void set_check_finite(bool on) { check_finite_ = on; }
  bool check_finite() const { return check_finite_; }

 protected:
  Loss(std::string name, Reduction r) : name_(std::move(name)), reduction_(r) {}
  // Returns the loss as a [] tensor on the input's device; saves what backward_impl needs.
  virtual Tensor forward_impl(const Tensor& input, const Tensor& target) = 0;
  virtual Tensor backward_impl(float scale) = 0;
  // The factor that turns a sum over `elements` terms into this reduction.
  float reduce_scale(std::int64_t elements) const;

 private:
  std::string name_;
  Reduction reduction_;
  bool check_finite_ = true;
  bool pending_ = false;
  float value_ = 0.0f;
};

// input: logits [N, C]; target: class indices [N] (i64), or class probabilities [N, C] (f32:
// the soft targets of MixUp and CutMix, torch's "probabilities" target). label_smoothing
// (torch's, in [0, 1]) mixes the target with the uniform distribution: per row, loss =
// (1 - ls) * -logp[t] + ls / C * sum_c -logp[c]; for probabilities t' = t (1 - ls) + ls / C and
// loss = -sum_c t'[c] logp[c].
class CrossEntropyLoss : public Loss {
 public:
  explicit CrossEntropyLoss(Reduction r = Reduction::mean, double label_smoothing = 0.0);
  double label_smoothing() const { return label_smoothing_; }

 protected:
  Tensor forward_impl(const Tensor& input, const Tensor& target) override;
  Tensor backward_impl(float scale) override;

 private:
  Tensor forward_soft(const Tensor& input, const Tensor& target);
  Tensor backward_soft(float scale);
  double label_smoothing_;
  Tensor logp_, target_;
  Tensor input_, soft_;  // probability targets: the logits and the smoothed targets
};

// input: log-probabilities [N, C] (LogSoftmax output); target: class indices [N] (i64).
class NLLLoss : public Loss {
 public:
  explicit NLLLoss(Reduction r = Reduction::mean) : Loss("NLLLoss", r) {}

 protected:
  Tensor forward_impl(const Tensor& input, const Tensor& target) override;
  Tensor backward_impl(float scale) override;

 private:
  Tensor target_;
  Shape input_shape_;
  Device* device_ = nullptr;
};

// input and target: f32 of the same shape; loss = reduce((input - target)^2).
class MSELoss : public Loss {
 public:
  explicit MSELoss(Reduction r = Reduction::mean) : Loss("MSELoss", r) {}

 protected:
  Tensor forward_impl(const Tensor& input, const Tensor& target) override;
  Tensor backward_impl(float scale) override;

 private:
  Tensor diff_;  // input - target
};

}  // namespace cohort::nn
