// The CUDA device's executor (backends/cuda/thrust_exec.hpp) on Thrust's CPP system: every op but
// the GEMMs really goes through Thrust on the "thrust-host" test device, and the row reductions keep
// their semantics (hand-computed values). The parity table (tests/parity) checks every op on
// thrust-host against its reference as well.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cohort/backend/op_list.hpp"
#include "cohort/core/layer_ops.hpp"
#include "cohort/core/ops.hpp"
#include "cohort/core/optim_ops.hpp"
#include "cohort/core/tensor.hpp"
#include "cohort/devices.hpp"
#include "cohort/models.hpp"
#include "cohort/optim.hpp"
#include "thrust_host_device.hpp"

using namespace cohort;

namespace {

Device& dev() { return testing::thrust_host_device(); }

Tensor on_dev(const std::vector<float>& v, const Shape& s) {
  return Tensor::from_vector(v, s, host_device()).to(dev());
}
Tensor uni(std::int64_t n, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  return Tensor::uniform({n}, lo, hi, seed, host_device()).to(dev());
}
Tensor zeros(std::int64_t n, DType t = DType::f32) { return Tensor::zeros({n}, t, dev()); }
// Uniform values in [lo, hi) as a host vector (the same on every device they are copied to).
std::vector<float> host_uniform(const Shape& s, std::uint64_t seed, float lo, float hi) {
  return Tensor::uniform(s, lo, hi, seed, host_device()).to_vector<float>();
}

// One call of each element-wise, reduction, random, activation and optimizer op (and a GEMM, which
// does not launch Thrust).
void tour() {
  for (DType t : {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::i64, DType::u8}) {
    Tensor x = zeros(5, t);
    ops::fill(x, 1.5);
  }
  Tensor a = uni(40, 1), b = uni(40, 2), o = zeros(40);
  for (DType t : {DType::f64, DType::bf16, DType::f16}) {
    Tensor c = zeros(40, t);
    ops::cast(a, c);
    ops::cast(c, o);
  }
  ops::add(a, b, o);
  ops::sub(a, b, o);
  ops::mul(a, b, o);
  ops::axpy(0.5f, a, o);
  ops::scale(2.0f, a, o);
  Tensor m = uni(40, 3).reshape({4, 10}), r = zeros(4), idx = zeros(4, DType::i64);
  ops::reduce_sum(m, r);
  ops::reduce_max(m, r);
  ops::argmax(m, idx);
  (void)Tensor::uniform({9}, 0.0f, 1.0f, 4, dev());
  (void)Tensor::normal({9}, 0.0f, 1.0f, 5, dev());
  ops::activation_forward(Activation::gelu, 0.0f, a, o);
  Tensor dx = zeros(40);
  ops::activation_backward(Activation::gelu, 0.0f, a, o, b, dx);
  DropoutArgs da;
  da.p = 0.5f;
  ops::dropout_forward(da, a, o);
  ops::dropout_backward(da, b, dx);
  Tensor p = uni(40, 6), s1 = uni(40, 7, 0, 1), s2 = uni(40, 8, 0, 1), s3 = uni(40, 9, 0, 1);
  ops::sgd_step(p, b, s1, SgdArgs{});
  ops::adam_step(p, b, s1, s2, s3, AdamArgs{});
  ops::adadelta_step(p, b, s1, s2, AdadeltaArgs{});
  ops::rmsprop_step(p, b, s1, s2, s3, RmspropArgs{});
  Tensor blocks = zeros(3);
  ops::unscale_max_abs(0.5f, p, blocks, 16);
  Tensor c = Tensor::zeros({2, 2}, DType::f32, dev());
  ops::gemm(uni(4, 10).reshape({2, 2}), false, uni(4, 11).reshape({2, 2}), false, c, 1.0f, 0.0f);
}

}  // namespace

TEST_CASE("the ops of the tour run through Thrust on thrust-host; a GEMM does not") {
  tour();
  const Op toured[] = {Op::fill, Op::cast, Op::add, Op::sub, Op::mul, Op::axpy, Op::scale,
                       Op::reduce_sum, Op::reduce_max, Op::argmax, Op::fill_uniform,
                       Op::fill_normal, Op::activation_forward, Op::activation_backward,
                       Op::dropout_forward, Op::dropout_backward, Op::sgd_step, Op::adam_step,
                       Op::adadelta_step, Op::rmsprop_step, Op::unscale_max_abs};
  for (Op op : toured) {
    CAPTURE(op_name(op));
    CHECK(testing::thrust_covers(op));
    CHECK(testing::thrust_calls(op) > 0);
  }
  CHECK_FALSE(testing::thrust_covers(Op::gemm));
  CHECK(testing::thrust_calls(Op::gemm) == 0);
  int covered = 0;
  for (int i = 0; i < static_cast<int>(Op::count_); ++i) covered += testing::thrust_covers(static_cast<Op>(i));
  CHECK(covered == static_cast<int>(Op::count_) - 2);  // all but gemm and gemm_batched
}

TEST_CASE("argmax: first maximal column, the first NaN wins") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = on_dev({1, 3, 3, 2,  //
                     1, nan, 5, nan,  //
                     -inf, -inf, -inf, -inf,  //
                     0, -1, -2, 7},
                    {4, 4});
  Tensor idx = zeros(4, DType::i64);
  const std::uint64_t before = testing::thrust_calls(Op::argmax);
  ops::argmax(x, idx);
  CHECK(testing::thrust_calls(Op::argmax) == before + 1);
  CHECK(idx.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 1, 0, 3});
}

TEST_CASE("reduce_max lets NaN win; reduce_sum accumulates in double") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = on_dev({1, nan, 5, 2, 7, 7, nan, 0, 0}, {3, 3});
  Tensor mx = zeros(3);
  ops::reduce_max(x, mx);
  const std::vector<float> got = mx.to_vector<float>();
  CHECK(std::isnan(got[0]));
  CHECK(got[1] == 7.0f);
  CHECK(std::isnan(got[2]));
  // In float, 1e8 + 1 rounds back to 1e8 and the row would sum to 1.
  Tensor s = zeros(1);
  ops::reduce_sum(on_dev({1e8f, 1.0f, -1e8f, 1.0f}, {1, 4}), s);
  CHECK(s.to_vector<float>()[0] == 2.0f);
}

TEST_CASE("fill converts the value once, per dtype (bf16 rounds to nearest even)") {
  Tensor h = zeros(3, DType::bf16);
  ops::fill(h, 3.7);  // 3.7f is 0x406CCCCD: the dropped half 0xCCCD rounds the top half up
  const auto* bits = static_cast<const std::uint16_t*>(h.raw());
  CHECK(bits[0] == 0x406D);
  CHECK(bits[2] == 0x406D);
  CHECK(h.item(1) == 3.703125);
  Tensor i = zeros(2, DType::i32), u = zeros(2, DType::u8);
  ops::fill(i, -2.9);
  ops::fill(u, 3.7);
  CHECK(i.to_vector<std::int32_t>() == std::vector<std::int32_t>{-2, -2});
  CHECK(u.to_vector<std::uint8_t>() == std::vector<std::uint8_t>{3, 3});
}

TEST_CASE("fill_uniform: a split fill draws the same numbers as one fill") {
  const Tensor whole = Tensor::uniform({10}, -1.0f, 1.0f, 42, dev());
  const Tensor head = Tensor::uniform({4}, -1.0f, 1.0f, 42, dev(), 0);
  const Tensor tail = Tensor::uniform({6}, -1.0f, 1.0f, 42, dev(), 4);
  std::vector<float> joined = head.to_vector<float>();
  for (float v : tail.to_vector<float>()) joined.push_back(v);
  CHECK(whole.to_vector<float>() == joined);
  CHECK(whole.to_vector<float>() ==
        Tensor::uniform({10}, -1.0f, 1.0f, 42, host_device()).to_vector<float>());
}

TEST_CASE("dropout over a length that is not a multiple of an item's 32 elements") {
  DropoutArgs a;
  a.p = 0.25f;
  a.seed = 3;
  a.step = 2;
  const Tensor x = Tensor::uniform({45}, 1.0f, 2.0f, 9, host_device());
  Tensor y_host = Tensor::zeros({45}, DType::f32, host_device()), y = zeros(45);
  ops::dropout_forward(a, x, y_host);
  ops::dropout_forward(a, x.to(dev()), y);
  CHECK(y.to_vector<float>() == y_host.to_vector<float>());
}

// Pooling runs one element per item on Thrust (kFineItems: PoolForwardElem, PoolBackwardElem) and
// one row or plane per item on the host; each element sees the same operations in the same order,
// so the two agree bit for bit: overlapping windows (an input under several outputs), dilation,
// padding, ties, NaN and -inf, and both divisor rules.
TEST_CASE("pooling one element per item equals the host's rows and planes bit for bit") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    const char* name;
    ops::Pool2dParams p;
  };
  std::vector<Case> cases;
  auto add = [&](const char* name, PoolKind k, std::int64_t kh, std::int64_t kw, std::int64_t s,
                 std::int64_t pad, std::int64_t dil, bool include_pad) {
    ops::Pool2dParams p;
    p.kind = k;
    p.kh = kh;
    p.kw = kw;
    p.stride_h = p.stride_w = s;
    p.pad_h = p.pad_w = pad;
    p.dil_h = p.dil_w = dil;
    p.count_include_pad = include_pad;
    cases.push_back({name, p});
  };
  add("max 2x2/2", PoolKind::max, 2, 2, 2, 0, 1, true);
  add("max 3x3/1 pad 1 (overlapping)", PoolKind::max, 3, 3, 1, 1, 1, true);
  add("max 3x2/2 pad 1 dil 2", PoolKind::max, 3, 2, 2, 1, 2, true);
  add("avg 3x3/2 pad 1", PoolKind::avg, 3, 3, 2, 1, 1, true);
  add("avg 3x3/1 pad 1 exclude pad", PoolKind::avg, 3, 3, 1, 1, 1, false);
  const Shape xs{2, 3, 9, 11};
  std::vector<float> xv = Tensor::uniform(xs, -1.0f, 1.0f, 21, host_device()).to_vector<float>();
  for (std::size_t i = 0; i < xv.size(); i += 7) xv[i] = xv[i + 1];  // ties
  xv[5] = nan;
  xv[40] = -inf;
  xv[41] = -inf;
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const Shape ys = ops::pool2d_output_shape(xs, c.p);
    auto run = [&](Device& d, std::vector<float>& y, std::vector<std::int32_t>& idx,
                   std::vector<float>& dx) {
      Tensor x = Tensor::from_vector(xv, xs, host_device()).to(d);
      Tensor yt = Tensor::zeros(ys, DType::f32, d), at = Tensor::zeros(ys, DType::i32, d);
      const bool max = c.p.kind == PoolKind::max;
      ops::pool2d_forward(x, yt, max ? &at : nullptr, c.p);
      Tensor dy = Tensor::uniform(ys, -1.0f, 1.0f, 22, host_device()).to(d);
      Tensor dxt = Tensor::full(xs, 9.0, DType::f32, d);  // every element must be written
      ops::pool2d_backward(dy, max ? &at : nullptr, dxt, c.p);
      y = yt.to(host_device()).to_vector<float>();
      idx = at.to(host_device()).to_vector<std::int32_t>();
      dx = dxt.to(host_device()).to_vector<float>();
    };
    std::vector<float> yh, yt, dxh, dxt;
    std::vector<std::int32_t> ih, it;
    const std::uint64_t before = testing::thrust_calls(Op::pool2d_backward);
    run(host_device(), yh, ih, dxh);
    run(dev(), yt, it, dxt);
    CHECK(testing::thrust_calls(Op::pool2d_backward) == before + 1);
    REQUIRE(yh.size() == yt.size());
    for (std::size_t i = 0; i < yh.size(); ++i) {
      CAPTURE(i);
      CHECK(((yh[i] == yt[i]) || (std::isnan(yh[i]) && std::isnan(yt[i]))));
    }
    CHECK(ih == it);
    REQUIRE(dxh.size() == dxt.size());
    for (std::size_t i = 0; i < dxh.size(); ++i) {
      CAPTURE(i);
      CHECK(std::memcmp(&dxh[i], &dxt[i], sizeof(float)) == 0);
    }
  }
}

// Batch norm over planes shorter than kSumBlock runs in blocks of 16 channels on the host
// (BatchNormStatsBlock, BatchNormApplyImage, BatchNormBackwardBlock) and per channel on Thrust (the
// shared items the GPU keeps); each channel's sums see the same terms in the same order, so the two
// agree bit for bit. Channel counts that leave a partial block, planes of 1 to 16 elements;
// training with running statistics and eval; dx, dgamma and dbeta (accumulated onto a nonzero
// start). (From 32 elements on both run the per-channel items, whose sums the host vectorises in
// its own order: there the two agree within rounding, as the parity table checks.) Thrust's affine
// map runs an item per element (BatchNormApplyElement), the host's one per image.
TEST_CASE(
    "batch norm over short planes: the host's channel blocks equal the per-channel items bit for "
    "bit") {
  struct Case {
    std::int64_t n, c, h, w;
  };
  for (const Case k : {Case{5, 37, 1, 1}, Case{3, 16, 2, 2}, Case{4, 70, 3, 1}, Case{2, 9, 4, 4},
                       Case{3, 20, 3, 5}}) {
    for (bool training : {true, false}) {
      CAPTURE(k.c);
      CAPTURE(k.h * k.w);
      CAPTURE(training);
      const Shape xs{k.n, k.c, k.h, k.w};
      const auto vec = host_uniform;
      const std::vector<float> x = vec(xs, 31, -2.0f, 3.0f), dy = vec(xs, 32, -1.0f, 1.0f);
      const std::vector<float> g = vec({k.c}, 33, 0.5f, 1.5f), b = vec({k.c}, 34, -0.5f, 0.5f);
      const std::vector<float> rm = vec({k.c}, 35, -0.1f, 0.1f), rv = vec({k.c}, 36, 0.5f, 2.0f);
      const std::vector<float> dg0 = vec({k.c}, 37, -1.0f, 1.0f), db0 = vec({k.c}, 38, -1.0f, 1.0f);
      std::vector<std::vector<float>> out[2];
      int side = 0;
      for (Device* d : {&host_device(), &dev()}) {
        auto t = [&](const std::vector<float>& v, const Shape& s) {
          return Tensor::from_vector(v, s, host_device()).to(*d);
        };
        Tensor tx = t(x, xs), tdy = t(dy, xs), tg = t(g, {k.c}), tb = t(b, {k.c});
        Tensor trm = t(rm, {k.c}), trv = t(rv, {k.c}), tdg = t(dg0, {k.c}), tdb = t(db0, {k.c});
        Tensor y = Tensor::zeros(xs, DType::f32, *d), dx = Tensor::zeros(xs, DType::f32, *d);
        Tensor sm = Tensor::zeros({k.c}, DType::f32, *d), si = Tensor::zeros({k.c}, DType::f32, *d);
        const std::uint64_t before = testing::thrust_items(Op::batch_norm_forward);
        ops::batch_norm_forward(tx, &tg, &tb, &trm, &trv, y, sm, si, 1e-5f, 0.1f, training);
        if (d ==
            &dev())  // statistics per channel, the affine map per element (BatchNormApplyElement)
          CHECK(testing::thrust_items(Op::batch_norm_forward) - before ==
                static_cast<std::uint64_t>(k.c + k.n * k.c * k.h * k.w));
        ops::batch_norm_backward(tx, tdy, &tg, sm, si, &dx, &tdg, &tdb, training);
        for (const Tensor* r : {&y, &sm, &si, &trm, &trv, &dx, &tdg, &tdb})
          out[side].push_back(r->to(host_device()).to_vector<float>());
        ++side;
      }
      const std::string names[] = {"y",           "save_mean", "save_invstd", "running_mean",
                                   "running_var", "dx",        "dgamma",      "dbeta"};
      for (std::size_t i = 0; i < out[0].size(); ++i) {
        CAPTURE(names[i]);
        CHECK(std::memcmp(out[0][i].data(), out[1][i].data(), out[0][i].size() * sizeof(float)) ==
              0);
      }
    }
  }
}

// On the GPU's executor a whole-tensor max runs in stages of rows (ops::max_all): 3 M elements are
// 3072 rows and a tail, then 3 rows and a tail, then one: five reduce_max launches, not one item
// reading all of them (the GradScaler's inf check; before, one GPU thread per gradient).
TEST_CASE("max_all on thrust-host: staged launches, the host's value") {
  const std::int64_t n = 3 * 1024 * 1024 + 7;
  const Tensor host_x = Tensor::uniform({n}, -1.0f, 1.0f, 41, host_device());
  Tensor hout = Tensor::empty({1}, DType::f32, host_device());
  ops::max_all(host_x, hout);
  const Tensor x = host_x.to(dev());
  Tensor out = Tensor::empty({1}, DType::f32, dev());
  const std::uint64_t before = testing::thrust_calls(Op::reduce_max);
  ops::max_all(x, out);
  CHECK(testing::thrust_calls(Op::reduce_max) - before == 5);
  CHECK(out.to(host_device()).item() == hout.item());
}

// bias_add runs one element per item on Thrust (kFineItems: BiasActElement) and one plane or row
// per item on the host. Each element must find its own channel (NCHW: (i / inner) % C; [N, F]:
// i % F) and be written once: checked against y + b and the activation computed here, exactly,
// for NCHW planes of 63 and a linear layer's [13, 37] (NaN and -0 among the inputs).
TEST_CASE("bias_add one element per item: each element's channel, each element once") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct Case {
    Shape s;
    int axis;
    std::int64_t channels, inner;
  };
  for (const Case& k : {Case{{3, 5, 7, 9}, 1, 5, 63}, Case{{13, 37}, -1, 37, 1}}) {
    std::vector<float> y0 = Tensor::uniform(k.s, -2.0f, 2.0f, 51, host_device()).to_vector<float>();
    y0[3] = nan;
    y0[4] = -0.0f;
    const std::vector<float> b =
        Tensor::uniform({k.channels}, -1.0f, 1.0f, 52, host_device()).to_vector<float>();
    for (Activation f : {Activation::identity, Activation::relu, Activation::leaky_relu}) {
      CAPTURE(k.channels);
      CAPTURE(static_cast<int>(f));
      const float alpha = 0.125f;
      Tensor y = on_dev(y0, k.s);
      const std::uint64_t before = testing::thrust_items(Op::bias_add);
      ops::bias_add(on_dev(b, {k.channels}), y, k.axis, f, alpha);
      CHECK(testing::thrust_items(Op::bias_add) - before == y0.size());  // one item per element
      const std::vector<float> got = y.to(host_device()).to_vector<float>();
      REQUIRE(got.size() == y0.size());
      int wrong = 0;
      for (std::size_t i = 0; i < y0.size(); ++i) {
        const float v = y0[i] + b[(static_cast<std::int64_t>(i) / k.inner) % k.channels];
        const float want = f == Activation::identity ? v
                           : f == Activation::relu   ? (v <= 0.0f ? 0.0f : v)
                                                     : (v > 0.0f ? v : v * alpha);
        wrong += !(std::memcmp(&want, &got[i], sizeof(float)) == 0 ||
                   (std::isnan(want) && std::isnan(got[i])));
      }
      CHECK(wrong == 0);
    }
  }
}

// Layer norm's dgamma and dbeta run in two stages on Thrust (LayerNormParamGradPartial over blocks
// of 64 rows, then LayerNormParamGradFinish per column, adding the blocks in order); the host sums
// every row of a column in order. Checked here: the staged order computed independently (the same
// terms in double, grouped by 64 rows) gives the same bits; the host's all-rows order and a
// reference in double agree within float rounding; the gradients are added to what dgamma and
// dbeta held; dx (coefficients per row, then one element per item) has the host's row items'
// bits; the launches are those stages (items counted).
// Row counts under one block, at a block boundary and with a partial last block; 1, 40 and 257
// columns.
TEST_CASE("layer_norm_backward's parameter gradients in stages on thrust-host") {
  struct Case {
    std::int64_t rows, cols;
  };
  for (const Case k : {Case{5, 40}, Case{64, 40}, Case{300, 40}, Case{130, 257}, Case{200, 1}}) {
    CAPTURE(k.rows);
    CAPTURE(k.cols);
    const Shape xs{k.rows, k.cols};
    const auto vec = host_uniform;
    const std::vector<float> x = vec(xs, 61, -2.0f, 3.0f), dy = vec(xs, 62, -1.0f, 1.0f);
    const std::vector<float> g = vec({k.cols}, 63, 0.5f, 1.5f), b = vec({k.cols}, 64, -0.5f, 0.5f);
    const std::vector<float> dg0 = vec({k.cols}, 65, -1.0f, 1.0f),
                             db0 = vec({k.cols}, 66, -1.0f, 1.0f);
    std::vector<float> mean, rstd, dx, dg, db, host_dx;
    for (Device* d : {&dev(), &host_device()}) {
      auto t = [&](const std::vector<float>& v, const Shape& s) {
        return Tensor::from_vector(v, s, host_device()).to(*d);
      };
      Tensor tx = t(x, xs), tg = t(g, {k.cols}), tb = t(b, {k.cols});
      Tensor y = Tensor::zeros(xs, DType::f32, *d), tdx = Tensor::zeros(xs, DType::f32, *d);
      Tensor m = Tensor::zeros({k.rows}, DType::f32, *d),
             rs = Tensor::zeros({k.rows}, DType::f32, *d);
      Tensor tdg = t(dg0, {k.cols}), tdb = t(db0, {k.cols});
      ops::layer_norm_forward(tx, k.cols, &tg, &tb, y, m, rs, 1e-5f);
      if (d == &host_device()) {  // the host's row items on thrust-host's statistics
        Tensor tm = t(mean, {k.rows}), trs = t(rstd, {k.rows});
        ops::layer_norm_backward(tx, t(dy, xs), k.cols, &tg, tm, trs, &tdx, nullptr, nullptr);
        host_dx = tdx.to_vector<float>();
        break;
      }
      const std::uint64_t before = testing::thrust_items(Op::layer_norm_backward);
      ops::layer_norm_backward(tx, t(dy, xs), k.cols, &tg, m, rs, &tdx, &tdg, &tdb);
      // dx: coefficients per row, then an item per element; dgamma / dbeta: an item per (block of
      // 64 rows, column), then one per column.
      const std::int64_t blocks = (k.rows + 63) / 64;
      CHECK(testing::thrust_items(Op::layer_norm_backward) - before ==
            static_cast<std::uint64_t>(k.rows + k.rows * k.cols + blocks * k.cols + k.cols));
      mean = m.to(host_device()).to_vector<float>();
      rstd = rs.to(host_device()).to_vector<float>();
      dx = tdx.to(host_device()).to_vector<float>();
      dg = tdg.to(host_device()).to_vector<float>();
      db = tdb.to(host_device()).to_vector<float>();
    }
    CHECK(std::memcmp(dx.data(), host_dx.data(), dx.size() * sizeof(float)) == 0);
    int staged_wrong = 0, rounding_wrong = 0;
    for (std::int64_t j = 0; j < k.cols; ++j) {
      double sg = 0, sb = 0, all_g = 0, all_b = 0, ref_g = 0, ref_b = 0;
      for (std::int64_t r0 = 0; r0 < k.rows; r0 += 64) {
        double pg = 0, pb = 0;
        for (std::int64_t r = r0; r < std::min(k.rows, r0 + 64); ++r) {
          const float gv = dy[r * k.cols + j];
          const double term = static_cast<double>(gv) * ((x[r * k.cols + j] - mean[r]) * rstd[r]);
          pg += term;
          pb += gv;
          all_g += term;
          all_b += gv;
          ref_g += static_cast<double>(gv) * ((x[r * k.cols + j] - static_cast<double>(mean[r])) *
                                              static_cast<double>(rstd[r]));
          ref_b += gv;
        }
        sg += pg;
        sb += pb;
      }
      const float want_g = dg0[j] + static_cast<float>(sg),
                  want_b = db0[j] + static_cast<float>(sb);
      staged_wrong += std::memcmp(&want_g, &dg[j], sizeof(float)) != 0;
      staged_wrong += std::memcmp(&want_b, &db[j], sizeof(float)) != 0;
      // The host's order and the double reference: within a float ulp of the sum and of the total.
      auto near = [](double want, float got, double scale) {
        return std::fabs(want - got) <= 1.2e-7 * (std::fabs(want) + scale) + 1e-30;
      };
      rounding_wrong += !near(dg0[j] + all_g, dg[j], std::fabs(dg0[j]) + std::fabs(all_g));
      rounding_wrong += !near(db0[j] + all_b, db[j], std::fabs(db0[j]) + std::fabs(all_b));
      rounding_wrong += !(std::fabs(dg0[j] + ref_g - dg[j]) <= 1e-5 * (1 + std::fabs(ref_g)));
      rounding_wrong += !(std::fabs(db0[j] + ref_b - db[j]) <= 1e-5 * (1 + std::fabs(ref_b)));
    }
    CHECK(staged_wrong == 0);
    CHECK(rounding_wrong == 0);
  }
}

// Attention on the GPU's executor runs in the GEMM form (attention.hpp): per head, batched GEMMs
// over the batch entries, and the passes over the [n, h, t, t] scores as items; on the host, its
// own per-head sgemm form. Counted here: 2 GEMMs per (entry, head) forward and 5 backward, and the
// items (softmax rows forward; probabilities, delta rows and dS backward). Values: the host's
// within f32 rounding of the sums' order, for several entries and heads (the heads' strides), and
// a NaN query's row NaN in both.
TEST_CASE("attention on thrust-host: the GEMM form, per head and batch entry") {
  const std::int64_t n = 3, t = 7, h = 3, dh = 8;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  const Shape qs{n, t, 3, h, dh}, os{n, t, h, dh}, ls{n, h, t};
  std::vector<float> qkv = Tensor::uniform(qs, -2.0f, 2.0f, 71, host_device()).to_vector<float>();
  qkv[((1 * t + 4) * 3 + 0) * h * dh + 2 * dh + 5] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> dout =
      Tensor::uniform(os, -1.0f, 1.0f, 72, host_device()).to_vector<float>();
  std::vector<float> got[2][3];
  for (int side = 0; side < 2; ++side) {
    Device& d = side == 0 ? host_device() : dev();
    Tensor q = Tensor::from_vector(qkv, qs, host_device()).to(d);
    Tensor out = Tensor::zeros(os, DType::f32, d), lse = Tensor::zeros(ls, DType::f32, d);
    Tensor dq = Tensor::zeros(qs, DType::f32, d);
    const std::uint64_t f_items = testing::thrust_items(Op::attention_forward);
    const std::uint64_t f_gemms = testing::thrust_gemms(Op::attention_forward);
    ops::attention_forward(q, out, lse, scale);
    const std::uint64_t b_items = testing::thrust_items(Op::attention_backward);
    const std::uint64_t b_gemms = testing::thrust_gemms(Op::attention_backward);
    ops::attention_backward(q, out, lse, Tensor::from_vector(dout, os, host_device()).to(d), dq,
                            scale);
    if (side == 1) {
      CHECK(testing::thrust_gemms(Op::attention_forward) - f_gemms == 2 * n * h);
      CHECK(testing::thrust_items(Op::attention_forward) - f_items == n * h * t);
      CHECK(testing::thrust_gemms(Op::attention_backward) - b_gemms == 5 * n * h);
      CHECK(testing::thrust_items(Op::attention_backward) - b_items ==
            2 * n * h * t * t + n * h * t);
    }
    got[side][0] = out.to(host_device()).to_vector<float>();
    got[side][1] = lse.to(host_device()).to_vector<float>();
    got[side][2] = dq.to(host_device()).to_vector<float>();
  }
  const char* names[] = {"out", "lse", "dqkv"};
  for (int k = 0; k < 3; ++k) {
    CAPTURE(names[k]);
    REQUIRE(got[0][k].size() == got[1][k].size());
    int nans = 0, wrong = 0;
    for (std::size_t i = 0; i < got[0][k].size(); ++i) {
      const float a = got[0][k][i], b = got[1][k][i];
      if (std::isnan(a) || std::isnan(b)) {
        nans += std::isnan(a) && std::isnan(b);
        wrong += std::isnan(a) != std::isnan(b);
      } else {
        wrong += !(std::fabs(a - b) <= 1e-5f * (1.0f + std::fabs(a)));
      }
    }
    CHECK(wrong == 0);
    CHECK(nans > 0);  // the NaN query's row (and, backward, what it reaches)
  }
}

// Layer norm's forward on Thrust: the statistics per row, then the affine map one element per item
// (LayerNormStatsRow, LayerNormApplyElement). Each output checked exactly against (v - mean) * rstd
// * gamma + beta computed here from the statistics the device wrote (v = x + residual with a
// residual, whose sum must be written too), and the launches' items counted.
TEST_CASE("layer_norm_forward on thrust-host: statistics per row, the map per element") {
  const std::int64_t rows = 37, cols = 45;
  const Shape xs{rows, cols};
  const auto vec = host_uniform;
  const std::vector<float> x = vec(xs, 81, -2.0f, 3.0f), res = vec(xs, 82, -1.0f, 1.0f);
  const std::vector<float> g = vec({cols}, 83, 0.5f, 1.5f), b = vec({cols}, 84, -0.5f, 0.5f);
  for (bool with_residual : {false, true}) {
    CAPTURE(with_residual);
    Tensor tg = on_dev(g, {cols}), tb = on_dev(b, {cols}), tres = on_dev(res, xs);
    Tensor y = Tensor::zeros(xs, DType::f32, dev()), sum = Tensor::zeros(xs, DType::f32, dev());
    Tensor m = Tensor::zeros({rows}, DType::f32, dev()),
           rs = Tensor::zeros({rows}, DType::f32, dev());
    const std::uint64_t before = testing::thrust_items(Op::layer_norm_forward);
    ops::layer_norm_forward(on_dev(x, xs), cols, &tg, &tb, y, m, rs, 1e-5f,
                            with_residual ? &tres : nullptr, with_residual ? &sum : nullptr);
    CHECK(testing::thrust_items(Op::layer_norm_forward) - before ==
          static_cast<std::uint64_t>(rows + rows * cols));
    const std::vector<float> yv = y.to(host_device()).to_vector<float>();
    const std::vector<float> mv = m.to(host_device()).to_vector<float>();
    const std::vector<float> rv = rs.to(host_device()).to_vector<float>();
    const std::vector<float> sv = sum.to(host_device()).to_vector<float>();
    int wrong = 0, sum_wrong = 0, stats_wrong = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      double s1 = 0;
      for (std::int64_t j = 0; j < cols; ++j) {
        const std::size_t i = static_cast<std::size_t>(r * cols + j);
        const float v = with_residual ? x[i] + res[i] : x[i];
        if (with_residual) sum_wrong += std::memcmp(&v, &sv[i], sizeof(float)) != 0;
        const float want = (v - mv[r]) * rv[r] * g[j] + b[j];
        wrong += std::memcmp(&want, &yv[i], sizeof(float)) != 0;
        s1 += v;
      }
      stats_wrong += !(std::fabs(s1 / cols - mv[r]) <= 1e-6 * (1 + std::fabs(s1 / cols)));
    }
    CHECK(wrong == 0);
    CHECK(sum_wrong == 0);
    CHECK(stats_wrong == 0);
  }
}

// layer_norm_backward's dx with dx_add (a residual's gradient passed through): on Thrust the
// coefficients per row, then dx_add + the element's gradient one element per item; on the host the
// row item. The same statistics on both sides, so the same bits.
TEST_CASE("layer_norm_backward with dx_add: Thrust's elements equal the host's rows bit for bit") {
  const std::int64_t rows = 29, cols = 33;
  const Shape xs{rows, cols};
  const auto vec = host_uniform;
  const std::vector<float> x = vec(xs, 91, -2.0f, 3.0f), dy = vec(xs, 92, -1.0f, 1.0f);
  const std::vector<float> add = vec(xs, 93, -1.0f, 1.0f), g = vec({cols}, 94, 0.5f, 1.5f);
  const std::vector<float> mean = vec({rows}, 95, -0.5f, 0.5f), rstd = vec({rows}, 96, 0.5f, 2.0f);
  std::vector<float> out[2];
  for (int side = 0; side < 2; ++side) {
    Device& d = side == 0 ? host_device() : dev();
    auto t = [&](const std::vector<float>& v, const Shape& s) {
      return Tensor::from_vector(v, s, host_device()).to(d);
    };
    Tensor tg = t(g, {cols}), tadd = t(add, xs), dx = Tensor::zeros(xs, DType::f32, d);
    ops::layer_norm_backward(t(x, xs), t(dy, xs), cols, &tg, t(mean, {rows}), t(rstd, {rows}), &dx,
                             nullptr, nullptr, &tadd);
    out[side] = dx.to(host_device()).to_vector<float>();
  }
  CHECK(std::memcmp(out[0].data(), out[1].data(), out[0].size() * sizeof(float)) == 0);
}

// GPU review 2, H2: the GradScaler's unscale-and-check over ResNet-50's 161 gradients. Before, each
// gradient cost a scale, a staged max, a negated copy and another staged max (5-13 launches, about
// 1,000 a step); now one unscale_max_abs launch per gradient, then one staged max over all their
// block maxima (3 launches for 25.6 M parameters) and one float read back. PyTorch: one
// multi-tensor launch per device and dtype. The values: every gradient times 1/scale exactly (a
// power of two), and an inf or a NaN anywhere found, as on the host device.
TEST_CASE("GradScaler::unscale on ResNet-50's gradients: a launch per gradient and 3, host's values") {
  auto shapes_of = models::resnet50(host_device());  // the parameter shapes only
  std::vector<ParameterPtr> params, host_params;
  std::uint64_t seed = 100;
  for (const ParameterPtr& w : shapes_of->parameters()) {
    const Shape& s = w->value.shape();
    host_params.push_back(make_parameter(Tensor::zeros(s, DType::f32, host_device())));
    host_params.back()->grad = Tensor::uniform(s, -8.0f, 8.0f, seed++, host_device());
    params.push_back(make_parameter(Tensor::zeros(s, DType::f32, dev())));
    params.back()->grad = host_params.back()->grad.to(dev());
  }
  REQUIRE(params.size() == 161);
  optim::SGDOptions so;
  so.lr = 0.1;
  optim::SGD sgd(params, so), host_sgd(host_params, so);
  optim::GradScalerOptions o;
  o.init_scale = 8.0;

  optim::GradScaler scaler(o), host_scaler(o);
  const std::uint64_t before = testing::thrust_launches();
  const std::uint64_t unscale_calls = testing::thrust_calls(Op::unscale_max_abs);
  scaler.unscale(sgd);
  const std::uint64_t launches = testing::thrust_launches() - before;
  MESSAGE("GradScaler::unscale, ResNet-50 (161 gradients): ", launches, " launches");
  CHECK(testing::thrust_calls(Op::unscale_max_abs) - unscale_calls == 161);
  CHECK(launches <= 161 + 4);
  host_scaler.unscale(host_sgd);
  CHECK_FALSE(scaler.found_inf());
  CHECK_FALSE(host_scaler.found_inf());
  for (std::size_t i = 0; i < params.size(); i += 40) {
    CAPTURE(i);
    const auto got = params[i]->grad.to_vector<float>();
    const auto want = host_params[i]->grad.to_vector<float>();
    CHECK(got == want);
    const auto orig = Tensor::uniform(params[i]->grad.shape(), -8.0f, 8.0f, 100 + i, host_device())
                          .to_vector<float>();
    bool exact = true;
    for (std::size_t j = 0; j < got.size(); ++j) exact = exact && got[j] == orig[j] * 0.125f;
    CHECK(exact);
  }
  scaler.update();
  host_scaler.update();

  // An inf in the last element of the last gradient, then a NaN in the middle of the largest one.
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const float bad : {inf, nan}) {
    CAPTURE(bad);
    ParameterPtr& p = bad == inf ? params.back() : params[params.size() / 2];
    const Tensor clean = p->grad;
    std::vector<float> g = clean.to_vector<float>();
    g[bad == inf ? g.size() - 1 : g.size() / 2] = bad;
    p->grad = Tensor::from_vector(g, clean.shape(), host_device()).to(dev());
    scaler.unscale(sgd);
    CHECK(scaler.found_inf());
    scaler.update();
    p->grad = clean;  // only this case's value is bad
  }
  scaler.unscale(sgd);
  CHECK_FALSE(scaler.found_inf());
}

TEST_CASE("unscale_max_abs: per-block max |x| after scaling, NaN wins, a short last block") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = on_dev({1, -6, 2, 0.5f, -inf, 3, nan, 4, -8, 1}, {10});
  Tensor out = zeros(4);
  ops::unscale_max_abs(0.5f, x, out, 3);  // blocks [0,3) [3,6) [6,9) [9,10)
  const auto m = out.to_vector<float>();
  CHECK(m[0] == 3.0f);
  CHECK(m[1] == inf);
  CHECK(std::isnan(m[2]));  // NaN before a larger value still wins
  CHECK(m[3] == 0.5f);
  const auto v = x.to_vector<float>();
  CHECK(v[1] == -3.0f);
  CHECK(v[8] == -4.0f);
  CHECK(std::isnan(v[6]));
  // Bad input: a block of 0, an out of the wrong size, a non-f32 x; nothing scaled by them.
  Tensor y = on_dev({2, 4}, {2});
  Tensor one = zeros(1), two = zeros(2);
  CHECK_THROWS_WITH(ops::unscale_max_abs(0.5f, y, one, 0), doctest::Contains("block must be >= 1"));
  CHECK_THROWS_WITH(ops::unscale_max_abs(0.5f, y, one, 1),
                    doctest::Contains("expected ceil(2 / 1) = 2"));
  Tensor yi = zeros(2, DType::i32);
  CHECK_THROWS_WITH(ops::unscale_max_abs(0.5f, yi, two, 1), doctest::Contains("'x' must be f32"));
  CHECK(y.to_vector<float>() == std::vector<float>{2, 4});
}
