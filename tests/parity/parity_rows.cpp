// The rows of the parity table: for every op of cohort/backend/op_list.hpp, cases that run it through
// its front end on the device under test and state the expected values with the independent
// reference (reference/). Grouped like the op list; each row's tolerance is its own, with the
// reason where it is not 0 (exact) or 1e-6 (a few f32 roundings of a short computation).
#include <cmath>

#include "cohort/backend/dispatch.hpp"
#include "cohort/core/autocast.hpp"
#include "cohort/core/layer_ops.hpp"
#include "cohort/core/ops.hpp"
#include "cohort/core/optim_ops.hpp"
#include "parity_case.hpp"

namespace ref = parity_ref;
using namespace cohort;

namespace parity {
namespace {

ref::Type ref_type(DType t) {
  // Indexed by DType's enumerators, in their order (cohort/core/dtype.hpp).
  static_assert(static_cast<int>(DType::f16) == 6, "DType's order changed: update the table");
  const ref::Type by_dtype[] = {ref::Type::f32, ref::Type::f64, ref::Type::bf16, ref::Type::i32,
                                ref::Type::i64, ref::Type::u8,  ref::Type::f16};
  return by_dtype[static_cast<int>(t)];
}

ref::Act ref_act(Activation f) { return static_cast<ref::Act>(static_cast<int>(f)); }
static_assert(static_cast<int>(Activation::tanh) == static_cast<int>(ref::Act::tanh),
              "the reference lists the activations in cohort's order");

ref::Conv ref_conv(const Shape& x, const Shape& w, const ops::Conv2dParams& p) {
  return ref::Conv{x[0],       x[1],       x[2],    x[3],    w[0],    w[2],    w[3],
                   p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.dil_h, p.dil_w, p.groups};
}

ref::Pool ref_pool(const Shape& x, const ops::Pool2dParams& p) {
  const bool max = p.kind == PoolKind::max;
  return ref::Pool{max,        x[0],       x[1],    x[2],    x[3],    p.kh,    p.kw,
                   p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.dil_h, p.dil_w, p.count_include_pad};
}

std::vector<Vec> one(Vec v) { return {std::move(v)}; }

}  // namespace

std::vector<Row> rows() {
  std::vector<Row> r;
  auto add = [&](Op op, std::string name, double tol, std::function<void(Case&)> f) {
    r.push_back(Row{op, std::move(name), tol, std::move(f), {}});
  };

  // ---- tensor ops ----
  for (DType t :
       {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::i64, DType::u8})
    add(Op::fill, std::string("fill ") + dtype_name(t), 0, [t](Case& c) {
      Tensor x = c.out({37}, t);
      ops::fill(x, 3.7);
      c.check({x}, [t] { return one(ref::fill(ref_type(t), 37, 3.7)); });
    });
  // Cast: every pair of the floating-point dtypes, f32 -> s -> t, from values in [-1e-3, 1e-3) so
  // that some land among f16's subnormals.
  for (DType s : {DType::f32, DType::f64, DType::bf16, DType::f16})
    for (DType t : {DType::f32, DType::f64, DType::bf16, DType::f16})
      add(Op::cast, std::string("cast ") + dtype_name(s) + " -> " + dtype_name(t), 0,
          [s, t](Case& c) {
            HostTensor f = uni({1001}, 7);
            for (double& v : f.v) v = static_cast<float>(static_cast<float>(v) * 1e-3f);
            Tensor x = c.out({1001}, s), y = c.out({1001}, t);
            ops::cast(c.in(f), x);
            ops::cast(x, y);
            c.check({x, y}, [f, s, t] {
              const Vec xs = ref::cast(f.v, ref::Type::f32, ref_type(s));
              return std::vector<Vec>{xs, ref::cast(xs, ref_type(s), ref_type(t))};
            });
          });
  add(Op::add, "add [1000]", 0, [](Case& c) {
    const HostTensor a = uni({1000}, 1), b = uni({1000}, 2);
    Tensor o = c.out({1000});
    ops::add(c.in(a), c.in(b), o);
    c.check({o}, [=] { return one(ref::add(a.v, b.v)); });
  });
  add(Op::sub, "sub [999]", 0, [](Case& c) {
    const HostTensor a = uni({999}, 1), b = uni({999}, 2);
    Tensor o = c.out({999});
    ops::sub(c.in(a), c.in(b), o);
    c.check({o}, [=] { return one(ref::sub(a.v, b.v)); });
  });
  add(Op::mul, "mul in place", 0, [](Case& c) {
    const HostTensor a = uni({513}, 3), b = uni({513}, 4);
    Tensor o = c.out(a);
    ops::mul(o, c.in(b), o);
    c.check({o}, [=] { return one(ref::mul(a.v, b.v)); });
  });
  add(Op::axpy, "axpy", 0, [](Case& c) {
    const HostTensor x = uni({300}, 6), y = uni({300}, 5);
    Tensor o = c.out(y);
    ops::axpy(-0.25f, c.in(x), o);
    c.check({o}, [=] { return one(ref::axpy(-0.25, x.v, y.v)); });
  });
  add(Op::scale, "scale", 0, [](Case& c) {
    const HostTensor x = uni({300}, 7);
    Tensor o = c.out({300});
    ops::scale(1.5f, c.in(x), o);
    c.check({o}, [=] { return one(ref::scale(1.5, x.v)); });
  });
  // Values beyond both bounds, exactly on them, and a NaN (it passes through, as torch.clamp).
  add(Op::clamp, "clamp [-0.5, 0.25] with NaN, in place", 0, [](Case& c) {
    HostTensor x = uni({300}, 8);
    x.v[7] = -0.5;
    x.v[8] = 0.25;
    x.v[9] = std::nan("");
    Tensor o = c.out(x);
    ops::clamp(o, -0.5f, 0.25f, o);
    c.check({o}, [=] { return one(ref::clamp(x.v, -0.5, 0.25)); });
  });
  add(Op::reduce_sum, "reduce_sum [7, 333]", 1e-6, [](Case& c) {
    const HostTensor x = uni({7, 333}, 8);
    Tensor o = c.out({7});
    ops::reduce_sum(c.in(x), o);
    c.check({o}, [=] { return one(ref::sum_last(x.v, 7, 333)); });
  });
  add(Op::reduce_sum_sq, "reduce_sum_sq [5, 1000]", 1e-6, [](Case& c) {
    const HostTensor x = uni({5, 1000}, 21);
    Tensor o = c.out({5});
    ops::reduce_sum_sq(c.in(x), o);
    c.check({o}, [=] { return one(ref::sum_sq_last(x.v, 5, 1000)); });
  });
  // Ties and NaN: values on a grid of 1/4 (many equal maxima: the first wins) and a NaN in row 3
  // (it wins), as torch.max and torch.argmax.
  HostTensor ties = uni({9, 17}, 9);
  for (double& v : ties.v) v = std::round(v * 4) / 4;
  ties.v[3 * 17 + 5] = NAN;
  for (const HostTensor& x : {uni({9, 17}, 9), ties}) {
    const std::string what = std::isnan(x.v[3 * 17 + 5]) ? " ties and NaN" : "";
    add(Op::reduce_max, "reduce_max [9, 17]" + what, 0, [x](Case& c) {
      Tensor o = c.out({9});
      ops::reduce_max(c.in(x), o);
      c.check({o}, [=] { return one(ref::max_last(x.v, 9, 17)); });
    });
    add(Op::argmax, "argmax [9, 17]" + what, 0, [x](Case& c) {
      Tensor o = c.out({9}, DType::i64);
      ops::argmax(c.in(x), o);
      c.check({o}, [=] { return one(ref::argmax_last(x.v, 9, 17)); });
    });
  }
  // GEMM: sums of k products in f32, whatever the blocking: 1e-5 relative to 1 + |c|.
  struct GemmCase {
    std::int64_t m, n, k;
    bool ta, tb;
    float alpha, beta;
  };
  std::vector<GemmCase> gemms;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) gemms.push_back({5, 7, 3, ta == 1, tb == 1, 0.75f, 0.5f});
  gemms.push_back({33, 65, 80, false, true, 1.0f, 0.0f});  // past a register tile
  for (const GemmCase& g : gemms)
    add(Op::gemm,
        "gemm " + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k) +
            " ta=" + std::to_string(g.ta) + " tb=" + std::to_string(g.tb) +
            (g.beta != 0 ? " beta .5" : ""),
        1e-5, [g](Case& c) {
          const HostTensor a = uni(g.ta ? Shape{g.k, g.m} : Shape{g.m, g.k}, 11);
          const HostTensor b = uni(g.tb ? Shape{g.n, g.k} : Shape{g.k, g.n}, 12);
          const HostTensor c0 = uni({g.m, g.n}, 13);
          Tensor o = c.out(c0);
          ops::gemm(c.in(a), g.ta, c.in(b), g.tb, o, g.alpha, g.beta);
          c.check({o}, [=] {
            return one(ref::gemm(g.ta, g.tb, g.m, g.n, g.k, g.alpha, a.v, b.v, g.beta, c0.v));
          });
        });
  // The same GEMMs under autocast bf16 and f16 (docs/MIXED_PRECISION.md): a device that computes
  // in bf16 rounds a and b to it (2^-9 each, 2^-8 per product); k such errors add like a random
  // walk, so about 2^-8 sqrt(k) / 3 of (1 + |want|) here. The tolerance per (op, bf16) is
  // 2^-8 sqrt(k) + 1e-5, three times that; per (op, f16), with its 11-bit significand, 2^-10 sqrt(k)
  // + 1e-5. A device without the type runs f32 (the host for f16) and passes at 1e-5.
  for (const DType t : {DType::bf16, DType::f16})
  for (const GemmCase& g : gemms)
    add(Op::gemm,
        "gemm " + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k) +
            " ta=" + std::to_string(g.ta) + " tb=" + std::to_string(g.tb) +
            (g.beta != 0 ? " beta .5" : "") + " autocast " + dtype_name(t),
        std::ldexp(std::sqrt(double(g.k)), t == DType::bf16 ? -8 : -10) + 1e-5, [g, t](Case& c) {
          const HostTensor a = uni(g.ta ? Shape{g.k, g.m} : Shape{g.m, g.k}, 11);
          const HostTensor b = uni(g.tb ? Shape{g.n, g.k} : Shape{g.k, g.n}, 12);
          const HostTensor c0 = uni({g.m, g.n}, 13);
          Tensor o = c.out(c0);
          {
            const autocast amp(c.dev, t);
            ops::gemm(c.in(a), g.ta, c.in(b), g.tb, o, g.alpha, g.beta);
          }
          c.check({o}, [=] {
            return one(ref::gemm(g.ta, g.tb, g.m, g.n, g.k, g.alpha, a.v, b.v, g.beta, c0.v));
          });
        });
  add(Op::gemm, "gemm k=0 beta 0 over NaN", 0, [](Case& c) {
    Tensor o = c.out(HostTensor{{4, 3}, Vec(12, NAN)});
    ops::gemm(c.in({{4, 0}, {}}), false, c.in({{0, 3}, {}}), false, o, 1.0f, 0.0f);
    c.check({o}, [] { return one(ref::gemm(false, false, 4, 3, 0, 1, {}, {}, 0, Vec(12, NAN))); });
  });
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      add(Op::gemm_batched,
          "gemm_batched 4 x 6x5x9 ta=" + std::to_string(ta) + " tb=" + std::to_string(tb), 1e-5,
          [ta, tb](Case& c) {
            const HostTensor a = uni(ta ? Shape{4, 9, 6} : Shape{4, 6, 9}, 14);
            const HostTensor b = uni(tb ? Shape{4, 5, 9} : Shape{4, 9, 5}, 15);
            const HostTensor c0 = uni({4, 6, 5}, 16);
            Tensor o = c.out(c0);
            ops::gemm_batched(c.in(a), ta, c.in(b), tb, o, -1.5f, 0.25f);
            c.check({o}, [=] {
              return one(ref::gemm_batched(4, ta, tb, 6, 5, 9, -1.5, a.v, b.v, 0.25, c0.v));
            });
          });
  add(Op::gemm_batched, "gemm_batched k=0 beta 0 over NaN", 0, [](Case& c) {
    Tensor o = c.out(HostTensor{{2, 3, 4}, Vec(24, NAN)});
    ops::gemm_batched(c.in({{2, 3, 0}, {}}), false, c.in({{2, 0, 4}, {}}), false, o, 1.0f, 0.0f);
    c.check({o}, [] {
      return one(ref::gemm_batched(2, false, false, 3, 4, 0, 1, {}, {}, 0, Vec(24, NAN)));
    });
  });
  // Philox fills. Uniform: exact (the reference evaluates lo + (hi - lo) u in f32 as rng.hpp
  // does). Normal, whose logf, sqrtf, sinf and cosf differ between libraries: theta = 2 pi u2 in
  // f32 is off by up to 4.1e-7 rad (2 pi as an f32, then half an ulp of the product), which moves
  // z by r times that: with r up to 5.8 and stddev 2, up to 4.7e-6 where cos or sin crosses 0.
  add(Op::fill_uniform, "uniform offset 5", 0, [](Case& c) {
    c.check({Tensor::uniform({1001}, -2.0f, 3.0f, 77, c.dev, 5)},
            [] { return one(ref::uniform(1001, 77, 5, -2.0, 3.0)); });
  });
  add(Op::fill_normal, "normal offset 3", 5e-6, [](Case& c) {
    c.check({Tensor::normal({1001}, 0.5f, 2.0f, 78, c.dev, 3)},
            [] { return one(ref::normal(1001, 78, 3, 0.5, 2.0)); });
  });
  // The Tensor constructors allocate their own output: the same ops through the op table
  // (dispatch::run, with the host fallback) into a guarded one.
  add(Op::fill_uniform, "uniform through the op table, seed 2^40 + 1", 0, [](Case& c) {
    Tensor x = c.out({999});
    const std::uint64_t seed = (std::uint64_t{1} << 40) + 1;
    dispatch::run(c.dev, {}, {&x}, [&](const dispatch::Operands& o) {
      return calls::FillUniform{o.out<float>(x), 999, seed, 6, -1.0f, 1.0f};
    });
    c.check({x}, [=] { return one(ref::uniform(999, seed, 6, -1.0, 1.0)); });
  });
  add(Op::fill_normal, "normal through the op table, odd offset", 5e-6, [](Case& c) {
    Tensor x = c.out({999});
    dispatch::run(c.dev, {}, {&x}, [&](const dispatch::Operands& o) {
      return calls::FillNormal{o.out<float>(x), 999, 79, 7, 0.0f, 1.0f};
    });
    c.check({x}, [] { return one(ref::normal(999, 79, 7, 0.0, 1.0)); });
  });

  // ---- convolutions ----
  // 1e-5 relative to 1 + |want| on every device, cuDNN included, whichever algorithm its
  // heuristics pick (GPU review G4), for the small cases (at most 27 products per output): a
  // transform-domain algorithm (Winograd, FFT), whose rounding grows with the transform and the
  // sum's length, is expected to stay inside it there. The [8, 16, 32, 32] cases sum 144 products
  // per output and 8192 per weight gradient; their tolerances are set below from the length of
  // the sum. tests/backends/cuda/test_cuda_modes.cpp sets tolerances by the algorithm family that ran. If
  // a conv row fails on cuda, COHORT_CUDNN_LOG=1 prints the algorithm cuDNN chose for each shape:
  // loosen that family's rows (seams::conv_tolerance) only if it is transform-based.
  struct ConvCase {
    std::string name;
    Shape x, w;
    ops::Conv2dParams p;
    bool bias;
    Activation act;
    float act_alpha;
    double tol_y, tol_dx, tol_dw;
  };
  std::vector<ConvCase> convs;
  auto conv = [&](std::string name, Shape x, Shape w, std::vector<std::int64_t> shpd, int groups,
                  bool bias, Activation act, double tol_y, double tol_dx, double tol_dw) {
    const ops::Conv2dParams p{shpd[0], shpd[1], shpd[2], shpd[3], shpd[4], shpd[5], groups};
    convs.push_back({std::move(name), x, w, p, bias, act, 0.1f, tol_y, tol_dx, tol_dw});
  };
  // name, x, weight, {stride h, w, pad h, w, dilation h, w}, groups, bias, act, tols of y, dx, dw
  conv("3x3 pad 1 bias relu", {2, 3, 7, 6}, {4, 3, 3, 3}, {1, 1, 1, 1, 1, 1}, 1, true,
       Activation::relu, 1e-5, 1e-5, 1e-5);
  conv("strided dilated groups 2", {2, 4, 9, 8}, {6, 2, 2, 3}, {2, 1, 0, 1, 2, 1}, 2, false,
       Activation::identity, 1e-5, 1e-5, 1e-5);
  conv("1x1", {3, 5, 4, 4}, {2, 5, 1, 1}, {1, 1, 0, 0, 1, 1}, 1, true, Activation::identity, 1e-5,
       1e-5, 1e-5);
  // A training-sized layer: 144-term sums per output and input gradient (partial sums ~4), 8192
  // per weight gradient (partial sums ~30, sqrt(8192) / 3). A running f32 sum strays by about
  // sqrt(n) half-ulps of its partial sums: ~1e-6 absolute for y and dx (seen 3.4e-6: 2e-5), ~1e-4
  // for dw, whose value may be near 0 after cancelling (seen 4.7e-5 with oneDNN, 1.4e-5 with
  // im2col: 2e-4). A blocked or tree sum (oneDNN, cuDNN) only does better.
  conv("[8, 16, 32, 32] 3x3 pad 1 relu", {8, 16, 32, 32}, {16, 16, 3, 3}, {1, 1, 1, 1, 1, 1}, 1,
       true, Activation::relu, 2e-5, 2e-5, 2e-4);
  conv("3x3 stride 2 pad 2 dil 2 groups 4", {4, 16, 19, 17}, {32, 4, 3, 3}, {2, 2, 2, 2, 2, 2}, 4,
       true, Activation::identity, 1e-5, 1e-5, 1e-5);
  conv("depthwise 3x3 pad 1 leaky_relu", {2, 8, 12, 12}, {8, 1, 3, 3}, {1, 1, 1, 1, 1, 1}, 8, true,
       Activation::leaky_relu, 1e-5, 1e-5, 1e-5);
  conv("5x3 stride (3, 1) pad (2, 0)", {2, 3, 11, 9}, {4, 3, 5, 3}, {3, 1, 2, 0, 1, 1}, 1, false,
       Activation::identity, 1e-5, 1e-5, 1e-5);
  for (const ConvCase& cc : convs) {
    const ref::Conv rc = ref_conv(cc.x, cc.w, cc.p);
    const Shape ys = ops::conv2d_output_shape(cc.x, cc.w, cc.p);
    add(Op::conv2d_forward, "conv2d " + cc.name, cc.tol_y, [cc, rc, ys](Case& c) {
      const HostTensor x = uni(cc.x, 21), w = uni(cc.w, 22), b = uni({cc.w[0]}, 23);
      Tensor y = c.out(ys), bias = c.in(b);
      ops::conv2d_forward(c.in(x), c.in(w), cc.bias ? &bias : nullptr, y, cc.p, cc.act,
                          cc.act_alpha);
      c.check({y}, [=] {
        return one(ref::conv2d_forward(rc, x.v, w.v, cc.bias ? b.v : Vec{}, ref_act(cc.act),
                                       cc.act_alpha));
      });
    });
    add(Op::conv2d_backward_data, "conv2d dx " + cc.name, cc.tol_dx, [cc, rc, ys](Case& c) {
      const HostTensor dy = uni(ys, 24), w = uni(cc.w, 22);
      Tensor dx = c.out(cc.x);
      ops::conv2d_backward_data(c.in(dy), c.in(w), dx, cc.p);
      c.check({dx}, [=] { return one(ref::conv2d_backward_data(rc, dy.v, w.v)); });
    });
    add(Op::conv2d_backward_filter, "conv2d dw " + cc.name, cc.tol_dw, [cc, rc, ys](Case& c) {
      const HostTensor x = uni(cc.x, 21), dy = uni(ys, 24);
      const HostTensor dw0 = uni(cc.w, 25), db0 = uni({cc.w[0]}, 26);  // they accumulate
      Tensor dw = c.out(dw0), db = c.out(db0);
      ops::conv2d_backward_filter(c.in(x), c.in(dy), dw, cc.bias ? &db : nullptr, cc.p);
      c.check({dw, db}, [=] {
        std::vector<Vec> out(2);
        ref::conv2d_backward_filter(rc, x.v, dy.v, dw0.v, cc.bias ? db0.v : Vec{}, &out[0],
                                    &out[1]);
        if (!cc.bias) out[1] = db0.v;  // untouched
        return out;
      });
    });
  }
  // A NaN in x reaches every output whose window holds it, through the bias and the ReLU, as
  // torch.relu passes NaN (GPU review 2, Q1: cuDNN's fused conv + bias + ReLU must too). The output
  // starts as NaN everywhere, so an output the route leaves unwritten shows as well (Q3: the fused
  // call gets y as z with alpha2 = 0 and must not read it).
  {
    const ConvCase& cc = convs[0];  // 3x3 pad 1 bias relu
    const ref::Conv rc = ref_conv(cc.x, cc.w, cc.p);
    const Shape ys = ops::conv2d_output_shape(cc.x, cc.w, cc.p);
    add(Op::conv2d_forward, "conv2d " + cc.name + ", NaN in x, y NaN before", cc.tol_y,
        [cc, rc, ys](Case& c) {
          HostTensor x = uni(cc.x, 21);
          x.v[(0 * 3 + 1) * 7 * 6 + 3 * 6 + 2] = std::nan("");  // image 0, channel 1, (3, 2)
          const HostTensor w = uni(cc.w, 22), b = uni({cc.w[0]}, 23);
          HostTensor y0{ys, Vec(static_cast<std::size_t>(ys.numel()), std::nan(""))};
          Tensor y = c.out(y0), bias = c.in(b);
          ops::conv2d_forward(c.in(x), c.in(w), &bias, y, cc.p, Activation::relu);
          c.check({y}, [=] {
            return one(ref::conv2d_forward(rc, x.v, w.v, b.v, ref_act(Activation::relu), 0.0));
          });
        });
  }
  // The convolutions under autocast bf16 and f16, with the GEMMs' reasoning: 2^-8 sqrt(n) + 1e-5
  // (f16: 2^-10 sqrt(n) + 1e-5) of (1 + |want|) for sums of n products (per output: C/groups R S;
  // per input gradient: K/groups R S; per weight gradient: N OH OW). cuDNN also rounds its output
  // to the 16-bit type (seams/cudnn_conv.hpp), one more 2^-8 (2^-11) of |want| at most.
  for (const DType t : {DType::bf16, DType::f16})
    for (const ConvCase& cc : convs) {
      const ref::Conv rc = ref_conv(cc.x, cc.w, cc.p);
      const Shape ys = ops::conv2d_output_shape(cc.x, cc.w, cc.p);
      const double per_out = double(cc.w[1] * cc.w[2] * cc.w[3]);
      const double per_in = double(cc.w[0] / cc.p.groups * cc.w[2] * cc.w[3]);
      const double per_w = double(ys[0] * ys[2] * ys[3]);
      auto tol = [t](double n) {
        return std::ldexp(std::sqrt(n), t == DType::bf16 ? -8 : -10) + 1e-5;
      };
      const std::string amp = std::string(" autocast ") + dtype_name(t);
      add(Op::conv2d_forward, "conv2d " + cc.name + amp, tol(per_out), [cc, rc, ys, t](Case& c) {
        const HostTensor x = uni(cc.x, 21), w = uni(cc.w, 22), b = uni({cc.w[0]}, 23);
        Tensor y = c.out(ys), bias = c.in(b);
        {
          const autocast scope(c.dev, t);
          ops::conv2d_forward(c.in(x), c.in(w), cc.bias ? &bias : nullptr, y, cc.p, cc.act,
                              cc.act_alpha);
        }
        c.check({y}, [=] {
          return one(ref::conv2d_forward(rc, x.v, w.v, cc.bias ? b.v : Vec{}, ref_act(cc.act),
                                         cc.act_alpha));
        });
      });
      add(Op::conv2d_backward_data, "conv2d dx " + cc.name + amp, tol(per_in),
          [cc, rc, ys, t](Case& c) {
            const HostTensor dy = uni(ys, 24), w = uni(cc.w, 22);
            Tensor dx = c.out(cc.x);
            {
              const autocast scope(c.dev, t);
              ops::conv2d_backward_data(c.in(dy), c.in(w), dx, cc.p);
            }
            c.check({dx}, [=] { return one(ref::conv2d_backward_data(rc, dy.v, w.v)); });
          });
      add(Op::conv2d_backward_filter, "conv2d dw " + cc.name + amp, tol(per_w),
          [cc, rc, ys, t](Case& c) {
            const HostTensor x = uni(cc.x, 21), dy = uni(ys, 24);
            const HostTensor dw0 = uni(cc.w, 25), db0 = uni({cc.w[0]}, 26);
            Tensor dw = c.out(dw0), db = c.out(db0);
            {
              const autocast scope(c.dev, t);
              ops::conv2d_backward_filter(c.in(x), c.in(dy), dw, cc.bias ? &db : nullptr, cc.p);
            }
            c.check({dw, db}, [=] {
              std::vector<Vec> out(2);
              ref::conv2d_backward_filter(rc, x.v, dy.v, dw0.v, cc.bias ? db0.v : Vec{}, &out[0],
                                          &out[1]);
              if (!cc.bias) out[1] = db0.v;
              return out;
            });
          });
    }

  // ---- pooling: max (a copy: exact) and average ----
  std::vector<std::pair<std::string, ops::Pool2dParams>> pools;
  auto pool = [&](std::string name, PoolKind kind, std::int64_t k, std::int64_t stride,
                  std::int64_t pad, std::int64_t dil, bool count_pad) {
    const ops::Pool2dParams p{kind, k, k, stride, stride, pad, pad, dil, dil, count_pad};
    pools.emplace_back(std::move(name), p);
  };
  pool("max 2x2/2", PoolKind::max, 2, 2, 0, 1, true);
  pool("max 3x3/2 pad 1 dil 2", PoolKind::max, 3, 2, 1, 2, true);
  pool("avg 3x3/2 pad 1", PoolKind::avg, 3, 2, 1, 1, false);
  pool("avg 3x3/1 pad 1 count_include_pad", PoolKind::avg, 3, 1, 1, 1, true);
  for (const auto& [pname, pp] : pools) {
    const ops::Pool2dParams p = pp;
    const Shape xs{2, 3, 7, 8};
    const Shape ys = ops::pool2d_output_shape(xs, p);
    const ref::Pool rp = ref_pool(xs, p);
    const bool max = p.kind == PoolKind::max;
    add(Op::pool2d_forward, "pool " + pname, max ? 0 : 1e-6, [=](Case& c) {
      const HostTensor x = uni(xs, 31);
      Tensor y = c.out(ys), am = c.out(ys, DType::i32);
      ops::pool2d_forward(c.in(x), y, max ? &am : nullptr, p);
      c.check({y, am}, [=] {
        std::vector<Vec> out(2);
        ref::pool2d_forward(rp, x.v, &out[0], &out[1]);
        if (!max) out[1] = Vec(static_cast<std::size_t>(ys.numel()), 0.0);  // untouched
        return out;
      });
    });
    // Overlapping windows add several dy into one dx: 1e-6.
    add(Op::pool2d_backward, "pool backward " + pname, 1e-6, [=](Case& c) {
      const HostTensor x = uni(xs, 31), dy = uni(ys, 32);
      Tensor y = c.out(ys), am = c.out(ys, DType::i32), dx = c.out(xs);
      ops::pool2d_forward(c.in(x), y, max ? &am : nullptr, p);
      ops::pool2d_backward(c.in(dy), max ? &am : nullptr, dx, p);
      c.check({dx}, [=] { return one(ref::pool2d_backward(rp, x.v, dy.v)); });
    });
  }

  // ---- activations, bias, softmax ----
  for (Activation f : {Activation::relu, Activation::leaky_relu, Activation::gelu,
                       Activation::sigmoid, Activation::tanh}) {
    const double tol = f == Activation::relu ? 0 : 1e-6;  // relu selects: exact
    add(Op::activation_forward, std::string("activation ") + activation_name(f), tol, [f](Case& c) {
      const HostTensor x = uni({257}, 41, -3, 3);
      Tensor y = c.out({257});
      ops::activation_forward(f, 0.1f, c.in(x), y);
      c.check({y}, [=] { return one(ref::activation_forward(ref_act(f), 0.1f, x.v)); });
    });
    add(Op::activation_backward, std::string("activation backward ") + activation_name(f), tol,
        [f](Case& c) {
          const HostTensor x = uni({257}, 41, -3, 3), dy = uni({257}, 42);
          Tensor xd = c.in(x), y = c.out({257}), dx = c.out({257});
          ops::activation_forward(f, 0.1f, xd, y);
          ops::activation_backward(f, 0.1f, xd, y, c.in(dy), dx);
          c.check({dx}, [=] { return one(ref::activation_backward(ref_act(f), 0.1f, x.v, dy.v)); });
        });
  }
  add(Op::bias_add, "bias_add NCHW + relu", 0, [](Case& c) {
    const HostTensor y0 = uni({2, 3, 4, 5}, 43), b = uni({3}, 44);
    Tensor y = c.out(y0);
    ops::bias_add(c.in(b), y, 1, Activation::relu);
    c.check({y}, [=] { return one(ref::bias_add(y0.v, b.v, 2, 3, 20, ref::Act::relu, 0)); });
  });
  add(Op::bias_add, "bias_add features + gelu", 1e-6, [](Case& c) {
    const HostTensor y0 = uni({7, 6}, 47), b = uni({6}, 48);
    Tensor y = c.out(y0);
    ops::bias_add(c.in(b), y, -1, Activation::gelu);
    c.check({y}, [=] { return one(ref::bias_add(y0.v, b.v, 7, 6, 1, ref::Act::gelu, 0)); });
  });
  add(Op::bias_grad, "bias_grad features", 1e-6, [](Case& c) {
    const HostTensor dy = uni({11, 6}, 46), db0 = uni({6}, 45);
    Tensor db = c.out(db0);
    ops::bias_grad(c.in(dy), db, -1);
    c.check({db}, [=] { return one(ref::bias_grad(dy.v, 11, 6, 1, db0.v)); });
  });
  // 168 terms per channel summed in float blocks of 32 (ops/common.hpp's sum_of): the host's SIMD
  // reduction and a GPU's (or Thrust's) in-order loop round each block differently, up to ~32
  // float roundings of the block sum, 2e-6 relative here.
  add(Op::bias_grad, "bias_grad NCHW", 5e-6, [](Case& c) {
    const HostTensor dy = uni({4, 5, 6, 7}, 49), db0 = uni({5}, 50);
    Tensor db = c.out(db0);
    ops::bias_grad(c.in(dy), db, 1);
    c.check({db}, [=] { return one(ref::bias_grad(dy.v, 4, 5, 42, db0.v)); });
  });
  for (bool log : {false, true}) {
    const std::string n = log ? "log_softmax" : "softmax";
    add(Op::softmax_forward, n + " dim 1 of [3, 5, 4]", 1e-6, [log](Case& c) {
      const HostTensor x = uni({3, 5, 4}, 47, -4, 4);
      Tensor y = c.out({3, 5, 4});
      ops::softmax_forward(log, c.in(x), y, 1);
      c.check({y}, [=] { return one(ref::softmax_forward(log, x.v, 3, 5, 4)); });
    });
    add(Op::softmax_backward, n + " backward", 1e-6, [log](Case& c) {
      const HostTensor x = uni({6, 10}, 48, -4, 4), dy = uni({6, 10}, 49);
      Tensor y = c.out({6, 10}), dx = c.out({6, 10});
      ops::softmax_forward(log, c.in(x), y, -1);
      ops::softmax_backward(log, y, c.in(dy), dx, -1);
      c.check({dx}, [=] { return one(ref::softmax_backward(log, x.v, dy.v, 6, 10, 1)); });
    });
  }

  // ---- attention: qkv [n, t, 3, h, dh] ----
  // Each output is a sum of t products of probabilities and values, after dh-long dot products in
  // f32 (sgemm's blocked order on the host and, per head, on Thrust and the GPU): a few f32
  // roundings of each term, 1e-6 at t = 5 (measured 8e-8); at the ViT's t = 65 and dh = 32, from
  // inputs in [-2, 2], 5e-6 (measured 7e-7).
  struct AttentionCase {
    const char* name;
    std::int64_t n, t, h, dh;
    float lo, hi;
    double tol;
  };
  for (const AttentionCase& k :
       {AttentionCase{"[2, 5, 3, 2, 4]", 2, 5, 2, 4, -1.0f, 1.0f, 1e-6},
        // Three entries and three heads: the GPU's batched GEMMs per head (their strides).
        AttentionCase{"[3, 7, 3, 3, 8]", 3, 7, 3, 8, -1.0f, 1.0f, 1e-6},
        AttentionCase{"ViT's [1, 65, 3, 2, 32]", 1, 65, 2, 32, -2.0f, 2.0f, 5e-6}}) {
    const Shape qs{k.n, k.t, 3, k.h, k.dh}, os{k.n, k.t, k.h, k.dh}, ls{k.n, k.h, k.t};
    const float scale = 1.0f / std::sqrt(static_cast<float>(k.dh));
    add(Op::attention_forward, std::string("attention ") + k.name, k.tol, [=](Case& c) {
      const HostTensor qkv = uni(qs, 90, k.lo, k.hi);
      Tensor out = c.out(os), lse = c.out(ls);
      ops::attention_forward(c.in(qkv), out, lse, scale);
      c.check({out, lse}, [=] {
        const ref::AttentionOut r = ref::attention_forward(qkv.v, k.n, k.t, k.h, k.dh, scale);
        return std::vector<Vec>{r.out, r.lse};
      });
    });
    add(Op::attention_backward, std::string("attention backward ") + k.name, k.tol, [=](Case& c) {
      const HostTensor qkv = uni(qs, 91, k.lo, k.hi), dout = uni(os, 92);
      Tensor out = c.out(os), lse = c.out(ls), dqkv = c.out(qs);
      const Tensor q = c.in(qkv);
      ops::attention_forward(q, out, lse, scale);
      ops::attention_backward(q, out, lse, c.in(dout), dqkv, scale);
      c.check({dqkv}, [=] {
        return one(ref::attention_backward(qkv.v, dout.v, k.n, k.t, k.h, k.dh, scale));
      });
    });
  }
  // A NaN in one query makes that query's row NaN (out and lse), and only it (torch.softmax).
  add(Op::attention_forward, "attention NaN in query 3", 1e-6, [](Case& c) {
    HostTensor qkv = uni({1, 5, 3, 1, 4}, 93);
    qkv.v[(3 * 3 + 0) * 4 + 1] = NAN;
    Tensor out = c.out({1, 5, 1, 4}), lse = c.out({1, 1, 5});
    ops::attention_forward(c.in(qkv), out, lse, 0.5f);
    c.check({out, lse}, [=] {
      const ref::AttentionOut r = ref::attention_forward(qkv.v, 1, 5, 1, 4, 0.5);
      return std::vector<Vec>{r.out, r.lse};
    });
  });

  // Head size 0, which the front end allows: every score is 0, so each lse is log t and the
  // output is empty. The CUDA device's batched GEMM must take the empty P.V product as the family
  // does, not refuse it (GPU review 2, H4: cuBLAS's argument check threw on cuda only).
  add(Op::attention_forward, "attention head size 0", 1e-6, [](Case& c) {
    const HostTensor qkv = uni({2, 5, 3, 2, 0}, 94);
    Tensor out = c.out({2, 5, 2, 0}), lse = c.out({2, 2, 5});
    ops::attention_forward(c.in(qkv), out, lse, 1.0f);
    c.check({lse}, [] { return one(Vec(20, std::log(5.0))); });
  });

  // ---- normalisation: statistics over 100 elements per channel; 1e-5 ----
  const Shape bs{4, 3, 5, 5};
  for (bool training : {true, false})
    add(Op::batch_norm_forward, training ? "batch_norm train" : "batch_norm eval", 1e-5,
        [=](Case& c) {
          const HostTensor x = uni(bs, 50), rm0 = uni({3}, 51), rv0 = uni({3}, 52, 0.5f, 2.0f);
          const HostTensor g = uni({3}, 53), b = uni({3}, 54);
          Tensor y = c.out(bs), sm = c.out({3}), si = c.out({3}), rm = c.out(rm0), rv = c.out(rv0);
          Tensor gd = c.in(g), bd = c.in(b);
          ops::batch_norm_forward(c.in(x), &gd, &bd, &rm, &rv, y, sm, si, 1e-5f, 0.1f, training);
          c.check({y, sm, si, rm, rv}, [=] {
            const ref::BatchNormOut o = ref::batch_norm_forward(x.v, 4, 3, 25, g.v, b.v, rm0.v,
                                                                rv0.v, 1e-5f, 0.1f, training);
            return std::vector<Vec>{o.y, o.save_mean, o.save_invstd, o.running_mean, o.running_var};
          });
        });
  // Eval mode is the case cuDNN declines (its backward takes batch statistics only).
  for (bool training : {true, false})
    add(Op::batch_norm_backward, training ? "batch_norm backward" : "batch_norm backward eval",
        1e-5, [=](Case& c) {
          const HostTensor x = uni(bs, 50), dy = uni(bs, 57), g = uni({3}, 53), b = uni({3}, 54);
          const HostTensor rm0 = uni({3}, 51), rv0 = uni({3}, 52, 0.5f, 2.0f);
          const HostTensor dg0 = uni({3}, 55), db0 = uni({3}, 56);
          Tensor xd = c.in(x), gd = c.in(g), bd = c.in(b), rm = c.in(rm0), rv = c.in(rv0);
          Tensor y = c.out(bs), sm = c.out({3}), si = c.out({3});
          ops::batch_norm_forward(xd, &gd, &bd, training ? nullptr : &rm, training ? nullptr : &rv,
                                  y, sm, si, 1e-5f, 0.1f, training);
          Tensor dx = c.out(bs), dg = c.out(dg0), db = c.out(db0);
          ops::batch_norm_backward(xd, c.in(dy), &gd, sm, si, &dx, &dg, &db, training);
          c.check({dx, dg, db}, [=] {
            const ref::NormGrads o = ref::batch_norm_backward(x.v, dy.v, 4, 3, 25, g.v, rm0.v,
                                                              rv0.v, 1e-5f, training, dg0.v, db0.v);
            return std::vector<Vec>{o.dx, o.dgamma, o.dbeta};
          });
        });
  add(Op::layer_norm_forward, "layer_norm [6, 40]", 1e-5, [](Case& c) {
    const HostTensor x = uni({6, 40}, 60), g = uni({40}, 61), b = uni({40}, 62);
    Tensor y = c.out({6, 40}), m = c.out({6}), rs = c.out({6}), gd = c.in(g), bd = c.in(b);
    ops::layer_norm_forward(c.in(x), 40, &gd, &bd, y, m, rs, 1e-5f);
    c.check({y, m, rs}, [=] {
      const ref::LayerNormOut o = ref::layer_norm_forward(x.v, 6, 40, g.v, b.v, 1e-5f);
      return std::vector<Vec>{o.y, o.mean, o.rstd};
    });
  });
  add(Op::layer_norm_backward, "layer_norm backward", 1e-5, [](Case& c) {
    const HostTensor x = uni({6, 40}, 60), g = uni({40}, 61), dy = uni({6, 40}, 63);
    Tensor xd = c.in(x), gd = c.in(g), y = c.out({6, 40}), m = c.out({6}), rs = c.out({6});
    ops::layer_norm_forward(xd, 40, &gd, nullptr, y, m, rs, 1e-5f);
    Tensor dx = c.out({6, 40}), dg = c.out({40}), db = c.out({40});
    ops::layer_norm_backward(xd, c.in(dy), 40, &gd, m, rs, &dx, &dg, &db);
    c.check({dx, dg, db}, [=] {
      const ref::NormGrads o =
          ref::layer_norm_backward(x.v, dy.v, 6, 40, g.v, 1e-5f, Vec(40, 0.0), Vec(40, 0.0));
      return std::vector<Vec>{o.dx, o.dgamma, o.dbeta};
    });
  });
  // 300 rows: on the GPU dgamma and dbeta sum in stages of 64 rows (a partial last block), and
  // they accumulate onto what they held.
  add(Op::layer_norm_backward, "layer_norm backward [300, 40]", 1e-5, [](Case& c) {
    const HostTensor x = uni({300, 40}, 64), g = uni({40}, 65), dy = uni({300, 40}, 66);
    const HostTensor dg0 = uni({40}, 67), db0 = uni({40}, 68);
    Tensor xd = c.in(x), gd = c.in(g), y = c.out({300, 40}), m = c.out({300}), rs = c.out({300});
    ops::layer_norm_forward(xd, 40, &gd, nullptr, y, m, rs, 1e-5f);
    Tensor dx = c.out({300, 40}), dg = c.out(dg0), db = c.out(db0);
    ops::layer_norm_backward(xd, c.in(dy), 40, &gd, m, rs, &dx, &dg, &db);
    c.check({dx, dg, db}, [=] {
      const ref::NormGrads o =
          ref::layer_norm_backward(x.v, dy.v, 300, 40, g.v, 1e-5f, dg0.v, db0.v);
      return std::vector<Vec>{o.dx, o.dgamma, o.dbeta};
    });
  });

  // ---- dropout (the reference draws the mask itself; a kept element is one f32 product) ----
  DropoutArgs d1;
  d1.p = 0.3f;
  d1.seed = 99;
  d1.step = 7;
  DropoutArgs d2;  // seed and step past 32 bits: every word of key and counter matters
  d2.p = 0.5f;
  d2.seed = (std::uint64_t{3} << 40) + 5;
  d2.step = (std::uint64_t{1} << 32) + 3;
  for (const DropoutArgs& da : {d1, d2}) {
    const std::string what = da.p == 0.3f ? "p .3" : "p .5, 64-bit seed and step";
    add(Op::dropout_forward, "dropout " + what, 0, [da](Case& c) {
      const HostTensor x = uni({1000}, 70);
      Tensor y = c.out({1000});
      ops::dropout_forward(da, c.in(x), y);
      c.check({y}, [=] { return one(ref::dropout(x.v, da.p, da.seed, da.step)); });
    });
    add(Op::dropout_backward, "dropout backward " + what, 0, [da](Case& c) {
      const HostTensor dy = uni({1000}, 71);
      Tensor dx = c.out({1000});
      ops::dropout_backward(da, c.in(dy), dx);
      c.check({dx}, [=] { return one(ref::dropout(dy.v, da.p, da.seed, da.step)); });
    });
  }

  // ---- losses ----
  const std::vector<std::int64_t> targets = {0, 9, 3, 3, 7};
  add(Op::nll_forward, "nll", 0, [targets](Case& c) {
    const HostTensor logp = uni({5, 10}, 72);
    Tensor loss = c.out({5});
    ops::nll_forward(c.in(logp), c.ints(targets), loss);
    c.check({loss}, [=] { return one(ref::nll_forward(logp.v, targets, 10)); });
  });
  add(Op::nll_backward, "nll backward", 0, [targets](Case& c) {
    Tensor dx = c.out(uni({5, 10}, 73));  // overwritten
    ops::nll_backward(c.ints(targets), 0.2f, dx);
    c.check({dx}, [=] { return one(ref::nll_backward(targets, 10, 0.2f)); });
  });
  add(Op::cross_entropy_backward, "cross_entropy backward", 1e-6, [targets](Case& c) {
    const HostTensor logits = uni({5, 10}, 74, -3, 3);
    Tensor logp = c.out({5, 10}), dx = c.out({5, 10});
    ops::softmax_forward(true, c.in(logits), logp, 1);
    ops::cross_entropy_backward(logp, c.ints(targets), 0.2f, dx);
    c.check({dx}, [=] { return one(ref::cross_entropy_backward(logits.v, targets, 10, 0.2f)); });
  });
  add(Op::cross_entropy_backward, "cross_entropy backward, label smoothing 0.1", 1e-6,
      [targets](Case& c) {
        const HostTensor logits = uni({5, 10}, 75, -3, 3);
        Tensor logp = c.out({5, 10}), dx = c.out({5, 10});
        ops::softmax_forward(true, c.in(logits), logp, 1);
        ops::cross_entropy_backward(logp, c.ints(targets), 0.2f, dx, 0.1f);
        c.check({dx}, [=] {
          return one(ref::cross_entropy_backward(logits.v, targets, 10, 0.2f, 0.1f));
        });
      });

  // ---- data movement (exact: nothing is computed) ----
  struct PermuteCase {
    std::string name;
    Shape x;
    std::vector<int> perm;
  };
  const std::vector<PermuteCase> perms = {
      {"[N, T, H, dh] -> [N, H, T, dh]", {2, 5, 3, 4}, {0, 2, 1, 3}},
      {"[N, D, T] -> [N, T, D]", {3, 8, 7}, {0, 2, 1}},
      {"5-D [N, T, 3, H, dh] -> [3, N, H, T, dh]", {2, 3, 3, 2, 4}, {2, 0, 3, 1, 4}},
      {"rows longer than a chunk", {2, 1500, 3}, {2, 0, 1}},
      {"extent-1 axes, negative axes", {1, 4, 1, 6}, {-1, 0, 2, 1}},
  };
  for (const PermuteCase& pc : perms)
    add(Op::permute, "permute " + pc.name, 0, [pc](Case& c) {
      const HostTensor x = uni(pc.x, 100);
      std::vector<std::int64_t> os;
      const int rank = static_cast<int>(pc.x.rank());
      for (int a : pc.perm) os.push_back(pc.x[a < 0 ? a + rank : a]);
      Tensor out = c.out(Shape(os));
      ops::permute(c.in(x), pc.perm, out);
      c.check({out}, [=] { return one(ref::permute(x.v, pc.x.dims(), pc.perm)); });
    });
  add(Op::slice_copy, "slice_copy broadcast token into row 0", 0, [](Case& c) {
    const HostTensor src = uni({1, 1, 8}, 102), dst0 = uni({4, 5, 8}, 101);
    Tensor dst = c.out(dst0);
    ops::slice_copy(c.in(src), 0, dst, 0, 1, 1);
    c.check({dst}, [=] {
      return one(ref::slice_copy(src.v, {1, 1, 8}, 0, dst0.v, {4, 5, 8}, 0, 1, 1, false));
    });
  });
  add(Op::slice_copy, "slice_copy rows 1..4 accumulate at 2", 0, [](Case& c) {
    const HostTensor src = uni({3, 5, 5}, 104), dst0 = uni({3, 6, 5}, 103);
    Tensor dst = c.out(dst0);
    ops::slice_copy(c.in(src), 1, dst, 2, 3, 1, true);
    c.check({dst}, [=] {
      return one(ref::slice_copy(src.v, {3, 5, 5}, 1, dst0.v, {3, 6, 5}, 2, 3, 1, true));
    });
  });
  // narrow and cat allocate their outputs (no guard).
  add(Op::slice_copy, "narrow last axis, cat first axis", 0, [](Case& c) {
    const HostTensor x = uni({4, 9}, 105), y = uni({2, 4}, 106);
    Tensor a = ops::narrow(c.in(x), -1, 3, 4);
    c.check({a, ops::cat({a, c.in(y)}, 0)}, [=] {
      const Vec n = ref::narrow(x.v, {4, 9}, -1, 3, 4);
      return std::vector<Vec>{n, ref::cat({n, y.v}, {{4, 4}, {2, 4}}, 0)};
    });
  });

  // ---- optimizers: bit for bit (the reference rounds each documented step to f32, as the
  // device and PyTorch's tensor ops do; an FMA contraction on the device would show here) ----
  SgdArgs s1;  // momentum, Nesterov, weight decay
  s1.neg_lr = -0.1f;
  s1.momentum = 0.9f;
  s1.weight_decay = 0.01f;
  s1.nesterov = true;
  SgdArgs s2;  // the first step (the buffer is g), dampening, maximize
  s2.neg_lr = -0.05f;
  s2.momentum = 0.8f;
  s2.one_minus_dampening = 0.5f;
  s2.maximize = s2.first_step = true;
  for (const SgdArgs& a : {s1, s2})
    add(Op::sgd_step, a.nesterov ? "sgd momentum nesterov wd" : "sgd first step dampening maximize",
        0, [a](Case& c) {
          const HostTensor p0 = uni({101}, 80), g = uni({101}, 81), buf0 = uni({101}, 82);
          Tensor p = c.out(p0), buf = c.out(buf0);
          ops::sgd_step(p, c.in(g), buf, a);
          c.check({p, buf}, [=] {
            Vec pv = p0.v, bv = buf0.v;
            ref::sgd_step({a.neg_lr, a.momentum, a.one_minus_dampening, a.weight_decay, a.nesterov,
                           a.maximize, a.first_step},
                          pv, g.v, bv);
            return std::vector<Vec>{pv, bv};
          });
        });
  // Adam at step 3 with lr 1e-3, the coefficients in double rounded to f32 as cohort::optim
  // does; max_exp_avg_sq is guarded even when unused, to see that it stays untouched.
  struct AdamCase {
    std::string name;
    bool amsgrad, decoupled;
    float weight_decay;
  };
  for (const AdamCase& ac :
       {AdamCase{"adam amsgrad", true, false, 0.0f},
        AdamCase{"adam weight decay", false, false, 0.01f}, AdamCase{"adamw", false, true, 0.01f}})
    add(Op::adam_step, ac.name, 0, [ac](Case& c) {
      const HostTensor p0 = uni({101}, 83), g = uni({101}, 84), m0 = uni({101}, 85);
      const HostTensor v0 = uni({101}, 86, 0, 1), mx0 = uni({101}, 87, 0, 1);
      Tensor p = c.out(p0), m = c.out(m0), v = c.out(v0), mx = c.out(mx0);
      const double lr = 1e-3;
      AdamArgs a;
      a.amsgrad = ac.amsgrad;
      a.decoupled_weight_decay = ac.decoupled;
      a.weight_decay = ac.decoupled ? 0.0f : ac.weight_decay;
      a.param_scale = ac.decoupled ? static_cast<float>(1 - lr * ac.weight_decay) : 1.0f;
      a.neg_step_size = static_cast<float>(-lr / (1 - std::pow(0.9, 3)));
      a.bias_correction2_sqrt = static_cast<float>(std::sqrt(1 - std::pow(0.999, 3)));
      ops::adam_step(p, c.in(g), m, v, mx, a);
      c.check({p, m, v, mx}, [=] {
        Vec pv = p0.v, mv = m0.v, vv = v0.v, xv = mx0.v;
        ref::Adam r{
            a.beta1,        a.one_minus_beta1, a.beta2,         a.one_minus_beta2,      a.eps,
            a.weight_decay, a.param_scale,     a.neg_step_size, a.bias_correction2_sqrt};
        r.decoupled_weight_decay = a.decoupled_weight_decay;
        r.amsgrad = a.amsgrad;
        ref::adam_step(r, pv, g.v, mv, vv, xv);
        return std::vector<Vec>{pv, mv, vv, xv};
      });
    });
  add(Op::adadelta_step, "adadelta", 0, [](Case& c) {
    const HostTensor p0 = uni({101}, 88), g = uni({101}, 89), s0 = uni({101}, 90, 0, 1),
                     ad0 = uni({101}, 91, 0, 1);
    Tensor p = c.out(p0), s = c.out(s0), ad = c.out(ad0);
    AdadeltaArgs a;
    ops::adadelta_step(p, c.in(g), s, ad, a);
    c.check({p, s, ad}, [=] {
      Vec pv = p0.v, sv = s0.v, av = ad0.v;
      ref::adadelta_step({a.neg_lr, a.rho, a.one_minus_rho, a.eps}, pv, g.v, sv, av);
      return std::vector<Vec>{pv, sv, av};
    });
  });
  // Centered: square_avg in [0.5, 1) and grad_avg in [-0.5, 0.5), so the variance stays positive.
  for (bool centered : {true, false})
    add(Op::rmsprop_step, centered ? "rmsprop centered momentum wd" : "rmsprop plain", 0,
        [centered](Case& c) {
          const HostTensor p0 = uni({101}, 92), g = uni({101}, 93), s0 = uni({101}, 94, 0.5f, 1),
                           ga0 = uni({101}, 95, -0.5f, 0.5f), b0 = uni({101}, 96);
          Tensor p = c.out(p0), s = c.out(s0), ga = c.out(ga0), b = c.out(b0);
          RmspropArgs a;
          a.centered = centered;
          a.momentum = centered ? 0.5f : 0.0f;
          a.weight_decay = centered ? 0.01f : 0.0f;
          ops::rmsprop_step(p, c.in(g), s, ga, b, a);
          c.check({p, s, ga, b}, [=] {
            Vec pv = p0.v, sv = s0.v, gv = ga0.v, bv = b0.v;
            ref::Rmsprop r{a.neg_lr, a.alpha, a.one_minus_alpha, a.eps, a.weight_decay, a.momentum};
            r.centered = a.centered;
            ref::rmsprop_step(r, pv, g.v, sv, gv, bv);
            return std::vector<Vec>{pv, sv, gv, bv};
          });
        });
  // The GradScaler's pass: 1000 elements in blocks of 64 (the last one 40), scale 2^10.
  add(Op::unscale_max_abs, "unscale 1/1024, blocks of 64", 0, [](Case& c) {
    const HostTensor x0 = uni({1000}, 97, -4096, 4096);
    Tensor x = c.out(x0), out = c.out(Shape{16});
    ops::unscale_max_abs(1.0f / 1024, x, out, 64);
    c.check({x, out}, [=] {
      Vec xv = x0.v;
      const Vec m = ref::unscale_max_abs(1.0 / 1024, xv, 64);
      return std::vector<Vec>{xv, m};
    });
  });
  add_fused_rows(r);
  return r;
}

}  // namespace parity
