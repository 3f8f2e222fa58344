// Element-wise front ends (fill, cast, add, sub, mul, axpy, scale, clamp): checks, then one call of the
// op table (backends/common/ops/elementwise.hpp).
#include "cohort/core/ops.hpp"

#include "cohort/backend/dispatch.hpp"
#include "cohort/core/device.hpp"
#include "cohort/core/error.hpp"
#include "ops/checks.hpp"

namespace cohort::ops {

using namespace detail;

namespace {

template <class Call, class Extra = void (*)(Call&)>
void binary(
    const char* name, const Tensor& a, const Tensor& b, Tensor& out, Extra extra = [](Call&) {}) {
  req_defined(name, "a", a);
  req_defined(name, "b", b);
  req_defined(name, "out", out);
  req_f32(name, "a", a);
  req_f32(name, "b", b);
  req_f32(name, "out", out);
  req_same_shape(name, a, "a", b, "b");
  req_same_shape(name, a, "a", out, "out");
  req_same_device(name, a, "a", b, "b");
  req_same_device(name, a, "a", out, "out");
  if (count(a) == 0) return;
  dispatch::run(a.device(), {&a, &b}, {&out}, [&](const dispatch::Operands& o) {
    Call c;
    c.a = o.in<float>(a);
    c.b = o.in<float>(b);
    c.out = o.out<float>(out);
    c.n = count(a);
    extra(c);
    return c;
  });
}

}  // namespace

void fill(Tensor& x, double value) {
  req_defined("fill", "x", x);
  if (count(x) == 0) return;
  dispatch::run(x.device(), {}, {&x}, [&](const dispatch::Operands& o) {
    return calls::Fill{o.out_raw(x), x.dtype(), count(x), value};
  });
}

void cast(const Tensor& src, Tensor& dst) {
  req_defined("cast", "src", src);
  req_defined("cast", "dst", dst);
  req_same_device("cast", src, "src", dst, "dst");
  auto floating = [](DType d) {
    return d == DType::f32 || d == DType::f64 || d == DType::bf16 || d == DType::f16;
  };
  COHORT_CHECK(floating(src.dtype()) && floating(dst.dtype()), "cast: ", dtype_name(src.dtype()),
               " -> ", dtype_name(dst.dtype()),
               " is not supported (floating-point dtypes only: f32, f64, bf16, f16)");
  COHORT_CHECK(src.numel() == dst.numel(), "cast: 'src' has ", src.numel(), " elements ",
               src.shape().str(), ", 'dst' has ", dst.numel(), " ", dst.shape().str());
  if (count(src) == 0) return;
  dispatch::run(src.device(), {&src}, {&dst}, [&](const dispatch::Operands& o) {
    return calls::Cast{o.in_raw(src), src.dtype(), o.out_raw(dst), dst.dtype(), count(src)};
  });
}

void add(const Tensor& a, const Tensor& b, Tensor& out, Activation act, float act_alpha) {
  binary<calls::Add>("add", a, b, out, [&](calls::Add& c) {
    c.f = act;
    c.alpha = act_alpha;
  });
}
void sub(const Tensor& a, const Tensor& b, Tensor& out) {
  binary<calls::Sub>("sub", a, b, out);
}
void mul(const Tensor& a, const Tensor& b, Tensor& out) {
  binary<calls::Mul>("mul", a, b, out);
}

namespace {
// The checks of an element-wise op from one f32 tensor into another of its shape and device.
void req_f32_map(const char* op, const Tensor& x, const char* xn, const Tensor& out,
                 const char* outn) {
  req_defined(op, xn, x);
  req_defined(op, outn, out);
  req_f32(op, xn, x);
  req_f32(op, outn, out);
  req_same_shape(op, x, xn, out, outn);
  req_same_device(op, x, xn, out, outn);
}
}  // namespace

void axpy(float alpha, const Tensor& x, Tensor& y) {
  req_f32_map("axpy", x, "x", y, "y");
  if (count(x) == 0) return;
  dispatch::run(x.device(), {&x}, {&y}, [&](const dispatch::Operands& o) {
    return calls::Axpy{alpha, o.in<float>(x), o.out<float>(y), count(x)};
  });
}

void scale(float alpha, const Tensor& x, Tensor& out) {
  req_f32_map("scale", x, "x", out, "out");
  if (count(x) == 0) return;
  dispatch::run(x.device(), {&x}, {&out}, [&](const dispatch::Operands& o) {
    return calls::Scale{alpha, o.in<float>(x), o.out<float>(out), count(x)};
  });
}

void clamp(const Tensor& x, float lo, float hi, Tensor& out) {
  req_f32_map("clamp", x, "x", out, "out");
  COHORT_CHECK(!(lo > hi) && lo == lo && hi == hi, "clamp: needs lo <= hi (neither NaN), got lo ",
               lo, " and hi ", hi);
  if (count(x) == 0) return;
  dispatch::run(x.device(), {&x}, {&out}, [&](const dispatch::Operands& o) {
    return calls::Clamp{lo, hi, o.in<float>(x), o.out<float>(out), count(x)};
  });
}

}  // namespace cohort::ops
