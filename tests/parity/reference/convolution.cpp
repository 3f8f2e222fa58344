// Reference of the 2-D convolution and its two gradients, straight from PyTorch's Conv2d
// definition (cross-correlation; x read as 0 outside the image):
//   y[b, o, i, j] = bias[o] + sum_{ci, p, q} w[o, ci, p, q] *
//                   x[b, g C/G + ci, i sh - ph + p dh, j sw - pw + q dw],  g = o / (K / G)
// dx and dw are the same sum seen from x and from w. Seven nested loops, double accumulation.
#include "reference.hpp"

namespace parity_ref {
namespace {

std::int64_t out_size(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                      std::int64_t dil) {
  const std::int64_t span = in + 2 * pad - dil * (kernel - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

// Calls f(x index, w index, y index) for every product of the convolution sum.
template <class F>
void each_product(const Conv& p, F&& f) {
  const std::int64_t cg = p.c / p.groups, kg = p.k / p.groups, oh = p.oh(), ow = p.ow();
  for (std::int64_t b = 0; b < p.n; ++b)
    for (std::int64_t o = 0; o < p.k; ++o) {
      const std::int64_t g = o / kg;
      for (std::int64_t i = 0; i < oh; ++i)
        for (std::int64_t j = 0; j < ow; ++j)
          for (std::int64_t ci = 0; ci < cg; ++ci)
            for (std::int64_t r = 0; r < p.r; ++r) {
              const std::int64_t ih = i * p.stride_h - p.pad_h + r * p.dil_h;
              if (ih < 0 || ih >= p.h) continue;
              for (std::int64_t s = 0; s < p.s; ++s) {
                const std::int64_t iw = j * p.stride_w - p.pad_w + s * p.dil_w;
                if (iw < 0 || iw >= p.w) continue;
                const std::int64_t xc = g * cg + ci;
                f(((b * p.c + xc) * p.h + ih) * p.w + iw, ((o * cg + ci) * p.r + r) * p.s + s,
                  ((b * p.k + o) * oh + i) * ow + j);
              }
            }
    }
}

}  // namespace

std::int64_t Conv::oh() const { return out_size(h, r, stride_h, pad_h, dil_h); }
std::int64_t Conv::ow() const { return out_size(w, s, stride_w, pad_w, dil_w); }

Vec conv2d_forward(const Conv& p, const Vec& x, const Vec& w, const Vec& bias, Act f,
                   double alpha) {
  const std::int64_t plane = p.oh() * p.ow();
  Vec y(static_cast<std::size_t>(p.n * p.k * plane), 0.0);
  each_product(p,
               [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { y[yi] += x[xi] * w[wi]; });
  for (std::int64_t yi = 0; yi < static_cast<std::int64_t>(y.size()); ++yi) {
    const std::int64_t o = (yi / plane) % p.k;
    y[yi] = activate(f, alpha, y[yi] + (bias.empty() ? 0.0 : bias[o]));
  }
  return y;
}

Vec conv2d_backward_data(const Conv& p, const Vec& dy, const Vec& w) {
  Vec dx(static_cast<std::size_t>(p.n * p.c * p.h * p.w), 0.0);
  each_product(
      p, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { dx[xi] += dy[yi] * w[wi]; });
  return dx;
}

void conv2d_backward_filter(const Conv& p, const Vec& x, const Vec& dy, const Vec& dw0,
                            const Vec& dbias0, Vec* dw, Vec* dbias) {
  *dw = dw0;
  each_product(
      p, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { (*dw)[wi] += dy[yi] * x[xi]; });
  *dbias = dbias0;
  if (dbias0.empty()) return;
  const std::int64_t plane = p.oh() * p.ow();
  for (std::int64_t b = 0; b < p.n; ++b)
    for (std::int64_t o = 0; o < p.k; ++o)
      for (std::int64_t i = 0; i < plane; ++i) (*dbias)[o] += dy[(b * p.k + o) * plane + i];
}

}  // namespace parity_ref
