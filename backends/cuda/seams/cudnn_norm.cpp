// Plain-value seam of cuDNN's training batch normalisation (see cudnn_norm.hpp). Forward and
// backward share the coverage rule and the descriptor shapes, so the backward call can never run on
// a case whose forward went to the shared kernels (their saved statistics are the same numbers,
// but an asymmetric rule would hide a divergence between the two paths).
#include "cuda/seams/cudnn_norm.hpp"

#include <climits>
#include <cstdint>
#include <initializer_list>

#include "cohort/core/error.hpp"

namespace cohort::cuda::seams {
namespace {

using i64 = std::int64_t;

constexpr double kBnMinEpsilon = 0.0;  // CUDNN_BN_MIN_EPSILON in cuDNN 9.19 (static_asserted)

// Shared by forward and backward: whether cuDNN takes the case, and its two descriptors.
bool shape(const BatchNormArgs& a, Tensor4d& x, Tensor4d& bn) {
  COHORT_CHECK_IN("cuda", a.n >= 0 && a.c >= 0 && a.inner >= 0,
                  "batch norm args: extents n ", a.n, ", c ", a.c, ", inner ", a.inner,
                  " must be >= 0");
  if (!a.training || !(static_cast<double>(a.eps) >= kBnMinEpsilon) || a.n * a.inner < 2 ||
      !fits_int({a.n, a.c, a.inner, a.n * a.inner, a.n * a.c * a.inner}))
    return false;
  x = {static_cast<int>(a.n), static_cast<int>(a.c), static_cast<int>(a.inner), 1};
  bn = {1, static_cast<int>(a.c), 1, 1};  // cudnnDeriveBNTensorDescriptor's SPATIAL shape
  return true;
}

}  // namespace

BnForwardValues bn_forward_values(const calls::BatchNormForward& c) {
  COHORT_CHECK_IN("cuda", (c.running_mean == nullptr) == (c.running_var == nullptr),
                  "batch norm forward: running_mean and running_var come together (running_mean ",
                  c.running_mean ? "given" : "null", ", running_var ",
                  c.running_var ? "given" : "null", ")");
  BnForwardValues v;
  v.covered = shape(c.a, v.x, v.bn);
  if (!v.covered) return v;
  v.mode = cudnn_enum::kBatchNormSpatial;
  v.alpha = 1.0f;
  v.beta = 0.0f;
  v.epsilon = static_cast<double>(c.a.eps);
  // cuDNN: running = new * factor + running * (1 - factor); the contract: (1 - momentum) running
  // + momentum new. So the factor is the momentum itself, not 1 - momentum.
  v.exponential_average_factor = static_cast<double>(c.a.momentum);
  v.update_running = c.running_mean != nullptr;
  v.unit_scale = c.gamma == nullptr;
  v.zero_bias = c.beta == nullptr;
  v.m = c.a.n * c.a.inner;
  v.running_var_unbiased = true;
  return v;
}

BnBackwardValues bn_backward_values(const calls::BatchNormBackward& c) {
  BnBackwardValues v;
  v.covered = shape(c.a, v.x, v.bn);
  if (!v.covered) return v;
  v.mode = cudnn_enum::kBatchNormSpatial;
  v.alpha_data = 1.0f;
  v.beta_data = 0.0f;
  v.alpha_param = 1.0f;
  v.beta_param = 1.0f;
  v.epsilon = static_cast<double>(c.a.eps);
  v.unit_scale = c.gamma == nullptr;
  v.dx_scratch = c.dx == nullptr;
  v.dgamma_scratch = c.dgamma == nullptr;
  v.dbeta_scratch = c.dbeta == nullptr;
  return v;
}

}  // namespace cohort::cuda::seams
