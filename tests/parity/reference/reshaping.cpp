// Reference of the data-movement ops: permute, slice_copy, narrow and cat, by walking every
// output element's multi-index and reading the input element it names (torch.permute(...)
// .contiguous(), Tensor.narrow(...).copy_(...), torch.narrow, torch.cat). Nothing is computed,
// so the device must match exactly.
#include "reference.hpp"

namespace parity_ref {
namespace {

std::int64_t numel(const Dims& d) {
  std::int64_t n = 1;
  for (std::int64_t e : d) n *= e;
  return n;
}

// Row-major multi-index of flat position `flat` in `shape`.
Dims unflatten(std::int64_t flat, const Dims& shape) {
  Dims idx(shape.size());
  for (std::size_t a = shape.size(); a-- > 0;) {
    idx[a] = flat % shape[a];
    flat /= shape[a];
  }
  return idx;
}

std::int64_t flatten(const Dims& idx, const Dims& shape) {
  std::int64_t flat = 0;
  for (std::size_t a = 0; a < shape.size(); ++a) flat = flat * shape[a] + idx[a];
  return flat;
}

}  // namespace

Vec permute(const Vec& x, const Dims& shape, const std::vector<int>& perm) {
  const int rank = static_cast<int>(shape.size());
  Dims out_shape(rank);
  std::vector<int> p(rank);
  for (int a = 0; a < rank; ++a) {
    p[a] = perm[a] < 0 ? perm[a] + rank : perm[a];
    out_shape[a] = shape[p[a]];
  }
  Vec out(x.size());
  for (std::int64_t f = 0; f < numel(out_shape); ++f) {
    const Dims oi = unflatten(f, out_shape);
    Dims xi(rank);
    for (int a = 0; a < rank; ++a) xi[p[a]] = oi[a];  // output axis a is input axis p[a]
    out[f] = x[flatten(xi, shape)];
  }
  return out;
}

Vec slice_copy(const Vec& src, const Dims& src_shape, std::int64_t src_start, const Vec& dst0,
               const Dims& dst_shape, std::int64_t dst_start, std::int64_t length, int axis,
               bool accumulate) {
  const int rank = static_cast<int>(dst_shape.size());
  if (axis < 0) axis += rank;
  Vec dst = dst0;
  for (std::int64_t f = 0; f < numel(dst_shape); ++f) {
    Dims di = unflatten(f, dst_shape);
    const std::int64_t j = di[axis] - dst_start;
    if (j < 0 || j >= length) continue;  // outside the written rows: left as it was
    Dims si = di;
    si[axis] = src_start + j;
    for (int a = 0; a < axis; ++a)
      if (src_shape[a] == 1) si[a] = 0;  // broadcast
    const double v = src[flatten(si, src_shape)];
    dst[f] = accumulate ? f32(dst[f] + v) : v;
  }
  return dst;
}

Vec narrow(const Vec& x, const Dims& shape, int axis, std::int64_t start, std::int64_t length) {
  const int rank = static_cast<int>(shape.size());
  if (axis < 0) axis += rank;
  Dims out_shape = shape;
  out_shape[axis] = length;
  Vec out(static_cast<std::size_t>(numel(out_shape)));
  for (std::int64_t f = 0; f < numel(out_shape); ++f) {
    Dims i = unflatten(f, out_shape);
    i[axis] += start;
    out[f] = x[flatten(i, shape)];
  }
  return out;
}

Vec cat(const std::vector<Vec>& xs, const std::vector<Dims>& shapes, int axis) {
  const int rank = static_cast<int>(shapes[0].size());
  if (axis < 0) axis += rank;
  Dims out_shape = shapes[0];
  out_shape[axis] = 0;
  for (const Dims& s : shapes) out_shape[axis] += s[axis];
  Vec out(static_cast<std::size_t>(numel(out_shape)));
  for (std::int64_t f = 0; f < numel(out_shape); ++f) {
    Dims i = unflatten(f, out_shape);
    std::size_t t = 0;
    while (i[axis] >= shapes[t][axis]) i[axis] -= shapes[t++][axis];  // which input holds it
    out[f] = xs[t][flatten(i, shapes[t])];
  }
  return out;
}

}  // namespace parity_ref
