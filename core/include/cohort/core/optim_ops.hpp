// Fused optimizer updates at the tensor level: the argument checks (with the values at fault),
// then ONE call into the device's op table. cohort::optim builds on these and never calls the
// Device virtuals itself. Each call updates `param` and the state tensors in place on their device
// (ordered on the device's stream like every op; on a GPU it may still be running on return).
//
// Requirements, checked: every tensor that the arguments use is defined, f32, has param's shape
// and lives on param's device, and the device supports the op. A state tensor the arguments do
// not use (the momentum buffer when momentum == 0, max_exp_avg_sq without amsgrad, ...) may be an
// undefined Tensor and is not touched. The scalar arguments are documented, formula by formula,
// in cohort/core/optim_args.hpp; their ranges are the optimizer's business (cohort::optim checks
// them with the optimizer's name), these functions take any float.
#pragma once

#include "cohort/core/optim_args.hpp"
#include "cohort/core/tensor.hpp"

namespace cohort::ops {

// torch.optim.SGD's update of one parameter. momentum_buffer is used when args.momentum != 0
// (written without being read when args.first_step).
void sgd_step(Tensor& param, const Tensor& grad, Tensor& momentum_buffer, const SgdArgs& args);

// torch.optim.Adam / AdamW (args.decoupled_weight_decay) at one step. max_exp_avg_sq is used when
// args.amsgrad.
void adam_step(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
               Tensor& max_exp_avg_sq, const AdamArgs& args);

// torch.optim.Adadelta.
void adadelta_step(Tensor& param, const Tensor& grad, Tensor& square_avg, Tensor& acc_delta,
                   const AdadeltaArgs& args);

// torch.optim.RMSprop. grad_avg is used when args.centered, momentum_buffer when
// args.momentum > 0.
void rmsprop_step(Tensor& param, const Tensor& grad, Tensor& square_avg, Tensor& grad_avg,
                  Tensor& momentum_buffer, const RmspropArgs& args);

// The GradScaler's unscale-and-check over one gradient (torch's
// _amp_foreach_non_finite_check_and_unscale_, which PyTorch runs as one multi-tensor launch): one
// pass that multiplies x by `inv` in place and writes, for each block of `block` consecutive
// elements (the last may be shorter), the largest |x| after scaling into out, NaN winning (an inf
// gives inf). `out` is f32 on x's device with ceil(numel / block) elements; it may be a slice of a
// larger buffer, so that a scaler lays every gradient's blocks side by side and reduces them with
// one max_all. x is f32; an empty x writes nothing. block >= 1.
void unscale_max_abs(float inv, Tensor& x, Tensor& out, std::int64_t block);

}  // namespace cohort::ops
