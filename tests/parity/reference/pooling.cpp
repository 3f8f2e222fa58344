// Reference of 2-D max and average pooling and their gradients, after PyTorch's max_pool2d
// (implicit -inf padding, dilation, the first maximum of a window wins, NaN beats any number)
// and avg_pool2d (the divisor is the window clipped to the padded input, or with
// count_include_pad = false only its part inside the image). Windows are enumerated directly.
#include <algorithm>
#include <cmath>

#include "reference.hpp"

namespace parity_ref {
namespace {

std::int64_t out_size(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                      std::int64_t dil) {
  return (in + 2 * pad - dil * (kernel - 1) - 1) / stride + 1;
}

// Window of output (i, j): calls f(ih, iw) for its taps inside the image; returns the divisor.
template <class F>
double window(const Pool& p, std::int64_t i, std::int64_t j, F&& f) {
  const std::int64_t h0 = i * p.stride_h - p.pad_h, w0 = j * p.stride_w - p.pad_w;
  std::int64_t inside = 0;
  for (std::int64_t r = 0; r < p.kh; ++r)
    for (std::int64_t s = 0; s < p.kw; ++s) {
      const std::int64_t ih = h0 + r * p.dil_h, iw = w0 + s * p.dil_w;
      if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) continue;
      ++inside;
      f(ih, iw);
    }
  if (!p.count_include_pad) return static_cast<double>(inside);
  // The window clipped to the padded input [-pad, size + pad).
  const std::int64_t h1 = std::min(h0 + p.kh, p.h + p.pad_h),
                     w1 = std::min(w0 + p.kw, p.w + p.pad_w);
  return static_cast<double>((h1 - h0) * (w1 - w0));
}

}  // namespace

std::int64_t Pool::oh() const { return out_size(h, kh, stride_h, pad_h, max ? dil_h : 1); }
std::int64_t Pool::ow() const { return out_size(w, kw, stride_w, pad_w, max ? dil_w : 1); }

void pool2d_forward(const Pool& p, const Vec& x, Vec* y, Vec* argmax) {
  const std::int64_t oh = p.oh(), ow = p.ow();
  y->assign(static_cast<std::size_t>(p.n * p.c * oh * ow), 0.0);
  argmax->assign(p.max ? y->size() : 0, 0.0);
  for (std::int64_t plane = 0; plane < p.n * p.c; ++plane)
    for (std::int64_t i = 0; i < oh; ++i)
      for (std::int64_t j = 0; j < ow; ++j) {
        const Vec::size_type at = static_cast<std::size_t>((plane * oh + i) * ow + j);
        const double* xp = x.data() + plane * p.h * p.w;
        double best = -INFINITY, sum = 0;
        std::int64_t where = -1;
        const double divisor = window(p, i, j, [&](std::int64_t ih, std::int64_t iw) {
          const double v = xp[ih * p.w + iw];
          sum += v;
          if (where < 0 || (!std::isnan(best) && (v > best || std::isnan(v)))) {
            best = v;
            where = ih * p.w + iw;
          }
        });
        (*y)[at] = p.max ? best : sum / divisor;
        if (p.max) (*argmax)[at] = static_cast<double>(where);
      }
}

Vec pool2d_backward(const Pool& p, const Vec& x, const Vec& dy) {
  const std::int64_t oh = p.oh(), ow = p.ow();
  Vec y, argmax;
  pool2d_forward(p, x, &y, &argmax);
  Vec dx(x.size(), 0.0);
  for (std::int64_t plane = 0; plane < p.n * p.c; ++plane)
    for (std::int64_t i = 0; i < oh; ++i)
      for (std::int64_t j = 0; j < ow; ++j) {
        const std::size_t at = static_cast<std::size_t>((plane * oh + i) * ow + j);
        double* dxp = dx.data() + plane * p.h * p.w;
        if (p.max) {
          dxp[static_cast<std::int64_t>(argmax[at])] += dy[at];
          continue;
        }
        std::vector<std::int64_t> taps;
        const double divisor = window(
            p, i, j, [&](std::int64_t ih, std::int64_t iw) { taps.push_back(ih * p.w + iw); });
        for (std::int64_t t : taps) dxp[t] += dy[at] / divisor;
      }
  return dx;
}

}  // namespace parity_ref
