// The parity rows of the fused passes: bias_act_backward (an activation's backward and the bias
// gradient of the layer before it), layer norm with a residual add on either side, add with the
// activation after it, and dropout with an activation in its pass. The expected
// values compose the reference's separate ops, so a fused pass is held to what the two ops it
// replaces compute.
#include <string>

#include "cohort/core/layer_ops.hpp"
#include "cohort/core/ops.hpp"
#include "parity_case.hpp"

namespace ref = parity_ref;
using namespace cohort;

namespace parity {
namespace {

ref::Act act_of(Activation f) { return static_cast<ref::Act>(static_cast<int>(f)); }

std::vector<Vec> one(Vec v) { return {std::move(v)}; }

}  // namespace

void add_fused_rows(std::vector<Row>& r) {
  auto add = [&](Op op, std::string name, double tol, std::function<void(Case&)> f) {
    r.push_back(Row{op, std::move(name), tol, std::move(f), {}});
  };

  // ---- bias_act_backward: dx = f'(x or y, dy), dbias0 + the sums of dx ----
  struct BiasCase {
    Activation f;
    std::int64_t outer, channels, inner;
    double tol;  // the sums' (see bias_grad's rows): 1e-6 for short rows, 5e-6 for 168 terms
  };
  // 37 channels: two whole blocks of 16 and a partial one (BiasGradColumns).
  for (const BiasCase& b :
       {BiasCase{Activation::relu, 11, 6, 1, 1e-6}, BiasCase{Activation::gelu, 9, 37, 1, 1e-6},
        BiasCase{Activation::sigmoid, 13, 16, 1, 1e-6},
        BiasCase{Activation::leaky_relu, 5, 21, 1, 1e-6},
        BiasCase{Activation::tanh, 4, 5, 42, 5e-6}}) {
    const std::string what =
        std::string(activation_name(b.f)) + (b.inner == 1 ? " features" : " NCHW");
    add(Op::bias_act_backward, "bias_act_backward " + what, b.tol, [b](Case& c) {
      const Shape s =
          b.inner == 1 ? Shape{b.outer, b.channels} : Shape{b.outer, b.channels, 6, b.inner / 6};
      const int axis = b.inner == 1 ? -1 : 1;
      const HostTensor x = uni(s, 120, -3, 3), dy = uni(s, 121), db0 = uni({b.channels}, 122);
      Tensor xd = c.in(x), y = c.out(s), dx = c.out(s), db = c.out(db0);
      ops::activation_forward(b.f, 0.1f, xd, y);
      ops::bias_act_backward(b.f, 0.1f, xd, y, c.in(dy), dx, db, axis);
      c.check({dx, db}, [=] {
        const Vec want_dx = ref::activation_backward(act_of(b.f), 0.1f, x.v, dy.v);
        return std::vector<Vec>{want_dx,
                                ref::bias_grad(want_dx, b.outer, b.channels, b.inner, db0.v)};
      });
    });
  }

  // ---- layer norm with the residual add before it, and the gradient add after its backward ----
  // The sum is one f32 add of the inputs; the reference normalises the f32 sum (f32(x + r)) as
  // the op does.
  add(Op::layer_norm_forward, "layer_norm [6, 40] of x + residual", 1e-5, [](Case& c) {
    const HostTensor x = uni({6, 40}, 126), r0 = uni({6, 40}, 127), g = uni({40}, 128),
                     b = uni({40}, 129);
    Tensor y = c.out({6, 40}), sum = c.out({6, 40}), m = c.out({6}), rs = c.out({6});
    Tensor gd = c.in(g), bd = c.in(b), rd = c.in(r0);
    ops::layer_norm_forward(c.in(x), 40, &gd, &bd, y, m, rs, 1e-5f, &rd, &sum);
    c.check({y, sum, m, rs}, [=] {
      Vec s(x.v.size());
      for (std::size_t i = 0; i < s.size(); ++i)
        s[i] = static_cast<double>(static_cast<float>(x.v[i]) + static_cast<float>(r0.v[i]));
      const ref::LayerNormOut o = ref::layer_norm_forward(s, 6, 40, g.v, b.v, 1e-5f);
      return std::vector<Vec>{o.y, s, o.mean, o.rstd};
    });
  });
  add(Op::layer_norm_backward, "layer_norm backward + dx_add", 1e-5, [](Case& c) {
    const HostTensor x = uni({6, 40}, 60), g = uni({40}, 61), dy = uni({6, 40}, 63),
                     more = uni({6, 40}, 130);
    Tensor xd = c.in(x), gd = c.in(g), y = c.out({6, 40}), m = c.out({6}), rs = c.out({6});
    ops::layer_norm_forward(xd, 40, &gd, nullptr, y, m, rs, 1e-5f);
    Tensor dx = c.out({6, 40}), md = c.in(more);
    ops::layer_norm_backward(xd, c.in(dy), 40, &gd, m, rs, &dx, nullptr, nullptr, &md);
    c.check({dx}, [=] {
      Vec want =
          ref::layer_norm_backward(x.v, dy.v, 6, 40, g.v, 1e-5f, Vec(40, 0.0), Vec(40, 0.0)).dx;
      for (std::size_t i = 0; i < want.size(); ++i) want[i] += more.v[i];
      return one(want);
    });
  });

  // ---- add with the activation after it (a residual block's sum and ReLU) ----
  for (Activation f : {Activation::relu, Activation::gelu}) {
    add(Op::add, std::string("add then ") + activation_name(f), 1e-6, [f](Case& c) {
      const HostTensor a = uni({333}, 131, -2, 2), b = uni({333}, 132, -2, 2);
      Tensor out = c.out({333});
      ops::add(c.in(a), c.in(b), out, f);
      c.check({out}, [=] {
        Vec sum(a.v.size());
        for (std::size_t i = 0; i < sum.size(); ++i)
          sum[i] = static_cast<double>(static_cast<float>(a.v[i]) + static_cast<float>(b.v[i]));
        return one(ref::activation_forward(act_of(f), 0.0, sum));
      });
    });
  }

  // ---- dropout with the activation before it in its pass ----
  DropoutArgs da;
  da.p = 0.3f;
  da.seed = 77;
  da.step = 5;
  for (Activation f : {Activation::relu, Activation::gelu, Activation::sigmoid, Activation::tanh,
                       Activation::leaky_relu}) {
    const std::string name = activation_name(f);
    add(Op::dropout_forward, "dropout p .3 after " + name, 1e-6, [da, f](Case& c) {
      const HostTensor x = uni({1000}, 123, -3, 3);
      Tensor y = c.out({1000});
      ops::dropout_forward(da, c.in(x), y, f, 0.1f);
      c.check({y}, [=] {
        return one(
            ref::dropout(ref::activation_forward(act_of(f), 0.1f, x.v), da.p, da.seed, da.step));
      });
    });
    add(Op::dropout_backward, "dropout backward p .3 after " + name, 1e-6, [da, f](Case& c) {
      const HostTensor x = uni({1000}, 124, -3, 3), dy = uni({1000}, 125);
      Tensor xd = c.in(x), dx = c.out({1000});
      ops::dropout_backward(da, c.in(dy), dx, f, 0.1f, &xd);
      c.check({dx}, [=] {
        return one(ref::activation_backward(act_of(f), 0.1f, x.v,
                                            ref::dropout(dy.v, da.p, da.seed, da.step)));
      });
    });
  }
}

}  // namespace parity
