// Synchronised batch norm (BatchNorm2d::set_sync_group): the training forward and backward of
// BatchNorm2d with statistics and gradient sums over a process group, made of device ops every
// backend has (reduce_sum, mul, add, and batch_norm_forward's evaluation path as a per-channel
// affine map) plus the group's all-reduce of small double vectors. Per channel, as
// torch.nn.SyncBatchNorm:
//   forward:  mean = sum(x) / M over the global batch (M values per channel), then
//             var = sum((x - mean)^2) / M (two passes, as BatchNorm2d's kernel, so no
//             cancellation), y = x * scale + shift with BatchNorm2d's scale and shift; the running
//             statistics updated with the unbiased global variance.
//   backward: dgamma += sum(dy xhat), dbeta += sum(dy) over this rank's rows (DDP averages them
//             as any gradient); dx = gamma invstd (dy - sum(dy) / M - xhat sum(dy xhat) / M) with
//             the sums over the group.
// The per-channel vectors (C values) are combined on the host in double; a device that is not
// host-accessible pays a read-back per all-reduce.
#include <cmath>
#include <vector>

#include "cohort/core/layer_ops.hpp"
#include "cohort/core/ops.hpp"
#include "cohort/layers/batchnorm.hpp"

namespace cohort::nn {
namespace {

// Per-channel sums of x [N, C, ...] in double (each (image, channel) plane summed by
// reduce_sum, in double, then the planes of a channel added here).
std::vector<double> channel_sums(const Tensor& x, std::int64_t C) {
  const std::int64_t N = x.dim(0), inner = x.numel() / (N * C);
  Tensor planes = Tensor::empty(Shape{N * C}, DType::f32, x.device());
  ops::reduce_sum(x.reshape({N * C, inner}), planes);
  const std::vector<float> v = planes.to_vector<float>();
  std::vector<double> s(static_cast<std::size_t>(C), 0.0);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < C; ++c)
      s[static_cast<std::size_t>(c)] += v[static_cast<std::size_t>(n * C + c)];
  return s;
}

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
  // Pass 1: the global mean (the local count travels with the sums).
  std::vector<double> buf = channel_sums(x, C);
  buf.push_back(static_cast<double>(x.numel() / C));
  group_->allreduce_sum(buf.data(), buf.size());
  const double m = buf[nc];
  COHORT_MODULE_CHECK(m > 1.0, "training needs more than 1 value per channel over the group's "
                               "global batch, got ", m, " (this rank's input ", x.shape(), ")");
  m_total_ = m;
  std::vector<float> mean_f(nc), neg_mean(nc), ones(nc, 1.0f);
  std::vector<double> mean(nc);
  for (std::size_t c = 0; c < nc; ++c) {
    mean[c] = buf[c] / m;
    mean_f[c] = static_cast<float>(mean[c]);
    neg_mean[c] = -mean_f[c];
  }
  // Pass 2: the global biased variance from the squared deviations.
  const Tensor d = channel_affine(x, ones, neg_mean);
  Tensor sq = Tensor::empty(x.shape(), DType::f32, x.device());
  ops::mul(d, d, sq);
  std::vector<double> q = channel_sums(sq, C);
  group_->allreduce_sum(q.data(), q.size());
  // y = x * scale + shift with BatchNorm2d's kernel's scale and shift (float32).
  const std::vector<float> gamma = host_values(weight_, C, 1.0f), beta = host_values(bias_, C, 0.0f);
  std::vector<float> invstd(nc), scale(nc), shift(nc);
  for (std::size_t c = 0; c < nc; ++c) {
    const double var = q[c] / m;
    invstd[c] = static_cast<float>(1.0 / std::sqrt(var + options_.eps));
    scale[c] = invstd[c] * gamma[c];
    shift[c] = beta[c] - mean_f[c] * scale[c];
    q[c] = var;
  }
  if (options_.track_running_stats) {  // as bn_store_stats: in double, the unbiased variance
    Tensor& rm = buffer("running_mean");
    Tensor& rv = buffer("running_var");
    std::vector<float> rmv = rm.to_vector<float>(), rvv = rv.to_vector<float>();
    for (std::size_t c = 0; c < nc; ++c) {
      rmv[c] = static_cast<float>((1.0 - momentum) * rmv[c] + momentum * mean[c]);
      rvv[c] = static_cast<float>((1.0 - momentum) * rvv[c] + momentum * q[c] * m / (m - 1.0));
    }
    rm.copy_from(Tensor::from_vector(rmv, rm.shape(), rm.device()));
    rv.copy_from(Tensor::from_vector(rvv, rv.shape(), rv.device()));
  }
  save_mean_ = Tensor::from_vector(mean_f, Shape{C}, x.device());
  save_invstd_ = Tensor::from_vector(invstd, Shape{C}, x.device());
  return channel_affine(x, scale, shift);
}

Tensor BatchNorm2d::sync_backward(const Tensor& dy, bool need_input_grad) {
  const std::int64_t C = num_features_;
  const std::size_t nc = static_cast<std::size_t>(C);
  const std::vector<float> mean = save_mean_.to_vector<float>();
  const std::vector<float> invstd = save_invstd_.to_vector<float>();
  std::vector<float> neg(nc);
  for (std::size_t c = 0; c < nc; ++c) neg[c] = -mean[c] * invstd[c];
  const Tensor xhat = channel_affine(x_, invstd, neg);
  Tensor prod = Tensor::empty(dy.shape(), DType::f32, dy.device());
  ops::mul(dy, xhat, prod);
  // This rank's sums: its gamma and beta gradients; over the group: dx's two mean terms.
  std::vector<double> sums = channel_sums(dy, C);
  const std::vector<double> sdyx = channel_sums(prod, C);
  sums.insert(sums.end(), sdyx.begin(), sdyx.end());
  const std::vector<double> local = sums;
  group_->allreduce_sum(sums.data(), sums.size());
  const bool gw = weight_ && weight_->requires_grad, gb = bias_ && bias_->requires_grad;
  const auto accumulate = [&](const ParameterPtr& p, std::size_t offset) {
    std::vector<float> g(nc);
    for (std::size_t c = 0; c < nc; ++c) g[c] = static_cast<float>(local[offset + c]);
    const Tensor t = Tensor::from_vector(g, Shape{C}, p->value.device());
    if (p->grad.defined()) {
      ops::axpy(1.0f, t, p->grad);
    } else {
      p->grad = t;
    }
  };
  if (gb) accumulate(bias_, 0);
  if (gw) accumulate(weight_, nc);
  Tensor dx;
  if (need_input_grad) {
    const std::vector<float> gamma = host_values(weight_, C, 1.0f);
    std::vector<float> a(nc), b(nc), k(nc);
    for (std::size_t c = 0; c < nc; ++c) {
      a[c] = gamma[c] * invstd[c];
      b[c] = static_cast<float>(-static_cast<double>(a[c]) * sums[c] / m_total_);
      k[c] = static_cast<float>(-static_cast<double>(a[c]) * sums[nc + c] / m_total_);
    }
    const Tensor t1 = channel_affine(dy, a, b);
    const Tensor t2 = channel_affine(xhat, k, std::vector<float>(nc, 0.0f));
    dx = Tensor::empty(dy.shape(), DType::f32, dy.device());
    ops::add(t1, t2, dx);
  }
  if (gb) grad_ready(bias_);
  if (gw) grad_ready(weight_);
  x_ = Tensor();
  return dx;
}

}  // namespace cohort::nn
