// Synchronised batch norm (BatchNorm2d::set_sync_group): the training forward and backward of
// BatchNorm2d with statistics and gradient sums over a process group, made of the device ops every
// backend has (batch_norm_forward / backward for the local passes, batch_norm_forward's
// evaluation path as a per-channel affine map, add) plus the group's all-reduce of small double
// vectors. Per channel, as torch.nn.SyncBatchNorm:
//   forward:  each rank's own mean and variance (batch_norm_forward in training mode: two passes,
//             no cancellation), gathered in one all-reduce (each rank fills its slot of a
//             world x (2C + 1) vector, the others add zeros) and combined in rank order with
//             Chan's formula, so every rank gets the same bits; y = x * scale + shift with
//             BatchNorm2d's scale and shift; the running statistics updated with the unbiased
//             global variance.
//   backward: batch_norm_backward on this rank's rows gives dx for the local statistics and the
//             local sums sum(dy), sum(dy xhat) (its dgamma and dbeta, which DDP then averages as
//             any gradient); one all-reduce of those 2C sums, and dx is corrected by the
//             per-channel affine map of xhat that turns the local mean terms into the global ones.
// The per-channel vectors (C values) are combined on the host in double; a device that is not
// host-accessible pays a read-back per all-reduce.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cohort/core/layer_ops.hpp"
#include "cohort/core/ops.hpp"
#include "cohort/layers/batchnorm.hpp"

namespace cohort::nn {
namespace {

// y = x * scale[c] + shift[c] per channel: batch_norm_forward's evaluation path with mean 0,
// variance 1 and eps 0 (its scale is then exactly `scale`, its shift exactly `shift`).
Tensor channel_affine(const Tensor& x, const std::vector<float>& scale,
                      const std::vector<float>& shift) {
  Device& dev = x.device();
  const Shape c{static_cast<std::int64_t>(scale.size())};
  const Tensor g = Tensor::from_vector(scale, c, dev), b = Tensor::from_vector(shift, c, dev);
  Tensor zero = Tensor::zeros(c, DType::f32, dev);
  Tensor one = Tensor::full(c, 1.0, DType::f32, dev);
  Tensor y = Tensor::empty(x.shape(), DType::f32, dev);
  Tensor sm = Tensor::empty(c, DType::f32, dev), si = Tensor::empty(c, DType::f32, dev);
  ops::batch_norm_forward(x, &g, &b, &zero, &one, y, sm, si, 0.0f, 0.0f, /*training=*/false);
  return y;
}

std::vector<float> host_values(const ParameterPtr& p, std::int64_t C, float fallback) {
  return p ? p->value.to_vector<float>() : std::vector<float>(static_cast<std::size_t>(C), fallback);
}

}  // namespace

Tensor BatchNorm2d::sync_forward(const Tensor& x, float momentum) {
  COHORT_MODULE_CHECK(x.dtype() == DType::f32, "synchronised batch norm takes f32 input, got ",
                      dtype_name(x.dtype()));
  const std::int64_t C = num_features_;
  const std::size_t nc = static_cast<std::size_t>(C);
  Device& dev = x.device();
  // This rank's mean and biased variance (eps 0: invstd = 1 / sqrt(var)); one value per channel
  // (a batch of one 1x1 map) is its own mean with variance 0, no values count for nothing.
  const std::int64_t per_channel = x.numel() / C;
  std::vector<float> lmean(nc, 0.0f), linv(nc, INFINITY);
  if (per_channel == 1) {
    lmean = x.to_vector<float>();
  } else if (per_channel > 1) {
    Tensor y = Tensor::empty(x.shape(), DType::f32, dev);
    Tensor sm = Tensor::empty(Shape{C}, DType::f32, dev), si = Tensor::empty(Shape{C}, DType::f32, dev);
    ops::batch_norm_forward(x, nullptr, nullptr, nullptr, nullptr, y, sm, si, 0.0f, 0.0f,
                            /*training=*/true);
    lmean = sm.to_vector<float>();
    linv = si.to_vector<float>();
  }
  // Gathered through the sum: rank r fills slot r (count, means, M2), the others add zeros.
  const int world = group_->size(), rank = group_->rank();
  const std::size_t slot = 2 * nc + 1;
  std::vector<double> buf(slot * static_cast<std::size_t>(world), 0.0);
  const double n_local = static_cast<double>(per_channel);
  double* mine = buf.data() + slot * static_cast<std::size_t>(rank);
  mine[0] = n_local;
  for (std::size_t c = 0; c < nc; ++c) {
    const double inv = linv[c];
    mine[1 + c] = lmean[c];
    mine[1 + nc + c] = std::isinf(inv) ? 0.0 : n_local / (inv * inv);  // n var
  }
  group_->allreduce_sum(buf.data(), buf.size());
  // Chan et al.'s combination, in rank order.
  double m = 0;
  for (int r = 0; r < world; ++r) m += buf[slot * static_cast<std::size_t>(r)];
  COHORT_MODULE_CHECK(m > 1.0, "training needs more than 1 value per channel over the group's "
                               "global batch, got ", m, " (this rank's input ", x.shape(), ")");
  m_total_ = m;
  std::vector<double> mean(nc, 0.0), var(nc, 0.0);
  for (int r = 0; r < world; ++r) {
    const double* s = buf.data() + slot * static_cast<std::size_t>(r);
    for (std::size_t c = 0; c < nc; ++c) mean[c] += s[0] * s[1 + c];
  }
  for (std::size_t c = 0; c < nc; ++c) mean[c] /= m;
  for (int r = 0; r < world; ++r) {
    const double* s = buf.data() + slot * static_cast<std::size_t>(r);
    for (std::size_t c = 0; c < nc; ++c) {
      const double d = s[1 + c] - mean[c];
      var[c] += s[1 + nc + c] + s[0] * d * d;
    }
  }
  // y = x * scale + shift with BatchNorm2d's kernel's scale and shift (float32).
  const std::vector<float> gamma = host_values(weight_, C, 1.0f), beta = host_values(bias_, C, 0.0f);
  std::vector<float> mean_f(nc), invstd(nc), scale(nc), shift(nc);
  for (std::size_t c = 0; c < nc; ++c) {
    var[c] /= m;
    mean_f[c] = static_cast<float>(mean[c]);
    invstd[c] = static_cast<float>(1.0 / std::sqrt(var[c] + options_.eps));
    scale[c] = invstd[c] * gamma[c];
    shift[c] = beta[c] - mean_f[c] * scale[c];
  }
  if (options_.track_running_stats) {  // as bn_store_stats: in double, the unbiased variance
    Tensor& rm = buffer("running_mean");
    Tensor& rv = buffer("running_var");
    std::vector<float> rmv = rm.to_vector<float>(), rvv = rv.to_vector<float>();
    for (std::size_t c = 0; c < nc; ++c) {
      rmv[c] = static_cast<float>((1.0 - momentum) * rmv[c] + momentum * mean[c]);
      rvv[c] = static_cast<float>((1.0 - momentum) * rvv[c] + momentum * var[c] * m / (m - 1.0));
    }
    rm.copy_from(Tensor::from_vector(rmv, rm.shape(), rm.device()));
    rv.copy_from(Tensor::from_vector(rvv, rv.shape(), rv.device()));
  }
  save_mean_ = Tensor::from_vector(mean_f, Shape{C}, dev);
  save_invstd_ = Tensor::from_vector(invstd, Shape{C}, dev);
  return channel_affine(x, scale, shift);
}

Tensor BatchNorm2d::sync_backward(const Tensor& dy, bool need_input_grad) {
  const std::int64_t C = num_features_;
  const std::size_t nc = static_cast<std::size_t>(C);
  Device& dev = dy.device();
  const std::vector<float> gamma = host_values(weight_, C, 1.0f);
  const std::vector<float> mean = save_mean_.to_vector<float>();
  const std::vector<float> invstd = save_invstd_.to_vector<float>();
  const std::int64_t per_channel = dy.numel() / C;
  // dx for this rank's own mean terms, and the local sums sum(dy xhat), sum(dy); a rank with
  // one value per channel (or none) computes them here, as the kernel does not take it.
  Tensor sdyx_t, sdy_t, dx;
  if (need_input_grad) dx = Tensor::empty(dy.shape(), DType::f32, dev);
  std::vector<float> sdy(nc, 0.0f), sdyx(nc, 0.0f);
  if (per_channel > 1) {
    sdyx_t = Tensor::zeros(Shape{C}, DType::f32, dev);
    sdy_t = Tensor::zeros(Shape{C}, DType::f32, dev);
    ops::batch_norm_backward(x_, dy, weight_ ? &weight_->value : nullptr, save_mean_,
                             save_invstd_, need_input_grad ? &dx : nullptr, &sdyx_t, &sdy_t,
                             /*training=*/true);
    sdy = sdy_t.to_vector<float>();
    sdyx = sdyx_t.to_vector<float>();
  } else {
    const std::vector<float> g = dy.to_vector<float>(), xv = x_.to_vector<float>();
    std::vector<float> local_dx(g.size());
    for (std::size_t c = 0; c < g.size(); ++c) {
      const float xhat = (xv[c] - mean[c]) * invstd[c];
      sdy[c] = g[c];
      sdyx[c] = g[c] * xhat;
      local_dx[c] = gamma[c] * invstd[c] * (g[c] - sdy[c] - xhat * sdyx[c]);  // m_local = 1
    }
    sdy_t = Tensor::from_vector(sdy, Shape{C}, dev);
    sdyx_t = Tensor::from_vector(sdyx, Shape{C}, dev);
    if (need_input_grad && per_channel == 1)
      dx.copy_from(Tensor::from_vector(local_dx, dy.shape(), dev));
  }
  std::vector<double> sums(2 * nc);
  for (std::size_t c = 0; c < nc; ++c) sums[c] = sdy[c], sums[nc + c] = sdyx[c];
  group_->allreduce_sum(sums.data(), sums.size());
  const bool gw = weight_ && weight_->requires_grad, gb = bias_ && bias_->requires_grad;
  const auto accumulate = [](const ParameterPtr& p, const Tensor& t) {
    if (p->grad.defined()) {
      ops::axpy(1.0f, t, p->grad);
    } else {
      p->grad = t;
    }
  };
  if (gb) accumulate(bias_, sdy_t);
  if (gw) accumulate(weight_, sdyx_t);
  if (need_input_grad && per_channel > 0) {
    // dx_global - dx_local = g is ((sdy_l / m_l - sdy_g / M) + xhat (sdyx_l / m_l - sdyx_g / M)),
    // with xhat = (x - mean) is: an affine map of x per channel, added to the kernel's dx.
    const double m_local = static_cast<double>(std::max<std::int64_t>(per_channel, 1));
    std::vector<float> scale(nc), shift(nc);
    for (std::size_t c = 0; c < nc; ++c) {
      const double gis = static_cast<double>(gamma[c]) * invstd[c];
      const double alpha = gis * (sdy[c] / m_local - sums[c] / m_total_);
      const double beta = gis * (sdyx[c] / m_local - sums[nc + c] / m_total_);
      scale[c] = static_cast<float>(beta * invstd[c]);
      shift[c] = static_cast<float>(alpha - beta * invstd[c] * mean[c]);
    }
    const Tensor t = channel_affine(x_, scale, shift);
    ops::add(dx, t, dx);
  }
  if (gb) grad_ready(bias_);
  if (gw) grad_ready(weight_);
  x_ = Tensor();
  return dx;
}

}  // namespace cohort::nn
