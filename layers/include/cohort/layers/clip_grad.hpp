// Gradient clipping, as torch.nn.utils.clip_grad_norm_ and clip_grad_value_: called between the
// backward pass and the optimizer step. Under DistributedDataParallel call it after backward has
// returned (the gradients are then the averaged ones), so every rank computes the same norm and
// clips identically; with gradient accumulation, once per optimizer step, after the last
// micro-batch. Parameters without a gradient (requires_grad off or none allocated) are skipped, as
// torch skips grad None.
#pragma once

#include <functional>
#include <vector>

#include "cohort/core/parameter.hpp"

namespace cohort::nn {

// Scales every gradient by clip_coef = max_norm / (total_norm + 1e-6) when that is below 1, where
// total_norm is the norm_type-norm of all gradients taken together (the norm of the per-tensor
// norms). Returns total_norm, as torch returns it (before clipping). norm_type: any p > 0, or
// infinity (std::numeric_limits<double>::infinity(): the largest |g|).
//
// Follows torch where the norm is not finite: a NaN or infinite total scales the gradients by
// NaN or 0 (torch's clip_coef), unless error_if_nonfinite, which throws cohort::Error naming the
// total and the first parameter (by index in `params`) whose own norm is not finite, and changes
// no gradient. The norms accumulate in double; the coefficient and the scaling are f32, as
// torch's.
//
// Cost: on the host p = 2 is one pass over the gradients summing squares in double; on a GPU
// p = 2 and p = inf run on the gradients' device (reduce_sum_sq / reduce_max) and read back a
// few floats per tensor (one synchronisation per call); any other p reads every gradient back
// to the host.
double clip_grad_norm(const std::vector<ParameterPtr>& params, double max_norm,
                      double norm_type = 2.0, bool error_if_nonfinite = false);

// clip_grad_norm over gradients split across ranks (ZeRO: each rank holds some elements of each;
// DistributedDataParallel::clip_grad_norm calls this): `params` are this rank's pieces, and
// `group` turns this rank's partial norm into the group's. It is called exactly once, on every
// rank, even one without gradients (it is collective): values[0] is this rank's part (the sum of
// its pieces' ||g||_p^p for a finite p; the largest |g| for p = infinity), values[1] the number of
// its pieces whose norm is NaN; `max` says which reduction both want (false: the sum over the
// ranks, true: the largest). The total norm, the coefficient and the scaling are then
// clip_grad_norm's own, so every rank clips its piece by the same f32 coefficient. With
// error_if_nonfinite every rank throws (none changes a gradient); the one holding the non-finite
// piece names it, the others say that their pieces are finite.
using NormGroupReduce = std::function<void(double values[2], bool max)>;
double clip_grad_norm(const std::vector<ParameterPtr>& params, double max_norm, double norm_type,
                      bool error_if_nonfinite, const NormGroupReduce& group);

// Clamps every gradient element into [-clip_value, clip_value] (NaN stays NaN), on the gradients'
// device. clip_value must be finite and >= 0.
void clip_grad_value(const std::vector<ParameterPtr>& params, double clip_value);

}  // namespace cohort::nn
