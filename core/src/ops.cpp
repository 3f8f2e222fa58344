// Argument checks for tensor ops, then one call into the device's op table.
#include "cohort/core/ops.hpp"

#include <type_traits>

#include "cohort/backend/dispatch.hpp"

namespace cohort::ops {
namespace {

std::size_t count(const Tensor& t) { return static_cast<std::size_t>(t.numel()); }

void require_defined(const char* op, const char* arg, const Tensor& t) {
  COHORT_CHECK(t.defined(), op, ": argument '", arg, "' is an undefined tensor");
}

void require_same_device(const char* op, const Tensor& a, const char* an, const Tensor& b,
                         const char* bn) {
  COHORT_CHECK(&a.device() == &b.device(), op, ": '", an, "' is on ", a.device().name(),
               " but '", bn, "' is on ", b.device().name());
}

void require_f32(const char* op, const char* arg, const Tensor& t) {
  COHORT_CHECK(t.dtype() == DType::f32, op, ": argument '", arg, "' must be f32, got ",
               dtype_name(t.dtype()));
}

void require_same_shape(const char* op, const Tensor& a, const char* an, const Tensor& b,
                        const char* bn) {
  COHORT_CHECK(a.shape() == b.shape(), op, ": shapes differ: '", an, "' is ", a.shape().str(),
               ", '", bn, "' is ", b.shape().str());
}

template <class Call>
void binary(const char* name, const Tensor& a, const Tensor& b, Tensor& out) {
  require_defined(name, "a", a);
  require_defined(name, "b", b);
  require_defined(name, "out", out);
  require_f32(name, "a", a);
  require_f32(name, "b", b);
  require_f32(name, "out", out);
  require_same_shape(name, a, "a", b, "b");
  require_same_shape(name, a, "a", out, "out");
  require_same_device(name, a, "a", b, "b");
  require_same_device(name, a, "a", out, "out");
  if (count(a) == 0) return;
  dispatch::run(a.device(), {&a, &b}, {&out}, [&](const dispatch::Operands& o) {
    Call c;
    c.a = o.in<float>(a);
    c.b = o.in<float>(b);
    c.out = o.out<float>(out);
    c.n = count(a);
    return c;
  });
}

template <class Call>
void reduce_last(const char* name, const Tensor& x, Tensor& out) {
  require_defined(name, "x", x);
  require_defined(name, "out", out);
  require_f32(name, "x", x);
  COHORT_CHECK(x.rank() >= 1 && x.dim(-1) >= 1, name, ": x must have rank >= 1 and a non-empty "
               "last dimension, got ", x.shape().str());
  const std::int64_t cols = x.dim(-1);
  const std::int64_t rows = x.numel() / cols;
  COHORT_CHECK(out.numel() == rows, name, ": out has ", out.numel(), " elements (shape ",
               out.shape().str(), "), expected ", rows, " for x of shape ", x.shape().str());
  require_same_device(name, x, "x", out, "out");
  if constexpr (std::is_same_v<Call, calls::Argmax>) {
    COHORT_CHECK(out.dtype() == DType::i64, name, ": out must be i64, got ",
                 dtype_name(out.dtype()));
  } else {
    require_f32(name, "out", out);
  }
  if (rows == 0) return;
  using Out = std::remove_pointer_t<decltype(Call::out)>;
  dispatch::run(x.device(), {&x}, {&out}, [&](const dispatch::Operands& o) {
    Call c;
    c.x = o.in<float>(x);
    c.rows = static_cast<std::size_t>(rows);
    c.cols = static_cast<std::size_t>(cols);
    c.out = o.out<Out>(out);
    return c;
  });
}

}  // namespace

void fill(Tensor& x, double value) {
  require_defined("fill", "x", x);
  if (count(x) == 0) return;
  dispatch::run(x.device(), {}, {&x}, [&](const dispatch::Operands& o) {
    return calls::Fill{o.out_raw(x), x.dtype(), count(x), value};
  });
}

void cast(const Tensor& src, Tensor& dst) {
  require_defined("cast", "src", src);
  require_defined("cast", "dst", dst);
  require_same_device("cast", src, "src", dst, "dst");
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

void add(const Tensor& a, const Tensor& b, Tensor& out) {
  binary<calls::Add>("add", a, b, out);
}
void sub(const Tensor& a, const Tensor& b, Tensor& out) {
  binary<calls::Sub>("sub", a, b, out);
}
void mul(const Tensor& a, const Tensor& b, Tensor& out) {
  binary<calls::Mul>("mul", a, b, out);
}

void axpy(float alpha, const Tensor& x, Tensor& y) {
  require_defined("axpy", "x", x);
  require_defined("axpy", "y", y);
  require_f32("axpy", "x", x);
  require_f32("axpy", "y", y);
  require_same_shape("axpy", x, "x", y, "y");
  require_same_device("axpy", x, "x", y, "y");
  if (count(x) == 0) return;
  dispatch::run(x.device(), {&x}, {&y}, [&](const dispatch::Operands& o) {
    return calls::Axpy{alpha, o.in<float>(x), o.out<float>(y), count(x)};
  });
}

void scale(float alpha, const Tensor& x, Tensor& out) {
  require_defined("scale", "x", x);
  require_defined("scale", "out", out);
  require_f32("scale", "x", x);
  require_f32("scale", "out", out);
  require_same_shape("scale", x, "x", out, "out");
  require_same_device("scale", x, "x", out, "out");
  if (count(x) == 0) return;
  dispatch::run(x.device(), {&x}, {&out}, [&](const dispatch::Operands& o) {
    return calls::Scale{alpha, o.in<float>(x), o.out<float>(out), count(x)};
  });
}

void sum_last(const Tensor& x, Tensor& out) { reduce_last<calls::ReduceSum>("sum_last", x, out); }
void max_last(const Tensor& x, Tensor& out) { reduce_last<calls::ReduceMax>("max_last", x, out); }
void argmax_last(const Tensor& x, Tensor& out) { reduce_last<calls::Argmax>("argmax_last", x, out); }

float sum(const Tensor& x) {
  require_defined("sum", "x", x);
  if (x.numel() == 0) return 0.0f;
  Tensor out = Tensor::empty({1}, DType::f32, x.device());
  sum_last(x.reshape({1, x.numel()}), out);
  return static_cast<float>(out.item());
}

float max(const Tensor& x) {
  require_defined("max", "x", x);
  COHORT_CHECK(x.numel() > 0, "max of an empty tensor (shape ", x.shape().str(), ")");
  Tensor out = Tensor::empty({1}, DType::f32, x.device());
  max_last(x.reshape({1, x.numel()}), out);
  return static_cast<float>(out.item());
}

namespace {
// The checks shared by gemm (2-D operands, lead 0) and gemm_batched (3-D, lead 1: the batch
// extent first): dtypes, ranks, extents and devices. Returns the GEMM of one matrix, with
// m, n, k, leading dimensions, alpha and beta filled in.
GemmArgs checked_gemm(const char* op, const Tensor& a, bool trans_a, const Tensor& b, bool trans_b,
                      const Tensor& c, float alpha, float beta, int lead) {
  require_defined(op, "a", a);
  require_defined(op, "b", b);
  require_defined(op, "c", c);
  require_f32(op, "a", a);
  require_f32(op, "b", b);
  require_f32(op, "c", c);
  const std::size_t rank = static_cast<std::size_t>(lead) + 2;
  COHORT_CHECK(a.rank() == rank && b.rank() == rank && c.rank() == rank, op, ": expected ",
               lead ? "3-D tensors [batch, rows, cols]" : "2-D tensors", ", got a ",
               a.shape().str(), ", b ", b.shape().str(), ", c ", c.shape().str());
  if (lead)
    COHORT_CHECK(b.dim(0) == a.dim(0) && c.dim(0) == a.dim(0), op, ": batch extents differ: a ",
                 a.shape().str(), ", b ", b.shape().str(), ", c ", c.shape().str());
  const char* each = lead ? "[i]" : "";
  GemmArgs g;
  g.trans_a = trans_a;
  g.trans_b = trans_b;
  g.m = trans_a ? a.dim(lead + 1) : a.dim(lead);
  g.k = trans_a ? a.dim(lead) : a.dim(lead + 1);
  const std::int64_t kb = trans_b ? b.dim(lead + 1) : b.dim(lead);
  g.n = trans_b ? b.dim(lead) : b.dim(lead + 1);
  COHORT_CHECK(g.k == kb, op, ": inner dimensions differ: op(a", each, ") is [", g.m, ", ", g.k,
               "] (a ", a.shape().str(), trans_a ? " transposed" : "", "), op(b", each, ") is [",
               kb, ", ", g.n, "] (b ", b.shape().str(), trans_b ? " transposed" : "", ")");
  COHORT_CHECK(c.dim(lead) == g.m && c.dim(lead + 1) == g.n, op, ": c is ", c.shape().str(),
               ", expected ", lead ? "[batch, " : "[", g.m, ", ", g.n, "]");
  require_same_device(op, a, "a", b, "b");
  require_same_device(op, a, "a", c, "c");
  g.alpha = alpha;
  g.beta = beta;
  g.lda = a.dim(lead + 1) > 0 ? a.dim(lead + 1) : 1;
  g.ldb = b.dim(lead + 1) > 0 ? b.dim(lead + 1) : 1;
  g.ldc = g.n;
  return g;
}
}  // namespace

void gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, Tensor& c, float alpha,
          float beta) {
  const GemmArgs g = checked_gemm("gemm", a, trans_a, b, trans_b, c, alpha, beta, 0);
  if (g.m == 0 || g.n == 0) return;
  dispatch::run(a.device(), {&a, &b}, {&c}, [&](const dispatch::Operands& o) {
    calls::Gemm call;
    static_cast<GemmArgs&>(call) = g;
    call.a = o.in<float>(a);
    call.b = o.in<float>(b);
    call.c = o.out<float>(c);
    return call;
  });
}

void gemm_batched(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, Tensor& c,
                  float alpha, float beta) {
  const GemmArgs g = checked_gemm("gemm_batched", a, trans_a, b, trans_b, c, alpha, beta, 1);
  if (a.dim(0) == 0 || g.m == 0 || g.n == 0) return;
  dispatch::run(a.device(), {&a, &b}, {&c}, [&](const dispatch::Operands& o) {
    calls::GemmBatched call;
    static_cast<GemmArgs&>(call) = g;
    call.batch = a.dim(0);
    call.stride_a = a.dim(1) * a.dim(2);
    call.stride_b = b.dim(1) * b.dim(2);
    call.stride_c = g.m * g.n;
    call.a = o.in<float>(a);
    call.b = o.in<float>(b);
    call.c = o.out<float>(c);
    return call;
  });
}

Tensor bmm(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  require_defined("bmm", "a", a);
  require_defined("bmm", "b", b);
  COHORT_CHECK(a.rank() == 3 && b.rank() == 3, "bmm: expected 3-D tensors, got a ",
               a.shape().str(), ", b ", b.shape().str());
  const std::int64_t m = trans_a ? a.dim(2) : a.dim(1);
  const std::int64_t n = trans_b ? b.dim(1) : b.dim(2);
  Tensor c = Tensor::empty({a.dim(0), m, n}, DType::f32, a.device());
  gemm_batched(a, trans_a, b, trans_b, c, 1.0f, 0.0f);
  return c;
}

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  require_defined("matmul", "a", a);
  require_defined("matmul", "b", b);
  COHORT_CHECK(a.rank() == 2 && b.rank() == 2, "matmul: expected 2-D tensors, got a ",
               a.shape().str(), ", b ", b.shape().str());
  const std::int64_t m = trans_a ? a.dim(1) : a.dim(0);
  const std::int64_t n = trans_b ? b.dim(0) : b.dim(1);
  Tensor c = Tensor::empty({m, n}, DType::f32, a.device());
  gemm(a, trans_a, b, trans_b, c, 1.0f, 0.0f);
  return c;
}

}  // namespace cohort::ops
