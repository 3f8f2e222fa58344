// The cuDNN convolution seam (backends/cuda/seams/cudnn_conv.hpp) on the CPU: each direction's
// values (forward, forward fused with bias and ReLU, backward data, backward filter and bias, and
// each under autocast's 16-bit data) executed as cuDNN documents them and compared with the host
// device (cudnn_reference.hpp says how); what the seam declines and the arguments it refuses.
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
#include "cudnn_reference.hpp"

TEST_SUITE_BEGIN("cudnn");

using namespace cohort;
using namespace cohort::cuda::seams;
using namespace cohort::test_cudnn;

namespace {

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
      {"groups 3, stride 2x2, dilation 2x3, pads 2x1",
       {2, 6, 13, 14},
       {9, 2, 3, 2},
       params(2, 2, 2, 1, 2, 3, 3)},
      {"stride 2, pad 0x2, 5x3 kernel", {1, 2, 11, 7}, {3, 2, 5, 3}, params(2, 2, 0, 2, 1, 1, 1)},
      {"32 channels 3x3 (288-term sums)",
       {2, 32, 10, 10},
       {8, 32, 3, 3},
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
  const ConvValues v =
      conv_values(calls::Conv2dBackwardFilter{a, nullptr, nullptr, nullptr, nullptr});
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
  CHECK_THROWS_WITH_AS(
      conv_values(calls::Conv2dForward{bad_groups, nullptr, nullptr, nullptr, nullptr}),
      doctest::Contains("groups 3 must divide c 4"), Error);
  Conv2dArgs bad_out = a;
  bad_out.oh += 1;
  CHECK_THROWS_WITH_AS(conv_values(calls::Conv2dBackwardData{bad_out, nullptr, nullptr, nullptr}),
                       doctest::Contains("oh x ow"), Error);
}

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

TEST_SUITE_END();
