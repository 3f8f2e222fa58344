// clip_grad_norm and clip_grad_value (clip_grad.hpp). On the host the 2-norms are sums of
// squares in double; elsewhere the per-tensor norms come from device
// reductions over rows of kRowLength elements (short rows keep the work parallel on every
// device; the infinity norm through ops::max_abs_all, staged alike), into one small buffer per
// call that is read back once; everything after that is a
// handful of host arithmetic in the order torch uses, so the coefficient matches torch's f32 value
// for the same total.
#include "cohort/layers/clip_grad.hpp"

#include <cmath>
#include <limits>

#include "cohort/core/device.hpp"
#include "cohort/core/ops.hpp"

namespace cohort::nn {
namespace {

constexpr std::int64_t kRowLength = 4096;

struct Grad {
  std::size_t index;  // in params
  Tensor g;           // flat view of the gradient
};

// The gradients to clip: defined, of parameters that want them, all f32 on one device.
std::vector<Grad> gradients(const char* who, const std::vector<ParameterPtr>& params) {
  std::vector<Grad> out;
  for (std::size_t i = 0; i < params.size(); ++i) {
    COHORT_CHECK(params[i] != nullptr, who, ": parameter ", i, " is null");
    const Parameter& p = *params[i];
    if (!p.requires_grad || !p.grad.defined() || p.grad.numel() == 0) continue;
    COHORT_CHECK(p.grad.dtype() == DType::f32, who, ": parameter ", i, "'s gradient is ",
                 dtype_name(p.grad.dtype()), ", expected f32");
    if (!out.empty())
      COHORT_CHECK(&p.grad.device() == &out.front().g.device(), who, ": parameter ", i,
                   "'s gradient is on ", p.grad.device().name(), ", parameter ", out.front().index,
                   "'s on ", out.front().g.device().name(), " (clip each device's separately)");
    out.push_back({i, p.grad.reshape({p.grad.numel()})});
  }
  return out;
}

// Rows of one flat gradient: whole rows of kRowLength, then the rest as one row.
std::int64_t rows_of(std::int64_t n) { return n / kRowLength + (n % kRowLength ? 1 : 0); }

// `reduce` of each row of every gradient into one buffer, read back: result[k] holds gradient k's
// row values, in order.
template <class Reduce>
std::vector<std::vector<float>> row_values(const std::vector<Grad>& grads, Reduce reduce) {
  std::int64_t total = 0;
  for (const Grad& gr : grads) total += rows_of(gr.g.numel());
  Tensor partial = Tensor::empty({total}, DType::f32, grads.front().g.device());
  std::int64_t off = 0;
  for (const Grad& gr : grads) {
    const std::int64_t n = gr.g.numel(), whole = n / kRowLength, rest = n % kRowLength;
    if (whole > 0) {
      Tensor out = partial.slice(off, off + whole);
      reduce(gr.g.slice(0, whole * kRowLength).reshape({whole, kRowLength}), out);
    }
    if (rest > 0) {
      Tensor out = partial.slice(off + whole, off + whole + 1);
      reduce(gr.g.slice(whole * kRowLength, n).reshape({1, rest}), out);
    }
    off += rows_of(n);
  }
  const std::vector<float> all = partial.to_vector<float>();
  std::vector<std::vector<float>> out;
  off = 0;
  for (const Grad& gr : grads) {
    const std::int64_t r = rows_of(gr.g.numel());
    out.emplace_back(all.begin() + off, all.begin() + off + r);
    off += r;
  }
  return out;
}

// Each gradient's own norm, in double.
std::vector<double> tensor_norms(const std::vector<Grad>& grads, double p) {
  std::vector<double> norms;
  if (p == 2.0 && grads.front().g.device().host_accessible()) {
    // On the host the squares are summed in double: a sum of f32 rows depends on where the rows
    // start, so a ZeRO rank's piece of a tensor would round otherwise than the whole tensor does
    // (DistributedDataParallel::clip_grad_norm); in double the orders agree to ~1e-16, and the
    // f32 coefficient with them. Four accumulators keep the loop vectorisable.
    for (const Grad& gr : grads) {
      const float* v = gr.g.data<float>();
      const std::int64_t n = gr.g.numel();
      double acc[4] = {0, 0, 0, 0};
      std::int64_t i = 0;
      for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; ++k) acc[k] += double(v[i + k]) * double(v[i + k]);
      for (; i < n; ++i) acc[0] += double(v[i]) * double(v[i]);
      norms.push_back(std::sqrt((acc[0] + acc[1]) + (acc[2] + acc[3])));
    }
  } else if (p == 2.0) {
    for (const auto& rows : row_values(grads, [](const Tensor& x, Tensor& o) {
           ops::reduce_sum_sq(x, o);
         })) {
      double s = 0;
      for (const float v : rows) s += v;
      norms.push_back(std::sqrt(s));
    }
  } else if (std::isinf(p)) {
    // max |g| per gradient on the device (ops::max_abs_all: NaN wins, as torch's norm does), all
    // read back together.
    Tensor m = Tensor::empty({static_cast<std::int64_t>(grads.size())}, DType::f32,
                             grads.front().g.device());
    for (std::size_t k = 0; k < grads.size(); ++k) {
      Tensor out = m.slice(static_cast<std::int64_t>(k), static_cast<std::int64_t>(k + 1));
      ops::max_abs_all(grads[k].g, out);
    }
    for (const float v : m.to_vector<float>()) norms.push_back(v);
  } else {
    for (const Grad& gr : grads) {
      double s = 0;
      for (const float v : gr.g.to_vector<float>()) s += std::pow(std::fabs(double(v)), p);
      norms.push_back(std::pow(s, 1.0 / p));
    }
  }
  return norms;
}

}  // namespace

double clip_grad_norm(const std::vector<ParameterPtr>& params, double max_norm, double norm_type,
                      bool error_if_nonfinite) {
  return clip_grad_norm(params, max_norm, norm_type, error_if_nonfinite, nullptr);
}

double clip_grad_norm(const std::vector<ParameterPtr>& params, double max_norm, double norm_type,
                      bool error_if_nonfinite, const NormGroupReduce& group) {
  COHORT_CHECK(std::isfinite(max_norm) && max_norm >= 0, "clip_grad_norm: max_norm must be "
               "finite and >= 0, got ", max_norm);
  COHORT_CHECK(norm_type > 0 && !std::isnan(norm_type), "clip_grad_norm: norm_type must be > 0 "
               "(or infinity), got ", norm_type);
  const std::vector<Grad> grads = gradients("clip_grad_norm", params);
  if (grads.empty() && !group) return 0.0;
  const std::vector<double> norms = grads.empty() ? std::vector<double>{}
                                                  : tensor_norms(grads, norm_type);
  const bool inf_norm = std::isinf(norm_type);
  double total = 0;
  if (inf_norm) {
    for (const double v : norms)  // NaN wins, as torch.max
      total = std::isnan(total) || std::isnan(v) ? std::nan("") : std::max(total, v);
  } else {
    for (const double v : norms) total += std::pow(v, norm_type);
  }
  const bool local_nonfinite = !std::isfinite(total);
  if (group) {
    // The NaN count travels beside the value: a max over the ranks need not keep a NaN.
    double values[2] = {std::isnan(total) ? 0.0 : total, std::isnan(total) ? 1.0 : 0.0};
    group(values, inf_norm);
    total = values[1] > 0 ? std::nan("") : values[0];
  }
  if (!inf_norm) total = std::pow(total, 1.0 / norm_type);
  if (error_if_nonfinite && !std::isfinite(total)) {
    const char* pieces = group ? " (this rank's pieces of them)" : "";
    if (!local_nonfinite)
      COHORT_FAIL("clip_grad_norm: the total norm of order ", norm_type, " of ", grads.size(),
                  " gradients", pieces, " is ", total, "; every piece this rank holds is finite: "
                  "another rank's is not (no gradient was changed)");
    std::size_t k = 0;
    while (k + 1 < norms.size() && std::isfinite(norms[k])) ++k;
    const Tensor& g = params[grads[k].index]->grad;
    COHORT_FAIL("clip_grad_norm: the total norm of order ", norm_type, " of ", grads.size(),
                " gradients", pieces, " is ", total, "; the first non-finite is parameter ",
                grads[k].index, "'s gradient ", g.shape().str(), " with norm ", norms[k],
                " (no gradient was changed; error_if_nonfinite = false scales them as torch does)");
  }
  // torch: clip_coef = max_norm / (total_norm + 1e-6), clamped to 1, all in f32; Python's
  // scalar / tensor is reciprocal(tensor) * scalar.
  const float total_f = static_cast<float>(total);
  const float coef = (1.0f / (total_f + 1e-6f)) * static_cast<float>(max_norm);
  if (!(coef < 1.0f) && !std::isnan(coef)) return total;  // clamped to 1: the gradients stay
  for (const Grad& gr : grads) {
    Tensor& g = params[gr.index]->grad;
    ops::scale(coef, g, g);
  }
  return total;
}

void clip_grad_value(const std::vector<ParameterPtr>& params, double clip_value) {
  COHORT_CHECK(std::isfinite(clip_value) && clip_value >= 0, "clip_grad_value: clip_value must be "
               "finite and >= 0, got ", clip_value);
  const auto v = static_cast<float>(clip_value);
  for (const Grad& gr : gradients("clip_grad_value", params)) {
    Tensor& g = params[gr.index]->grad;
    ops::clamp(g, -v, v, g);
  }
}

}  // namespace cohort::nn
