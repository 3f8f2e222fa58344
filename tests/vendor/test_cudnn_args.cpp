// The cuDNN seam (backends/cuda/seams/cudnn_*.hpp) on the CPU. No GPU has run cohort's cuDNN
// calls, so what can be checked here is that the values those calls receive mean what cohort's op
// contract says: each case computes the seam's values for an op call, executes them with a naive
// reference written from cuDNN's documented meaning (cudnn_cnn.h / cudnn_ops.h: NCHW, cross-
// correlation, out = alpha * result + beta * out, SPATIAL batch norm, CHANNEL softmax; plain loops,
// double accumulation) and compares with the host device's result for the same inputs through the
// op front ends. The references read only the seam's values (never the op's args), so a wrong pad,
// stride, blend factor or averaging factor in the seam shows up as a wrong number here.
//
// Also here: the convolution algorithm choice (math type, determinism, workspace cap, the fallback
// after out of memory) and the execute-status mapping, on synthetic values.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cohort/core/error.hpp"
#include "cohort/core/layer_ops.hpp"
#include "cohort/core/tensor.hpp"
#include "cohort/devices.hpp"
#include "cuda/seams/cudnn_conv.hpp"
#include "cuda/seams/cudnn_conv_algo.hpp"
#include "cuda/seams/cudnn_norm.hpp"
#include "cuda/seams/cudnn_softmax.hpp"
#include "cuda/seams/cudnn_status.hpp"
#if COHORT_VENDOR_CUDNN_HEADERS
#include <cudnn_graph.h>
#endif

TEST_SUITE_BEGIN("cudnn");

using namespace cohort;
using namespace cohort::cuda::seams;
namespace ce = cohort::cuda::seams::cudnn_enum;

namespace {

using Vec = std::vector<float>;

Tensor uni(const Shape& s, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  return Tensor::uniform(s, lo, hi, seed, host_device());
}
Vec values(const Tensor& t) { return t.to_vector<float>(); }

// The parity table's measure: max |a - b| / (1 + |b|); infinite when the sizes differ.
double rel_diff(const Vec& a, const Vec& b) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::fmax(worst, std::fabs(double(a[i]) - b[i]) / (1.0 + std::fabs(double(b[i]))));
  return worst;
}

// cuDNN's blend: out = alpha * result + beta * out; beta == 0 does not read out (cuDNN's
// documented scaling-parameter rule), so NaN there does not propagate.
float blend(float alpha, double result, float beta, float old) {
  return static_cast<float>(beta == 0.0f ? alpha * result : alpha * result + double(beta) * old);
}

std::size_t numel(const Tensor4d& t) {
  return static_cast<std::size_t>(t.n) * t.c * t.h * t.w;
}

// ---- convolution references (cudnn_cnn.h), reading only ConvValues ----

// Calls `f(n, k, p, q, ci_global, ci, r, s, ih, iw)` for every in-image term of the convolution the
// values describe. Channel ci of group g is input channel g * C/G + ci; the filter is read at
// (r, s) in CROSS_CORRELATION mode and at (R-1-r, S-1-s) in CONVOLUTION mode.
template <class F>
void for_each_term(const ConvValues& v, F f) {
  REQUIRE(v.covered);
  REQUIRE(v.x.n == v.y.n);
  REQUIRE(v.w.k == v.y.c);
  REQUIRE(v.x.c == v.w.c * v.groups);
  REQUIRE(v.y.c % v.groups == 0);
  // The output extents cuDNN derives (cudnnGetConvolution2dForwardOutputDim's formula).
  REQUIRE(v.y.h == 1 + (v.x.h + 2 * v.pad_h - ((v.w.r - 1) * v.dil_h + 1)) / v.stride_h);
  REQUIRE(v.y.w == 1 + (v.x.w + 2 * v.pad_w - ((v.w.s - 1) * v.dil_w + 1)) / v.stride_w);
  const int kg = v.y.c / v.groups;
  for (int n = 0; n < v.y.n; ++n)
    for (int k = 0; k < v.y.c; ++k)
      for (int p = 0; p < v.y.h; ++p)
        for (int q = 0; q < v.y.w; ++q)
          for (int ci = 0; ci < v.w.c; ++ci)
            for (int r = 0; r < v.w.r; ++r)
              for (int s = 0; s < v.w.s; ++s) {
                const int ih = p * v.stride_h - v.pad_h + r * v.dil_h;
                const int iw = q * v.stride_w - v.pad_w + s * v.dil_w;
                if (ih < 0 || ih >= v.x.h || iw < 0 || iw >= v.x.w) continue;
                const bool cross = v.mode == ce::kCrossCorrelation;
                const int fr = cross ? r : v.w.r - 1 - r, fs = cross ? s : v.w.s - 1 - s;
                f(n, k, p, q, (k / kg) * v.w.c + ci, ci, fr, fs, ih, iw);
              }
}

std::size_t xi(const Tensor4d& t, int n, int c, int h, int w) {
  return ((static_cast<std::size_t>(n) * t.c + c) * t.h + h) * t.w + w;
}
std::size_t wi(const Filter4d& f, int k, int c, int r, int s) {
  return ((static_cast<std::size_t>(k) * f.c + c) * f.r + r) * f.s + s;
}

// cudnnConvolutionForward: y = alpha * conv(x, w) + beta * y.
void ref_forward(const ConvValues& v, const Vec& x, const Vec& w, Vec& y) {
  REQUIRE(y.size() == numel(v.y));
  std::vector<double> acc(y.size(), 0.0);
  for_each_term(v, [&](int n, int k, int p, int q, int cx, int ci, int r, int s, int ih, int iw) {
    acc[xi(v.y, n, k, p, q)] += double(x[xi(v.x, n, cx, ih, iw)]) * w[wi(v.w, k, ci, r, s)];
  });
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = blend(v.alpha, acc[i], v.beta, y[i]);
}

// cudnnConvolutionBackwardData: dx = alpha * convT(dy, w) + beta * dx.
void ref_backward_data(const ConvValues& v, const Vec& dy, const Vec& w, Vec& dx) {
  REQUIRE(dx.size() == numel(v.x));
  std::vector<double> acc(dx.size(), 0.0);
  for_each_term(v, [&](int n, int k, int p, int q, int cx, int ci, int r, int s, int ih, int iw) {
    acc[xi(v.x, n, cx, ih, iw)] += double(dy[xi(v.y, n, k, p, q)]) * w[wi(v.w, k, ci, r, s)];
  });
  for (std::size_t i = 0; i < dx.size(); ++i) dx[i] = blend(v.alpha, acc[i], v.beta, dx[i]);
}

// cudnnConvolutionBackwardFilter: dw = alpha * sum_{n,p,q} dy * x + beta * dw.
void ref_backward_filter(const ConvValues& v, const Vec& x, const Vec& dy, Vec& dw) {
  REQUIRE(dw.size() == static_cast<std::size_t>(v.w.k) * v.w.c * v.w.r * v.w.s);
  std::vector<double> acc(dw.size(), 0.0);
  for_each_term(v, [&](int n, int k, int p, int q, int cx, int ci, int r, int s, int ih, int iw) {
    acc[wi(v.w, k, ci, r, s)] += double(dy[xi(v.y, n, k, p, q)]) * x[xi(v.x, n, cx, ih, iw)];
  });
  for (std::size_t i = 0; i < dw.size(); ++i) dw[i] = blend(v.alpha, acc[i], v.beta, dw[i]);
}

// cudnnConvolutionBackwardBias: db = alpha * sum_{n,h,w} dy + beta * db, db of shape [1,K,1,1]
// (dy described by v.y).
void ref_backward_bias(const ConvValues& v, const Vec& dy, Vec& db) {
  REQUIRE(v.bias_grad);
  REQUIRE(v.db.n == 1);
  REQUIRE(v.db.h == 1);
  REQUIRE(v.db.w == 1);
  REQUIRE(v.db.c == v.y.c);
  REQUIRE(db.size() == static_cast<std::size_t>(v.db.c));
  for (int k = 0; k < v.db.c; ++k) {
    double acc = 0;
    for (int n = 0; n < v.y.n; ++n)
      for (int p = 0; p < v.y.h; ++p)
        for (int q = 0; q < v.y.w; ++q) acc += dy[xi(v.y, n, k, p, q)];
    db[k] = blend(v.bias_alpha, acc, v.bias_beta, db[k]);
  }
}

// An op call's Conv2dArgs as the front end fills them.
Conv2dArgs conv_args(const Shape& x, const Shape& w, const ops::Conv2dParams& p) {
  Conv2dArgs a;
  a.n = x[0];
  a.c = x[1];
  a.h = x[2];
  a.w = x[3];
  a.k = w[0];
  a.r = w[2];
  a.s = w[3];
  a.stride_h = p.stride_h;
  a.stride_w = p.stride_w;
  a.pad_h = p.pad_h;
  a.pad_w = p.pad_w;
  a.dil_h = p.dil_h;
  a.dil_w = p.dil_w;
  a.groups = p.groups;
  a.oh = conv_out_size(a.h, a.r, a.stride_h, a.pad_h, a.dil_h);
  a.ow = conv_out_size(a.w, a.s, a.stride_w, a.pad_w, a.dil_w);
  return a;
}

struct ConvCase {
  const char* name;
  Shape x, w;
  ops::Conv2dParams p;
};

ops::Conv2dParams params(std::int64_t sh, std::int64_t sw, std::int64_t ph, std::int64_t pw,
                         std::int64_t dh, std::int64_t dw, std::int64_t g) {
  ops::Conv2dParams p;
  p.stride_h = sh;
  p.stride_w = sw;
  p.pad_h = ph;
  p.pad_w = pw;
  p.dil_h = dh;
  p.dil_w = dw;
  p.groups = g;
  return p;
}

// The parity table's convolution rows (tests/parity/test_parity.cpp), then what they leave out:
// groups 3 with stride 2 on both axes, dilation on both, pad_h != pad_w and a non-square kernel;
// and a 3x3 with many channels (a longer sum per output).
std::vector<ConvCase> conv_cases() {
  return {
      {"parity: 3x3 pad 1", {2, 3, 7, 6}, {4, 3, 3, 3}, params(1, 1, 1, 1, 1, 1, 1)},
      {"parity: strided dilated groups 2", {2, 4, 9, 8}, {6, 2, 2, 3}, params(2, 1, 0, 1, 2, 1, 2)},
      {"parity: 1x1", {3, 5, 4, 4}, {2, 5, 1, 1}, params(1, 1, 0, 0, 1, 1, 1)},
      {"groups 3, stride 2x2, dilation 2x3, pads 2x1", {2, 6, 13, 14}, {9, 2, 3, 2},
       params(2, 2, 2, 1, 2, 3, 3)},
      {"stride 2, pad 0x2, 5x3 kernel", {1, 2, 11, 7}, {3, 2, 5, 3}, params(2, 2, 0, 2, 1, 1, 1)},
      {"32 channels 3x3 (288-term sums)", {2, 32, 10, 10}, {8, 32, 3, 3},
       params(1, 1, 0, 0, 1, 1, 1)},
  };
}

}  // namespace

TEST_CASE("cuDNN conv seam: each direction's values, executed as cuDNN documents, match the host") {
  for (const ConvCase& cc : conv_cases()) {
    CAPTURE(cc.name);
    const Conv2dArgs a = conv_args(cc.x, cc.w, cc.p);
    const Shape ys = ops::conv2d_output_shape(cc.x, cc.w, cc.p);
    const Tensor x = uni(cc.x, 21), w = uni(cc.w, 22), dy = uni(ys, 24);

    SUBCASE("forward: y = conv(x, w), y overwritten") {
      const ConvValues v = conv_values(calls::Conv2dForward{a, nullptr, nullptr, nullptr, nullptr});
      CHECK(v.alpha == 1.0f);
      CHECK(v.beta == 0.0f);
      CHECK(v.mode == ce::kCrossCorrelation);
      CHECK(v.compute_type == ce::kDataFloat);
      Tensor y = Tensor::zeros(ys, DType::f32, host_device());
      ops::conv2d_forward(x, w, nullptr, y, cc.p);
      Vec got(numel(v.y), NAN);  // beta 0: the old contents are never read
      ref_forward(v, values(x), values(w), got);
      CHECK(rel_diff(got, values(y)) <= 1e-5);
    }
    SUBCASE("backward data: dx = convT(dy, w), dx overwritten") {
      const ConvValues v = conv_values(calls::Conv2dBackwardData{a, nullptr, nullptr, nullptr});
      CHECK(v.alpha == 1.0f);
      CHECK(v.beta == 0.0f);
      Tensor dx = Tensor::zeros(cc.x, DType::f32, host_device());
      ops::conv2d_backward_data(dy, w, dx, cc.p);
      Vec got(numel(v.x), NAN);
      ref_backward_data(v, values(dy), values(w), got);
      CHECK(rel_diff(got, values(dx)) <= 1e-5);
    }
    SUBCASE("backward filter and bias: dw += and dbias += (beta 1), twice gives twice") {
      float dbias_dummy = 0;
      const ConvValues v =
          conv_values(calls::Conv2dBackwardFilter{a, nullptr, nullptr, nullptr, &dbias_dummy});
      CHECK(v.alpha == 1.0f);
      CHECK(v.beta == 1.0f);
      CHECK(v.bias_grad);
      CHECK(v.bias_alpha == 1.0f);
      CHECK(v.bias_beta == 1.0f);
      // The host's two accumulating steps from a random start ...
      const Tensor dw0 = uni(cc.w, 25), db0 = uni({cc.w[0]}, 26);
      Tensor dw = Tensor::from_vector(values(dw0), cc.w, host_device());
      Tensor db = Tensor::from_vector(values(db0), {cc.w[0]}, host_device());
      ops::conv2d_backward_filter(x, dy, dw, &db, cc.p);
      ops::conv2d_backward_filter(x, dy, dw, &db, cc.p);
      // ... against the seam's values run twice on the same start.
      Vec gw = values(dw0), gb = values(db0);
      for (int step = 0; step < 2; ++step) {
        ref_backward_filter(v, values(x), values(dy), gw);
        ref_backward_bias(v, values(dy), gb);
      }
      CHECK(rel_diff(gw, values(dw)) <= 1e-5);
      CHECK(rel_diff(gb, values(db)) <= 1e-5);
      // The accumulation itself: two steps from zero are twice one step.
      Vec once(gw.size(), 0.0f), twice(gw.size(), 0.0f);
      ref_backward_filter(v, values(x), values(dy), once);
      ref_backward_filter(v, values(x), values(dy), twice);
      ref_backward_filter(v, values(x), values(dy), twice);
      Vec doubled(once);
      for (float& f : doubled) f *= 2.0f;
      CHECK(rel_diff(twice, doubled) <= 1e-6);
    }
  }
}

namespace {

// cudnnConvolutionBiasActivationForward: y = act(alpha * conv(x, w) + alpha2 * z + bias), bias
// [1, K, 1, 1]; RELU is max(v, 0) with NaN propagated. alpha2 0 does not read z (as beta 0 does not
// read y), so z (= y, its old contents) counts as zero.
void ref_forward_bias_act(const ConvValues& v, const Vec& x, const Vec& w, const Vec& bias,
                          Vec& y) {
  REQUIRE(v.fused_bias_act);
  REQUIRE(v.bias.n == 1);
  REQUIRE(v.bias.h == 1);
  REQUIRE(v.bias.w == 1);
  REQUIRE(v.bias.c == v.y.c);
  REQUIRE(bias.size() == static_cast<std::size_t>(v.bias.c));
  REQUIRE(v.act_mode == ce::kActivationRelu);
  REQUIRE(v.act_nan == ce::kPropagateNan);
  REQUIRE(v.alpha2 == 0.0f);
  std::vector<double> acc(y.size(), 0.0);
  for_each_term(v, [&](int n, int k, int p, int q, int cx, int ci, int r, int s, int ih, int iw) {
    acc[xi(v.y, n, k, p, q)] += double(x[xi(v.x, n, cx, ih, iw)]) * w[wi(v.w, k, ci, r, s)];
  });
  for (int n = 0; n < v.y.n; ++n)
    for (int k = 0; k < v.y.c; ++k)
      for (int p = 0; p < v.y.h; ++p)
        for (int q = 0; q < v.y.w; ++q) {
          const std::size_t i = xi(v.y, n, k, p, q);
          const double t = double(v.alpha) * acc[i] + bias[static_cast<std::size_t>(k)];
          y[i] = static_cast<float>(std::isnan(t) ? t : std::fmax(t, 0.0));
        }
}

}  // namespace

TEST_CASE(
    "cuDNN conv seam: f32 forward with bias and ReLU runs fused; executed as cuDNN documents, it "
    "matches the host") {
  for (const ConvCase& cc : conv_cases()) {
    CAPTURE(cc.name);
    Conv2dArgs a = conv_args(cc.x, cc.w, cc.p);
    a.act = Activation::relu;
    const Shape ys = ops::conv2d_output_shape(cc.x, cc.w, cc.p);
    const Tensor x = uni(cc.x, 31), w = uni(cc.w, 32), bias = uni({cc.w[0]}, 33);
    float b0 = 0;  // the seam only asks whether there is a bias
    const ConvValues v = conv_values(calls::Conv2dForward{a, nullptr, nullptr, &b0, nullptr});
    CHECK(v.fused_bias_act);
    CHECK(v.alpha == 1.0f);
    Tensor y = Tensor::zeros(ys, DType::f32, host_device());
    ops::conv2d_forward(x, w, &bias, y, cc.p, Activation::relu);
    Vec got(numel(v.y), NAN);  // z = y with alpha2 0: the old contents do not count
    ref_forward_bias_act(v, values(x), values(w), values(bias), got);
    CHECK(rel_diff(got, values(y)) <= 1e-5);
    // ReLU really clipped something, so a missing activation would show.
    std::size_t zeros = 0;
    for (float f : values(y)) zeros += f == 0.0f;
    CHECK(zeros > 0);
  }
}

TEST_CASE("cuDNN conv seam: what the fused forward does not serve stays unfused") {
  const Conv2dArgs base = conv_args({2, 3, 7, 6}, {4, 3, 3, 3}, params(1, 1, 1, 1, 1, 1, 1));
  float b0 = 0;
  Conv2dArgs a = base;
  a.act = Activation::relu;
  // No bias: the plain call, ReLU in the caller's pass.
  CHECK_FALSE(
      conv_values(calls::Conv2dForward{a, nullptr, nullptr, nullptr, nullptr}).fused_bias_act);
  // Activations cuDNN's fused call lacks, and none (IDENTITY would pin IMPLICIT_PRECOMP_GEMM).
  for (Activation f : {Activation::identity, Activation::leaky_relu, Activation::gelu,
                       Activation::sigmoid, Activation::tanh}) {
    CAPTURE(activation_name(f));
    a.act = f;
    CHECK_FALSE(
        conv_values(calls::Conv2dForward{a, nullptr, nullptr, &b0, nullptr}).fused_bias_act);
  }
  // Autocast: the bias is added in f32 after widening, as PyTorch's autocast does.
  a.act = Activation::relu;
  for (DType t : {DType::bf16, DType::f16}) {
    a.compute = t;
    const ConvValues v = conv_values(calls::Conv2dForward{a, nullptr, nullptr, &b0, nullptr});
    CHECK(v.lowp);
    CHECK_FALSE(v.fused_bias_act);
  }
  // Beyond cuDNN's descriptors: nothing at all.
  Conv2dArgs big = base;
  big.act = Activation::relu;
  big.n = std::int64_t{1} << 16;
  big.c = std::int64_t{1} << 16;
  const ConvValues v = conv_values(calls::Conv2dForward{big, nullptr, nullptr, &b0, nullptr});
  CHECK_FALSE(v.covered);
  CHECK_FALSE(v.fused_bias_act);
}

TEST_CASE("cuDNN conv seam: no dbias, no bias call") {
  const Conv2dArgs a = conv_args({2, 3, 7, 6}, {4, 3, 3, 3}, params(1, 1, 1, 1, 1, 1, 1));
  const ConvValues v = conv_values(calls::Conv2dBackwardFilter{a, nullptr, nullptr, nullptr, nullptr});
  CHECK(v.covered);
  CHECK_FALSE(v.bias_grad);
}

TEST_CASE("cuDNN conv seam: beyond 32-bit extents is declined, not mis-sized") {
  // 2^16 images of 2^16 channels of 1x1: 2^32 elements, each extent an int but not the count.
  Conv2dArgs a = conv_args({1, 1, 1, 1}, {1, 1, 1, 1}, params(1, 1, 0, 0, 1, 1, 1));
  a.n = std::int64_t{1} << 16;
  a.c = std::int64_t{1} << 16;
  CHECK_FALSE(conv_values(calls::Conv2dForward{a, nullptr, nullptr, nullptr, nullptr}).covered);
  CHECK_FALSE(conv_values(calls::Conv2dBackwardData{a, nullptr, nullptr, nullptr}).covered);
  float db = 0;
  const ConvValues bf = conv_values(calls::Conv2dBackwardFilter{a, nullptr, nullptr, nullptr, &db});
  CHECK_FALSE(bf.covered);
  CHECK_FALSE(bf.bias_grad);
  // One extent beyond int (the output count too).
  Conv2dArgs wide = conv_args({1, 1, 1, 1}, {1, 1, 1, 1}, params(1, 1, 0, 0, 1, 1, 1));
  wide.w = wide.ow = std::int64_t{1} << 31;
  CHECK_FALSE(conv_values(calls::Conv2dForward{wide, nullptr, nullptr, nullptr, nullptr}).covered);
  // The largest filter count that fits is still covered: the decline is the limit, not a guess.
  Conv2dArgs edge = conv_args({1, 1, 1, 1}, {1, 1, 1, 1}, params(1, 1, 0, 0, 1, 1, 1));
  edge.k = INT32_MAX;
  edge.n = 1;
  CHECK(conv_values(calls::Conv2dForward{edge, nullptr, nullptr, nullptr, nullptr}).covered);
}

TEST_CASE("cuDNN conv seam: contradictory args throw naming the field") {
  Conv2dArgs a = conv_args({2, 4, 9, 8}, {6, 2, 2, 3}, params(2, 1, 0, 1, 2, 1, 2));
  Conv2dArgs bad_groups = a;
  bad_groups.groups = 3;
  CHECK_THROWS_WITH_AS(conv_values(calls::Conv2dForward{bad_groups, nullptr, nullptr, nullptr, nullptr}),
                       doctest::Contains("groups 3 must divide c 4"), Error);
  Conv2dArgs bad_out = a;
  bad_out.oh += 1;
  CHECK_THROWS_WITH_AS(conv_values(calls::Conv2dBackwardData{bad_out, nullptr, nullptr, nullptr}),
                       doctest::Contains("oh x ow"), Error);
}

// ---- batch normalisation (cudnn_ops.h, SPATIAL) ----

namespace {

struct BnState {
  Vec y, save_mean, save_inv, running_mean, running_var;
};

// cudnnBatchNormalizationForwardTraining from the seam's values.
void ref_bn_forward(const BnForwardValues& v, const Vec& x, const Vec* scale, const Vec* bias,
                    BnState& st) {
  REQUIRE(v.covered);
  REQUIRE(v.mode == ce::kBatchNormSpatial);
  REQUIRE(v.x.w == 1);
  REQUIRE(v.bn.n == 1);
  REQUIRE(v.bn.h == 1);
  REQUIRE(v.bn.w == 1);
  REQUIRE(v.bn.c == v.x.c);
  const int n = v.x.n, c = v.x.c, inner = v.x.h;
  const double m = double(n) * inner;
  REQUIRE(static_cast<std::int64_t>(m) == v.m);
  st.y.resize(x.size(), NAN);
  st.save_mean.assign(c, NAN);
  st.save_inv.assign(c, NAN);
  for (int ch = 0; ch < c; ++ch) {
    double sum = 0, sq = 0;
    for (int b = 0; b < n; ++b)
      for (int i = 0; i < inner; ++i) sum += x[(std::size_t(b) * c + ch) * inner + i];
    const double mean = sum / m;
    for (int b = 0; b < n; ++b)
      for (int i = 0; i < inner; ++i) {
        const double d = x[(std::size_t(b) * c + ch) * inner + i] - mean;
        sq += d * d;
      }
    const double var = sq / m;  // biased: what normalises
    const double inv = 1.0 / std::sqrt(var + v.epsilon);
    const double g = v.unit_scale ? 1.0 : (*scale)[ch], be = v.zero_bias ? 0.0 : (*bias)[ch];
    for (int b = 0; b < n; ++b)
      for (int i = 0; i < inner; ++i) {
        const std::size_t k = (std::size_t(b) * c + ch) * inner + i;
        st.y[k] = blend(v.alpha, g * (x[k] - mean) * inv + be, v.beta, st.y[k]);
      }
    st.save_mean[ch] = static_cast<float>(mean);
    st.save_inv[ch] = static_cast<float>(inv);
    if (v.update_running) {
      const double f = v.exponential_average_factor;
      const double var_run = v.running_var_unbiased ? var * m / (m - 1) : var;
      st.running_mean[ch] = static_cast<float>(mean * f + st.running_mean[ch] * (1 - f));
      st.running_var[ch] = static_cast<float>(var_run * f + st.running_var[ch] * (1 - f));
    }
  }
}

// cudnnBatchNormalizationBackward from the seam's values and the saved statistics.
void ref_bn_backward(const BnBackwardValues& v, const Vec& x, const Vec& dy, const Vec* scale,
                     const Vec& save_mean, const Vec& save_inv, Vec& dx, Vec& dgamma,
                     Vec& dbeta) {
  REQUIRE(v.covered);
  REQUIRE(v.mode == ce::kBatchNormSpatial);
  REQUIRE(v.bn.c == v.x.c);
  const int n = v.x.n, c = v.x.c, inner = v.x.h;
  const double m = double(n) * inner;
  for (int ch = 0; ch < c; ++ch) {
    const double mean = save_mean[ch], inv = save_inv[ch];
    const double g = v.unit_scale ? 1.0 : (*scale)[ch];
    double sdy = 0, sdyx = 0;
    for (int b = 0; b < n; ++b)
      for (int i = 0; i < inner; ++i) {
        const std::size_t k = (std::size_t(b) * c + ch) * inner + i;
        sdy += dy[k];
        sdyx += dy[k] * (x[k] - mean) * inv;
      }
    for (int b = 0; b < n; ++b)
      for (int i = 0; i < inner; ++i) {
        const std::size_t k = (std::size_t(b) * c + ch) * inner + i;
        const double xhat = (x[k] - mean) * inv;
        const double d = g * inv / m * (m * dy[k] - sdy - xhat * sdyx);
        dx[k] = blend(v.alpha_data, d, v.beta_data, dx[k]);
      }
    dgamma[ch] = blend(v.alpha_param, sdyx, v.beta_param, dgamma[ch]);
    dbeta[ch] = blend(v.alpha_param, sdy, v.beta_param, dbeta[ch]);
  }
}

struct BnCase {
  const char* name;
  Shape x;
  float eps, momentum;
  bool affine, running;
};

}  // namespace

TEST_CASE("cuDNN batch-norm seam: forward training values (saved and running statistics) match the host") {
  const BnCase cases[] = {
      {"parity: [4,3,5,5] eps 1e-5 momentum 0.1", {4, 3, 5, 5}, 1e-5f, 0.1f, true, true},
      {"momentum 0.7 (factor, not 1 - factor)", {2, 4, 3, 3}, 1e-3f, 0.7f, true, true},
      {"no affine, no running stats", {3, 2, 4, 2}, 1e-5f, 0.1f, false, false},
      {"[8, 5] features (inner 1)", {8, 5}, 1e-5f, 0.1f, true, true},
      {"M = 2: Bessel's factor 2", {2, 3}, 1e-5f, 0.5f, true, true},
  };
  for (const BnCase& bc : cases) {
    CAPTURE(bc.name);
    const std::int64_t c = bc.x[1];
    BatchNormArgs a;
    a.n = bc.x[0];
    a.c = c;
    a.inner = bc.x.numel() / (a.n * c);
    a.eps = bc.eps;
    a.momentum = bc.momentum;
    a.training = true;
    float dummy = 0;
    calls::BatchNormForward call{a, nullptr, bc.affine ? &dummy : nullptr, bc.affine ? &dummy : nullptr,
                                 bc.running ? &dummy : nullptr, bc.running ? &dummy : nullptr,
                                 &dummy, &dummy, &dummy};
    const BnForwardValues v = bn_forward_values(call);
    REQUIRE(v.covered);
    CHECK(v.x.n == a.n);
    CHECK(v.x.c == c);
    CHECK(v.x.h == a.inner);
    CHECK(v.epsilon == doctest::Approx(bc.eps).epsilon(1e-12));
    CHECK(v.exponential_average_factor == doctest::Approx(bc.momentum).epsilon(1e-12));
    CHECK(v.update_running == bc.running);
    CHECK(v.unit_scale == !bc.affine);
    CHECK(v.zero_bias == !bc.affine);

    const Tensor x = uni(bc.x, 50, -2.0f, 3.0f), g = uni({c}, 53), b = uni({c}, 54);
    const Tensor rm0 = uni({c}, 51), rv0 = uni({c}, 52, 0.5f, 2.0f);
    Tensor y = Tensor::zeros(bc.x, DType::f32, host_device());
    Tensor sm = Tensor::zeros({c}, DType::f32, host_device());
    Tensor si = Tensor::zeros({c}, DType::f32, host_device());
    Tensor rm = Tensor::from_vector(values(rm0), {c}, host_device());
    Tensor rv = Tensor::from_vector(values(rv0), {c}, host_device());
    ops::batch_norm_forward(x, bc.affine ? &g : nullptr, bc.affine ? &b : nullptr,
                            bc.running ? &rm : nullptr, bc.running ? &rv : nullptr, y, sm, si,
                            bc.eps, bc.momentum, true);

    BnState st;
    st.running_mean = values(rm0);
    st.running_var = values(rv0);
    const Vec gv = values(g), bv = values(b);
    ref_bn_forward(v, values(x), &gv, &bv, st);
    CHECK(rel_diff(st.y, values(y)) <= 1e-5);
    CHECK(rel_diff(st.save_mean, values(sm)) <= 1e-6);
    CHECK(rel_diff(st.save_inv, values(si)) <= 1e-5);
    // Without running statistics cuDNN gets null pointers and the host leaves them alone.
    CHECK(rel_diff(st.running_mean, values(rm)) <= 1e-6);
    CHECK(rel_diff(st.running_var, values(rv)) <= 1e-6);
  }
}

TEST_CASE("cuDNN batch-norm seam: backward values (dx overwritten, dgamma/dbeta accumulated) match the host") {
  for (bool affine : {true, false}) {
    CAPTURE(affine);
    const Shape xs{4, 3, 5, 5};
    BatchNormArgs a;
    a.n = 4;
    a.c = 3;
    a.inner = 25;
    float dummy = 0;
    const Tensor x = uni(xs, 50), dy = uni(xs, 57), g = uni({3}, 53), b = uni({3}, 54);
    Tensor y = Tensor::zeros(xs, DType::f32, host_device());
    Tensor sm = Tensor::zeros({3}, DType::f32, host_device());
    Tensor si = Tensor::zeros({3}, DType::f32, host_device());
    ops::batch_norm_forward(x, affine ? &g : nullptr, affine ? &b : nullptr, nullptr, nullptr, y,
                            sm, si, 1e-5f, 0.1f, true);
    const Tensor dg0 = uni({3}, 55), db0 = uni({3}, 56);
    Tensor dx = Tensor::zeros(xs, DType::f32, host_device());
    Tensor dg = Tensor::from_vector(values(dg0), {3}, host_device());
    Tensor db = Tensor::from_vector(values(db0), {3}, host_device());
    ops::batch_norm_backward(x, dy, affine ? &g : nullptr, sm, si, &dx, &dg, &db, true);

    const BnBackwardValues v = bn_backward_values(calls::BatchNormBackward{
        a, nullptr, nullptr, affine ? &dummy : nullptr, &dummy, &dummy, &dummy, &dummy, &dummy});
    CHECK(v.alpha_data == 1.0f);
    CHECK(v.beta_data == 0.0f);
    CHECK(v.alpha_param == 1.0f);
    CHECK(v.beta_param == 1.0f);
    CHECK(v.unit_scale == !affine);
    CHECK_FALSE(v.dx_scratch);
    CHECK_FALSE(v.dgamma_scratch);
    CHECK_FALSE(v.dbeta_scratch);
    Vec gdx(x.numel(), NAN), gdg = values(dg0), gdb = values(db0);
    const Vec gv = values(g);
    ref_bn_backward(v, values(x), values(dy), &gv, values(sm), values(si), gdx, gdg, gdb);
    CHECK(rel_diff(gdx, values(dx)) <= 1e-5);
    CHECK(rel_diff(gdg, values(dg)) <= 1e-5);
    CHECK(rel_diff(gdb, values(db)) <= 1e-5);
  }
}

TEST_CASE("cuDNN batch-norm seam: what cuDNN does not cover is declined; outputs not asked for go to scratch") {
  float p = 0;
  BatchNormArgs a;
  a.n = 4;
  a.c = 3;
  a.inner = 25;
  auto fwd = [&](const BatchNormArgs& args) {
    return bn_forward_values(
        calls::BatchNormForward{args, &p, &p, &p, &p, &p, &p, &p, &p});
  };
  CHECK(fwd(a).covered);
  BatchNormArgs eval = a;
  eval.training = false;  // inference writes no saved statistics: the shared kernels run it
  CHECK_FALSE(fwd(eval).covered);
  BatchNormArgs one = a;
  one.n = 1;
  one.inner = 1;  // M = 1: no unbiased variance
  CHECK_FALSE(fwd(one).covered);
  BatchNormArgs big = a;
  big.n = std::int64_t{1} << 16;
  big.c = 1 << 8;
  big.inner = 1 << 8;  // 2^32 elements
  CHECK_FALSE(fwd(big).covered);
  CHECK_FALSE(bn_backward_values(calls::BatchNormBackward{big, &p, &p, &p, &p, &p, &p, &p, &p}).covered);
  CHECK_THROWS_WITH_AS(bn_forward_values(calls::BatchNormForward{a, &p, &p, &p, &p, nullptr, &p, &p, &p}),
                       doctest::Contains("running_mean and running_var come together"), Error);
  const BnBackwardValues v =
      bn_backward_values(calls::BatchNormBackward{a, &p, &p, nullptr, &p, &p, nullptr, nullptr, &p});
  CHECK(v.unit_scale);
  CHECK(v.dx_scratch);
  CHECK(v.dgamma_scratch);
  CHECK_FALSE(v.dbeta_scratch);
}

// ---- softmax (cudnn_ops.h, CHANNEL mode) ----

TEST_CASE("cuDNN softmax seam: CHANNEL mode over [outer, C, inner, 1] matches the host") {
  for (bool log : {false, true}) {
    CAPTURE(log);
    const Shape xs{3, 7, 4};
    const SoftmaxValues v = softmax_values(log, ChannelDims{3, 7, 4});
    REQUIRE(v.covered);
    CHECK(v.mode == ce::kSoftmaxModeChannel);
    CHECK(v.algorithm == (log ? ce::kSoftmaxLog : ce::kSoftmaxAccurate));
    CHECK(v.alpha == 1.0f);
    CHECK(v.beta == 0.0f);
    REQUIRE(v.t.w == 1);
    const Tensor x = uni(xs, 48, -4, 4), dy = uni(xs, 49);
    Tensor y = Tensor::zeros(xs, DType::f32, host_device());
    Tensor dx = Tensor::zeros(xs, DType::f32, host_device());
    ops::softmax_forward(log, x, y, 1);
    ops::softmax_backward(log, y, dy, dx, 1);
    // The reference: for each (n, h), over c; ACCURATE subtracts the max; LOG is log-softmax.
    // Backward from y: ACCURATE dx = y (dy - sum dy y); LOG dx = dy - exp(y) sum dy.
    const Vec xv = values(x), yv = values(y), dyv = values(dy);
    Vec ry(xv.size(), NAN), rdx(xv.size(), NAN);
    const int C = v.t.c, H = v.t.h;
    const bool lg = v.algorithm == ce::kSoftmaxLog;
    for (int n = 0; n < v.t.n; ++n)
      for (int h = 0; h < H; ++h) {
        auto at = [&](int c) { return (std::size_t(n) * C + c) * H + h; };
        double mx = -INFINITY, sum = 0, sdy = 0, sdyy = 0;
        for (int c = 0; c < C; ++c) mx = std::fmax(mx, xv[at(c)]);
        for (int c = 0; c < C; ++c) sum += std::exp(xv[at(c)] - mx);
        for (int c = 0; c < C; ++c) {
          const double r = lg ? xv[at(c)] - mx - std::log(sum) : std::exp(xv[at(c)] - mx) / sum;
          ry[at(c)] = blend(v.alpha, r, v.beta, ry[at(c)]);
          sdy += dyv[at(c)];
          sdyy += double(dyv[at(c)]) * yv[at(c)];
        }
        for (int c = 0; c < C; ++c) {
          const double d = lg ? dyv[at(c)] - std::exp(double(yv[at(c)])) * sdy
                              : yv[at(c)] * (dyv[at(c)] - sdyy);
          rdx[at(c)] = blend(v.alpha, d, v.beta, rdx[at(c)]);
        }
      }
    CHECK(rel_diff(ry, values(y)) <= 1e-6);
    CHECK(rel_diff(rdx, values(dx)) <= 1e-6);
  }
  CHECK_FALSE(softmax_values(false, ChannelDims{std::int64_t{1} << 20, 1 << 12, 1}).covered);
}

// ---- convolution algorithm choice (GPU review G7, G8) ----

// Under autocast cuDNN runs the PSEUDO_BFLOAT16 / PSEUDO_HALF configuration: 16-bit x, w, y and
// f32 compute. Executed here as documented: the inputs rounded to the type (the caller's copies),
// the reference's f32 result rounded to it (y is 16-bit), then widened by the caller's rule
// (written, or added to dw). Compared with the host's f32 op on the same rounded inputs: the
// difference is the output's rounding, at most the unit roundoff times |sum| (2^-8 for bf16's 8
// significant bits, 2^-11 for f16's 11), plus f32's own 1e-5.
namespace {
float round16(float v, DType t) {
  return t == DType::bf16 ? bf16_to_float(float_to_bf16(v)) : f16_to_float(float_to_f16(v));
}
Vec rounded(Vec v, DType t) {
  for (float& f : v) f = round16(f, t);
  return v;
}
// max over i of |got - want| / (u |sum| + 1e-5 (1 + |want|)): at most 1 passes.
double rounding_ratio(const Vec& got, const Vec& want, const Vec& sum, DType t) {
  REQUIRE(got.size() == want.size());
  const double u = std::ldexp(1.0, t == DType::bf16 ? -8 : -11);
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double bound = u * std::fabs(double(sum[i])) + 1e-5 * (1 + std::fabs(double(want[i])));
    worst = std::fmax(worst, std::fabs(double(got[i]) - want[i]) / bound);
  }
  return worst;
}
}  // namespace

TEST_CASE("cuDNN conv seam under autocast: 16-bit data, f32 compute, the result widened") {
  for (const DType t : {DType::bf16, DType::f16})
    for (const ConvCase& cc : conv_cases()) {
      const std::string type = dtype_name(t), name = cc.name;
      CAPTURE(type);
      CAPTURE(name);
      Conv2dArgs a = conv_args(cc.x, cc.w, cc.p);
      a.compute = t;
      const int want_type = t == DType::bf16 ? ce::kDataBfloat16 : ce::kDataHalf;
      const Shape ys = ops::conv2d_output_shape(cc.x, cc.w, cc.p);
      const Vec x = rounded(values(uni(cc.x, 21)), t), w = rounded(values(uni(cc.w, 22)), t);
      const Vec dy = rounded(values(uni(ys, 24)), t);
      const Tensor xt = Tensor::from_vector(x, cc.x, host_device());
      const Tensor wt = Tensor::from_vector(w, cc.w, host_device());
      const Tensor dyt = Tensor::from_vector(dy, ys, host_device());

      SUBCASE("forward: y = widen(round(conv(x16, w16)))") {
        const ConvValues v =
            conv_values(calls::Conv2dForward{a, nullptr, nullptr, nullptr, nullptr});
        CHECK(v.lowp);
        CHECK(v.data_type == want_type);
        CHECK(v.compute_type == ce::kDataFloat);
        CHECK(v.beta == 0.0f);
        CHECK_FALSE(v.accumulate_widened);
        Tensor y = Tensor::zeros(ys, DType::f32, host_device());
        ops::conv2d_forward(xt, wt, nullptr, y, cc.p);
        Vec got(numel(v.y), NAN);
        ref_forward(v, x, w, got);
        got = rounded(got, t);
        CHECK(rounding_ratio(got, values(y), values(y), t) <= 1.0);
      }
      SUBCASE("backward data: dx = widen(round(convT(dy16, w16)))") {
        const ConvValues v = conv_values(calls::Conv2dBackwardData{a, nullptr, nullptr, nullptr});
        CHECK(v.data_type == want_type);
        CHECK(v.beta == 0.0f);
        CHECK_FALSE(v.accumulate_widened);
        Tensor dx = Tensor::zeros(cc.x, DType::f32, host_device());
        ops::conv2d_backward_data(dyt, wt, dx, cc.p);
        Vec got(numel(v.x), NAN);
        ref_backward_data(v, dy, w, got);
        got = rounded(got, t);
        CHECK(rounding_ratio(got, values(dx), values(dx), t) <= 1.0);
      }
      SUBCASE("backward filter: cuDNN overwrites a 16-bit dw (beta 0), the caller adds it in f32") {
        float dbias_dummy = 0;
        const ConvValues v =
            conv_values(calls::Conv2dBackwardFilter{a, nullptr, nullptr, nullptr, &dbias_dummy});
        CHECK(v.data_type == want_type);
        CHECK(v.beta == 0.0f);
        CHECK(v.accumulate_widened);
        CHECK(v.bias_grad);  // the bias gradient stays f32, accumulated by cuDNN
        CHECK(v.bias_beta == 1.0f);
        const Vec dw0 = values(uni(cc.w, 25));
        Tensor sum = Tensor::zeros(cc.w, DType::f32, host_device());
        ops::conv2d_backward_filter(xt, dyt, sum, nullptr, cc.p);
        Vec want = dw0;
        for (std::size_t i = 0; i < want.size(); ++i) want[i] += values(sum)[i];
        Vec out16(numel(Tensor4d{v.w.k, v.w.c, v.w.r, v.w.s}), NAN);  // beta 0: never read
        ref_backward_filter(v, x, dy, out16);
        out16 = rounded(out16, t);
        Vec got = dw0;
        for (std::size_t i = 0; i < got.size(); ++i) got[i] += out16[i];
        CHECK(rounding_ratio(got, want, values(sum), t) <= 1.0);
      }
    }
}

TEST_CASE("cuDNN conv seam: a compute type other than f32, bf16 or f16 throws naming it") {
  Conv2dArgs a = conv_args({1, 2, 5, 5}, {3, 2, 3, 3}, params(1, 1, 1, 1, 1, 1, 1));
  CHECK(conv_values(calls::Conv2dForward{a, nullptr, nullptr, nullptr, nullptr}).data_type ==
        ce::kDataFloat);
  CHECK_FALSE(conv_values(calls::Conv2dForward{a, nullptr, nullptr, nullptr, nullptr}).lowp);
  a.compute = DType::i32;
  CHECK_THROWS_WITH_AS(conv_values(calls::Conv2dForward{a, nullptr, nullptr, nullptr, nullptr}),
                       doctest::Contains("compute type i32"), Error);
}

TEST_CASE("cuDNN algorithm choice: math type, determinism, status and workspace cap") {
  const std::size_t MiB = std::size_t{1} << 20;
  // A heuristic list as cuDNN returns it, best first.
  const std::vector<AlgoPerf> perf = {
      {6, ce::kStatusSuccess, 0.1f, 8 * MiB, ce::kDeterministic, ce::kDefaultMath},       // winograd, DEFAULT
      {1, ce::kStatusSuccess, 0.2f, 2 * MiB, ce::kDeterministic, ce::kTensorOpMath},      // tensor cores
      {7, ce::kStatusSuccess, 0.3f, 900 * MiB, ce::kDeterministic, ce::kFmaMath},         // big workspace
      {5, ce::kStatusNotSupported, 0.4f, 0, ce::kDeterministic, ce::kFmaMath},            // failed
      {0, ce::kStatusSuccess, 0.5f, 4 * MiB, ce::kNonDeterministic, ce::kFmaMath},        // atomics
      {2, ce::kStatusSuccess, 0.6f, 16 * MiB, ce::kDeterministic, ce::kFmaMath},
      {3, ce::kStatusSuccess, 0.7f, 0, ce::kDeterministic, ce::kFmaMath},
  };
  // rejection() as a string ("" when accepted), so a wrong acceptance fails the CHECK, not a throw.
  auto why = [](const AlgoPerf& p, const AlgoRules& r) {
    const char* w = rejection(p, r);
    return std::string(w ? w : "");
  };
  auto algos = [](const std::vector<RankedAlgo>& r) {
    std::vector<int> a;
    for (const RankedAlgo& x : r) a.push_back(x.algo);
    return a;
  };
  AlgoRules rules;
  rules.workspace_cap = cohort::cuda::seams::workspace_cap(std::size_t{4} << 30);  // 1 GiB
  CHECK(rules.workspace_cap == kMaxWorkspace);

  SUBCASE("TF32 off: only FMA_MATH (DEFAULT_MATH may use TF32 on Ampere and later)") {
    CHECK(why(perf[0], rules) == "math type");
    CHECK(why(perf[1], rules) == "math type");
    CHECK(why(perf[2], rules) == "");
    CHECK(algos(rank_algorithms(perf, rules)) == std::vector<int>{7, 0, 2, 3});
    for (const RankedAlgo& r : rank_algorithms(perf, rules)) CHECK(r.math_type == ce::kFmaMath);
  }
  SUBCASE("TF32 on: any math type, still in cuDNN's order") {
    rules.allow_tf32 = true;
    const auto r = rank_algorithms(perf, rules);
    CHECK(algos(r) == std::vector<int>{6, 1, 7, 0, 2, 3});
    CHECK(r[0].math_type == ce::kDefaultMath);
    CHECK(r[0].workspace == 8 * MiB);
  }
  SUBCASE("deterministic mode: non-deterministic entries rejected") {
    rules.deterministic = true;
    CHECK(why(perf[4], rules) == "determinism");
    CHECK(algos(rank_algorithms(perf, rules)) == std::vector<int>{7, 2, 3});
  }
  SUBCASE("status other than success rejected") {
    CHECK(why(perf[3], rules) == "status");
  }
  SUBCASE("workspace over the cap skipped: the cap follows free memory") {
    rules.workspace_cap = cohort::cuda::seams::workspace_cap(1000 * MiB);  // half of it: 500 MiB
    CHECK(rules.workspace_cap == 500 * MiB);
    CHECK(why(perf[2], rules) == "workspace");
    CHECK(algos(rank_algorithms(perf, rules)) == std::vector<int>{0, 2, 3});
    rules.workspace_cap = cohort::cuda::seams::workspace_cap(0);  // nothing free: only no-workspace algorithms
    CHECK(algos(rank_algorithms(perf, rules)) == std::vector<int>{3});
  }
  SUBCASE("16-bit data: every math type but ALLOW_CONVERSION (bf16 must not become f16)") {
    rules.lowp = true;
    CHECK(why(perf[0], rules) == "");
    CHECK(why(perf[1], rules) == "");
    AlgoPerf conv = perf[1];
    conv.math_type = ce::kTensorOpMathAllowConversion;
    CHECK(why(conv, rules) == "math type");
    CHECK(algos(rank_algorithms(perf, rules)) == std::vector<int>{6, 1, 7, 0, 2, 3});
  }
  SUBCASE("nothing usable: an empty list (the shared kernels run the case)") {
    const std::vector<AlgoPerf> bad = {perf[0], perf[1], perf[3]};
    CHECK(rank_algorithms(bad, rules).empty());
  }
}

TEST_CASE("cuDNN algorithm choice: workspace cap is min(1 GiB, half the free memory)") {
  CHECK(cohort::cuda::seams::workspace_cap(std::size_t{10} << 30) == std::size_t{1} << 30);
  CHECK(cohort::cuda::seams::workspace_cap(std::size_t{2} << 30) == std::size_t{1} << 30);
  CHECK(cohort::cuda::seams::workspace_cap((std::size_t{2} << 30) - 2) == (std::size_t{1} << 30) - 1);
  CHECK(cohort::cuda::seams::workspace_cap(600) == 300);
}

TEST_CASE("cuDNN algorithm choice: after out of memory, the next ranked entry with a smaller workspace") {
  const std::vector<RankedAlgo> ranked = {
      {1, 500, ce::kFmaMath}, {6, 700, ce::kFmaMath}, {0, 500, ce::kFmaMath},
      {2, 100, ce::kFmaMath}, {3, 0, ce::kFmaMath}};
  CHECK(next_after_out_of_memory(ranked, 0) == 3);  // 700 and 500 are not smaller than 500
  CHECK(next_after_out_of_memory(ranked, 1) == 2);
  CHECK(next_after_out_of_memory(ranked, 3) == 4);
  CHECK(next_after_out_of_memory(ranked, 4) == -1);  // nothing smaller than 0: the error stands
  CHECK(next_after_out_of_memory(ranked, 9) == -1);
  CHECK(next_after_out_of_memory({}, 0) == -1);
}

TEST_CASE("cuDNN algorithm names and tolerance families") {
  CHECK(std::string(conv_algo_name(ConvDir::forward, 1)) == "IMPLICIT_PRECOMP_GEMM");
  CHECK(std::string(conv_algo_name(ConvDir::forward, 7)) == "WINOGRAD_NONFUSED");
  CHECK(std::string(conv_algo_name(ConvDir::backward_data, 3)) == "FFT_TILING");
  CHECK(std::string(conv_algo_name(ConvDir::backward_filter, 3)) == "ALGO_3");
  CHECK(std::string(conv_algo_name(ConvDir::backward_filter, 6)) == "FFT_TILING");
  CHECK(std::string(conv_algo_name(ConvDir::forward, 8)) == "unknown");
  CHECK(conv_algo_family(ConvDir::forward, 3) == AlgoFamily::direct);
  CHECK(conv_algo_family(ConvDir::forward, 4) == AlgoFamily::fft);
  CHECK(conv_algo_family(ConvDir::backward_data, 4) == AlgoFamily::winograd);
  CHECK(conv_algo_family(ConvDir::backward_filter, 0) == AlgoFamily::gemm);
  CHECK(conv_tolerance(AlgoFamily::gemm) == 1e-5);
  CHECK(conv_tolerance(AlgoFamily::direct) == 1e-5);
  CHECK(conv_tolerance(AlgoFamily::winograd) == 1e-4);
  CHECK(conv_tolerance(AlgoFamily::fft) == 1e-4);
  CHECK(conv_tolerance(AlgoFamily::unknown) == 1e-4);
}

// ---- execute-call status (GPU review G6) ----

TEST_CASE("cuDNN execute status: NOT_SUPPORTED and its sub-codes decline, other failures throw") {
#if COHORT_VENDOR_CUDNN_HEADERS
  // Against the header the build uses.
  const int not_supported[] = {
      CUDNN_STATUS_NOT_SUPPORTED,
      CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN,
      CUDNN_STATUS_NOT_SUPPORTED_SHAPE,
      CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
      CUDNN_STATUS_NOT_SUPPORTED_LAYOUT,
      CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER,
      CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART,
      CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH,
      CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING,
      CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE,
      CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT,
      CUDNN_STATUS_NOT_SUPPORTED_PADDING,
      CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM,
      CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API,
      CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE,
  };
  const int failures[] = {
      CUDNN_STATUS_NOT_INITIALIZED,         CUDNN_STATUS_BAD_PARAM,
      CUDNN_STATUS_BAD_PARAM_NULL_POINTER,  CUDNN_STATUS_INTERNAL_ERROR,
      CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED,
      CUDNN_STATUS_EXECUTION_FAILED,        CUDNN_STATUS_EXECUTION_FAILED_CUDART,
      CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED};
  CHECK(execute_status_action(CUDNN_STATUS_SUCCESS) == StatusAction::done);
#else
  // The documented numbers of cudnn_graph.h (cuDNN 9.19): 3000 and 3001-3014.
  std::vector<int> not_supported;
  for (int s = 3000; s <= 3014; ++s) not_supported.push_back(s);
  const int failures[] = {1001, 2000, 2002, 4000, 4004, 5000, 5003, 1008};
  CHECK(execute_status_action(0) == StatusAction::done);
#endif

  for (int s : not_supported) {
    CAPTURE(s);
    CHECK(execute_status_action(s) == StatusAction::decline);
  }
  for (int s : failures) {
    CAPTURE(s);
    CHECK(execute_status_action(s) == StatusAction::fail);
  }
  CHECK(ce::kStatusNotSupportedLast == 3014);
}

TEST_SUITE_END();
