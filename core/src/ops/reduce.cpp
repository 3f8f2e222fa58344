// Reduction front ends over the last axis (reduce_sum, reduce_max, argmax) and the whole-tensor
// sum and max built on them (backends/common/ops/reduce.hpp); the max in stages (max_all,
// max_abs_all).
#include "cohort/core/ops.hpp"

#include <type_traits>

#include "cohort/backend/dispatch.hpp"
#include "cohort/core/device.hpp"
#include "cohort/core/error.hpp"
#include "ops/checks.hpp"

namespace cohort::ops {

using namespace detail;

namespace {

template <class Call>
void reduce_last(const char* name, const Tensor& x, Tensor& out) {
  req_defined(name, "x", x);
  req_defined(name, "out", out);
  req_f32(name, "x", x);
  COHORT_CHECK(x.rank() >= 1 && x.dim(-1) >= 1, name, ": x must have rank >= 1 and a non-empty "
               "last dimension, got ", x.shape().str());
  const std::int64_t cols = x.dim(-1);
  const std::int64_t rows = x.numel() / cols;
  COHORT_CHECK(out.numel() == rows, name, ": out has ", out.numel(), " elements (shape ",
               out.shape().str(), "), expected ", rows, " for x of shape ", x.shape().str());
  req_same_device(name, x, "x", out, "out");
  if constexpr (std::is_same_v<Call, calls::Argmax>) {
    COHORT_CHECK(out.dtype() == DType::i64, name, ": out must be i64, got ",
                 dtype_name(out.dtype()));
  } else {
    req_f32(name, "out", out);
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

void reduce_sum(const Tensor& x, Tensor& out) { reduce_last<calls::ReduceSum>("reduce_sum", x, out); }
void reduce_sum_sq(const Tensor& x, Tensor& out) {
  reduce_last<calls::ReduceSumSq>("reduce_sum_sq", x, out);
}
void reduce_max(const Tensor& x, Tensor& out) { reduce_last<calls::ReduceMax>("reduce_max", x, out); }
void argmax(const Tensor& x, Tensor& out) { reduce_last<calls::Argmax>("argmax", x, out); }

float sum(const Tensor& x) {
  req_defined("sum", "x", x);
  if (x.numel() == 0) return 0.0f;
  Tensor out = Tensor::empty({1}, DType::f32, x.device());
  reduce_sum(x.reshape({1, x.numel()}), out);
  return static_cast<float>(out.item());
}

void max_all(const Tensor& x, Tensor& out) {
  req_defined("max_all", "x", x);
  req_defined("max_all", "out", out);
  COHORT_CHECK(x.numel() > 0, "max_all of an empty tensor (shape ", x.shape().str(), ")");
  COHORT_CHECK(out.numel() == 1, "max_all: out has ", out.numel(), " elements (shape ",
               out.shape().str(), "), expected 1");
  constexpr std::int64_t kRow = 1024;
  Tensor cur = x.reshape({x.numel()});
  while (cur.numel() > kRow) {
    const std::int64_t n = cur.numel(), rows = n / kRow, tail = n - rows * kRow;
    Tensor part = Tensor::empty({rows + (tail > 0 ? 1 : 0)}, DType::f32, x.device());
    Tensor head = part.slice(0, rows);
    reduce_max(cur.slice(0, rows * kRow).reshape({rows, kRow}), head);
    if (tail > 0) {
      Tensor last = part.slice(rows, rows + 1);
      reduce_max(cur.slice(rows * kRow, n).reshape({1, tail}), last);
    }
    cur = part;
  }
  reduce_max(cur.reshape({1, cur.numel()}), out);
}

void max_abs_all(const Tensor& x, Tensor& out) {
  req_defined("max_abs_all", "x", x);
  Tensor both = Tensor::empty({2}, DType::f32, x.device());
  Tensor hi = both.slice(0, 1), lo = both.slice(1, 2);
  max_all(x, hi);
  Tensor neg = Tensor::empty(x.shape(), DType::f32, x.device());
  scale(-1.0f, x, neg);
  max_all(neg, lo);
  reduce_max(both.reshape({1, 2}), out);
}

float max(const Tensor& x) {
  req_defined("max", "x", x);
  COHORT_CHECK(x.numel() > 0, "max of an empty tensor (shape ", x.shape().str(), ")");
  Tensor out = Tensor::empty({1}, DType::f32, x.device());
  max_all(x, out);
  return static_cast<float>(out.item());
}

}  // namespace cohort::ops
