// Reference of the tensor ops: fill, cast and the element-wise arithmetic. Each result is the
// exact value rounded once to the output type (what IEEE arithmetic in that type gives for one
// operation), computed from the format's parameters rather than from any conversion routine of
// cohort, so a wrong rounding (ties, subnormals, overflow) in the device's code shows up here.
#include <algorithm>
#include <cmath>

#include "reference.hpp"

namespace parity_ref {
namespace {

// v rounded to nearest, ties to even, in a binary format with `digits` significand bits
// (the implicit one included), smallest normal exponent `emin` and largest finite value `max`.
double round_binary(double v, int digits, int emin, double max) {
  if (std::isnan(v) || std::isinf(v) || v == 0) return v;
  int e = 0;
  std::frexp(v, &e);                       // |v| in [2^(e-1), 2^e)
  const int lead = std::max(e - 1, emin);  // subnormals share emin's quantum
  const double quantum = std::ldexp(1.0, lead - (digits - 1));
  const double r = std::nearbyint(v / quantum) * quantum;  // default mode: ties to even
  return std::fabs(r) > max ? std::copysign(INFINITY, v) : r;
}

}  // namespace

double round_to(Type t, double v) {
  switch (t) {
    case Type::f64:
      return v;
    case Type::f32:
      return round_binary(v, 24, -126, std::ldexp(2.0 - std::ldexp(1.0, -23), 127));
    case Type::bf16:
      return round_binary(v, 8, -126, std::ldexp(2.0 - std::ldexp(1.0, -7), 127));
    case Type::f16:
      return round_binary(v, 11, -14, 65504.0);
    case Type::i32:
    case Type::i64:
    case Type::u8:
      return std::trunc(v);
  }
  return v;
}

double f32(double v) { return round_to(Type::f32, v); }

Vec fill(Type t, std::size_t n, double value) { return Vec(n, round_to(t, value)); }

Vec cast(const Vec& src, Type from, Type to) {
  const bool via_f32 = from == Type::f64 && (to == Type::bf16 || to == Type::f16);
  Vec out(src.size());
  for (std::size_t i = 0; i < src.size(); ++i)
    out[i] = round_to(to, via_f32 ? f32(src[i]) : src[i]);
  return out;
}

// The sum and the product of two f32 values are exact in double (for these magnitudes), so one
// rounding to f32 gives the correctly rounded f32 result.
Vec add(const Vec& a, const Vec& b) {
  Vec out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = f32(a[i] + b[i]);
  return out;
}
Vec sub(const Vec& a, const Vec& b) {
  Vec out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = f32(a[i] - b[i]);
  return out;
}
Vec mul(const Vec& a, const Vec& b) {
  Vec out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = f32(a[i] * b[i]);
  return out;
}
// y + alpha x as two f32 operations, the product rounded before the sum (no fused multiply-add:
// the device must not contract them either, as PyTorch's axpy-shaped tensor ops do not).
Vec axpy(double alpha, const Vec& x, const Vec& y) {
  Vec out(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) out[i] = f32(y[i] + f32(alpha * x[i]));
  return out;
}
Vec scale(double alpha, const Vec& x) {
  Vec out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = f32(alpha * x[i]);
  return out;
}

Vec clamp(const Vec& x, double lo, double hi) {
  Vec out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    out[i] = std::isnan(x[i]) ? x[i] : std::min(std::max(x[i], lo), hi);
  return out;
}

}  // namespace parity_ref
