// Reshaping front ends and the tensor manipulation built on them: permute (with the simplification
// of a permutation to its fewest axes), slice_copy, narrow, cat. One call of the op table per
// copy (backends/common/ops/reshape.hpp).
#include "cohort/core/layer_ops.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "cohort/backend/dispatch.hpp"
#include "cohort/core/device.hpp"
#include "cohort/core/error.hpp"
#include "ops/checks.hpp"

namespace cohort::ops {

using namespace detail;

// ---- data movement ----

namespace {
// Two tensors whose memory ranges overlap (the same storage, or views of it) cannot be the input
// and output of a copy whose items read and write in different orders.
void req_disjoint(const char* op, const Tensor& a, const char* an, const Tensor& b,
                  const char* bn) {
  const auto* pa = static_cast<const char*>(a.raw());
  const auto* pb = static_cast<const char*>(b.raw());
  COHORT_CHECK(pa + a.nbytes() <= pb || pb + b.nbytes() <= pa || a.nbytes() == 0 ||
                   b.nbytes() == 0,
               op, ": '", an, "' ", a.shape().str(), " and '", bn, "' ", b.shape().str(),
               " overlap in memory");
}

std::string perm_str(const std::vector<int>& perm) {
  std::string s = "(";
  for (std::size_t i = 0; i < perm.size(); ++i) s += (i ? ", " : "") + std::to_string(perm[i]);
  return s + ")";
}

// perm with negative entries resolved; throws unless it is a permutation of 0..rank-1.
std::vector<int> checked_perm(const char* op, const std::vector<int>& perm, const Shape& s) {
  const int rank = static_cast<int>(s.rank());
  COHORT_CHECK(static_cast<int>(perm.size()) == rank, op, ": permutation ", perm_str(perm),
               " has ", perm.size(), " entries for the ", rank, "-D tensor ", s.str());
  std::vector<int> p(perm.size());
  std::vector<bool> seen(perm.size(), false);
  for (std::size_t a = 0; a < perm.size(); ++a) {
    const int v = perm[a] < 0 ? perm[a] + rank : perm[a];
    COHORT_CHECK(v >= 0 && v < rank && !seen[static_cast<std::size_t>(v)], op, ": ",
                 perm_str(perm), " is not a permutation of the axes of ", s.str());
    seen[static_cast<std::size_t>(v)] = true;
    p[a] = v;
  }
  return p;
}

// The smallest equivalent permutation: extent-1 axes dropped, output neighbours that are input
// neighbours in the same order merged into one axis.
PermuteArgs simplify_permutation(const char* op, const Shape& s, const std::vector<int>& p) {
  const int rank = static_cast<int>(s.rank());
  // Output axes that carry data, as input axes.
  std::vector<int> out_axes;
  for (int ax : p)
    if (s[ax] != 1) out_axes.push_back(ax);
  // Runs of output axes whose input axes are consecutive: each run is one merged axis, holding
  // the input axes [first, last] (no extent-1 axis lies between: those were dropped, and a run
  // over a dropped axis is still contiguous in memory, so it may span it).
  struct Run {
    int first, last;
  };
  std::vector<Run> runs;
  for (int ax : out_axes) {
    if (!runs.empty()) {
      int next = runs.back().last + 1;
      while (next < rank && s[next] == 1) ++next;  // skip dropped axes
      if (next == ax) {
        runs.back().last = ax;
        continue;
      }
    }
    runs.push_back({ax, ax});
  }
  PermuteArgs a;
  if (runs.empty()) return a;  // a single element (or every extent 1): rank 1, dims {1}
  COHORT_CHECK(static_cast<int>(runs.size()) <= PermuteArgs::max_rank, op, ": permuting ",
               s.str(), " by ", perm_str(p), " needs ", runs.size(),
               " axes after merging neighbours, at most ", PermuteArgs::max_rank,
               " are supported");
  // Merged input axes in input order; the permutation maps output run r to its input rank.
  std::vector<int> order(runs.size());
  for (std::size_t r = 0; r < runs.size(); ++r) order[r] = static_cast<int>(r);
  std::sort(order.begin(), order.end(), [&](int x, int y) {
    return runs[static_cast<std::size_t>(x)].first < runs[static_cast<std::size_t>(y)].first;
  });
  a.rank = static_cast<int>(runs.size());
  for (int k = 0; k < a.rank; ++k) {
    const Run& run = runs[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])];
    i64 extent = 1;
    for (int ax = run.first; ax <= run.last; ++ax) extent *= s[ax];
    a.dims[k] = extent;
    a.perm[order[static_cast<std::size_t>(k)]] = k;
  }
  return a;
}
}  // namespace

std::vector<int> inverse_permutation(const std::vector<int>& perm) {
  const int rank = static_cast<int>(perm.size());
  std::vector<int> q(perm.size(), -1);
  int a = 0;
  for (int v : perm) {
    if (v < 0) v += rank;
    COHORT_CHECK(v >= 0 && v < rank && q[static_cast<std::size_t>(v)] < 0,
                 "inverse_permutation: ", perm_str(perm), " is not a permutation");
    q[static_cast<std::size_t>(v)] = a++;
  }
  return q;
}

void permute(const Tensor& x, const std::vector<int>& perm, Tensor& out) {
  const char* op = "permute";
  req_f32(op, "x", x);
  const std::vector<int> p = checked_perm(op, perm, x.shape());
  std::vector<i64> dims;
  for (int ax : p) dims.push_back(x.dim(ax));
  req_like(op, "out", out, Shape(dims), x, "x");
  if (x.numel() == 0) return;
  req_disjoint(op, x, "x", out, "out");
  const PermuteArgs a = simplify_permutation(op, x.shape(), p);
  dispatch::run(x.device(), {&x}, {&out}, [&](const dispatch::Operands& o) {
    return calls::Permute{a, o.in<float>(x), o.out<float>(out)};
  });
}

Tensor permute(const Tensor& x, const std::vector<int>& perm) {
  req_f32("permute", "x", x);
  const std::vector<int> p = checked_perm("permute", perm, x.shape());
  std::vector<i64> dims;
  for (int ax : p) dims.push_back(x.dim(ax));
  Tensor out = Tensor::empty(Shape(dims), DType::f32, x.device());
  permute(x, p, out);
  return out;
}

void slice_copy(const Tensor& src, i64 src_start, Tensor& dst, i64 dst_start, i64 length,
                int axis, bool accumulate) {
  const char* op = "slice_copy";
  req_f32(op, "src", src);
  req_f32(op, "dst", dst);
  req_same_device(op, src, "src", dst, "dst");
  COHORT_CHECK(src.rank() == dst.rank() && src.rank() >= 1, op, ": src ", src.shape().str(),
               " and dst ", dst.shape().str(), " must have the same rank (>= 1)");
  const int ax = norm_axis(op, axis, dst);
  bool after_same = true, before_same = true, before_ones = true;
  for (int i = 0; i < static_cast<int>(dst.rank()); ++i) {
    if (i > ax && src.dim(i) != dst.dim(i)) after_same = false;
    if (i < ax && src.dim(i) != dst.dim(i)) before_same = false;
    if (i < ax && src.dim(i) != 1) before_ones = false;
  }
  COHORT_CHECK(after_same && (before_same || before_ones), op, ": src ", src.shape().str(),
               " and dst ", dst.shape().str(), " differ on an axis other than ", ax,
               " (src may differ only by being 1 on every axis before it, to be broadcast)");
  COHORT_CHECK(length >= 0 && src_start >= 0 && src_start + length <= src.dim(ax) &&
                   dst_start >= 0 && dst_start + length <= dst.dim(ax),
               op, ": rows [", src_start, ", ", src_start + length, ") of src ", src.shape().str(),
               " to rows [", dst_start, ", ", dst_start + length, ") of dst ", dst.shape().str(),
               " along axis ", ax, " are out of range");
  const ChannelDims d = dims_around(dst.shape(), ax);  // [outer, rows, inner]
  SliceCopyArgs a;
  a.outer = d.outer;
  a.inner = d.inner;
  a.length = length;
  a.src_len = src.dim(ax);
  a.src_start = src_start;
  a.dst_len = d.channels;
  a.dst_start = dst_start;
  a.src_broadcast = !before_same;
  a.accumulate = accumulate;
  if (a.outer * a.length * a.inner == 0) return;
  req_disjoint(op, src, "src", dst, "dst");
  dispatch::run(dst.device(), {&src}, {&dst}, [&](const dispatch::Operands& o) {
    return calls::SliceCopy{a, o.in<float>(src), o.out<float>(dst)};
  });
}

Tensor narrow(const Tensor& x, int axis, i64 start, i64 length) {
  req_f32("narrow", "x", x);
  const int ax = norm_axis("narrow", axis, x);
  COHORT_CHECK(length >= 0 && start >= 0 && start + length <= x.dim(ax), "narrow: rows [", start,
               ", ", start + length, ") along axis ", ax, " are out of range for ",
               x.shape().str());
  std::vector<i64> dims = x.shape().dims();
  dims[static_cast<std::size_t>(ax)] = length;
  Tensor out = Tensor::empty(Shape(dims), DType::f32, x.device());
  slice_copy(x, start, out, 0, length, ax);
  return out;
}

Tensor cat(const std::vector<Tensor>& xs, int axis) {
  COHORT_CHECK(!xs.empty(), "cat: no tensors");
  for (const Tensor& x : xs) req_f32("cat", "xs[i]", x);
  const int ax = norm_axis("cat", axis, xs[0]);
  std::vector<i64> dims = xs[0].shape().dims();
  i64 total = 0;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    bool fits = xs[k].rank() == xs[0].rank();
    for (int i = 0; fits && i < static_cast<int>(xs[0].rank()); ++i)
      fits = i == ax || xs[k].dim(i) == xs[0].dim(i);
    COHORT_CHECK(fits, "cat: xs[", k, "] is ", xs[k].shape().str(), ", xs[0] is ",
                 xs[0].shape().str(), "; they may differ only along axis ", ax);
    req_same_device("cat", xs[0], "xs[0]", xs[k], "xs[i]");
    total += xs[k].dim(ax);
  }
  dims[static_cast<std::size_t>(ax)] = total;
  Tensor out = Tensor::empty(Shape(dims), DType::f32, xs[0].device());
  i64 at = 0;
  for (const Tensor& x : xs) {
    slice_copy(x, 0, out, at, x.dim(ax), ax);
    at += x.dim(ax);
  }
  return out;
}

}  // namespace cohort::ops
