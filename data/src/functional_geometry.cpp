// affine() and rotate() of functional.hpp, as torchvision's tensor path computes them: the
// inverse affine matrix in double (_get_inverse_affine_matrix), a float32 sampling grid over the
// output's pixel centres (_affine_grid), and grid_sample(align_corners=False, padding zeros) with
// nearest (round half to even) or bilinear weights; an explicit fill goes through a mask of ones
// sampled the same way (_apply_grid_transform). Compiled with -ffp-contract=off.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cohort/core/error.hpp"
#include "clones.hpp"
#include "cohort/data/functional.hpp"

namespace cohort::data {

Interpolation parse_interpolation(const std::string& name) {
  if (name == "nearest") return Interpolation::nearest;
  if (name == "bilinear") return Interpolation::bilinear;
  if (name == "bicubic") return Interpolation::bicubic;
  COHORT_FAIL("interpolation '", name, "' is not one of nearest, bilinear, bicubic");
}

const char* interpolation_name(Interpolation mode) {
  switch (mode) {
    case Interpolation::nearest: return "nearest";
    case Interpolation::bilinear: return "bilinear";
    case Interpolation::bicubic: return "bicubic";
  }
  return "?";
}

namespace functional {
namespace {

constexpr double kPi = 3.14159265358979323846;
double radians(double deg) { return deg * (kPi / 180.0); }

// _get_inverse_affine_matrix(center, angle, translate, scale, shear), inverted = True.
void inverse_matrix(const double center[2], double angle, const double translate[2],
                    double scale, const double shear[2], double m[6]) {
  const double rot = radians(angle), sx = radians(shear[0]), sy = radians(shear[1]);
  const double cx = center[0], cy = center[1], tx = translate[0], ty = translate[1];
  const double cos_sy = std::cos(sy), tan_sx = std::tan(sx), rot_minus_sy = rot - sy;
  const double cx_plus_tx = cx + tx, cy_plus_ty = cy + ty;
  const double a = std::cos(rot_minus_sy) / cos_sy;
  const double b = -(a * tan_sx + std::sin(rot));
  const double c = std::sin(rot_minus_sy) / cos_sy;
  const double d = std::cos(rot) - c * tan_sx;
  m[0] = d / scale;
  m[1] = -b / scale;
  m[2] = 0.0;
  m[3] = -c / scale;
  m[4] = a / scale;
  m[5] = 0.0;
  m[2] += cx - m[0] * cx_plus_tx - m[1] * cy_plus_ty;
  m[5] += cy - m[3] * cx_plus_tx - m[4] * cy_plus_ty;
}

void check_fill(const char* who, const Shape& s, const std::vector<float>& fill) {
  COHORT_CHECK(fill.size() <= 1 || static_cast<std::int64_t>(fill.size()) == s[0], who, ": ",
               fill.size(), " fill values for an image with ", s[0],
               " channels (give none, one, or one per channel)");
}

// Samples `in` at the grid of matrix `m` into `out` (a different buffer).
COHORT_DATA_CLONES void grid_transform(const float* in, const Shape& s, const double m[6], Interpolation mode,
                    const std::vector<float>& fill, float* out) {
  const std::int64_t C = s[0], H = s[1], W = s[2];
  float theta[6];
  for (int i = 0; i < 6; ++i) theta[i] = static_cast<float>(m[i]);
  const float hw = 0.5f * static_cast<float>(W), hh = 0.5f * static_cast<float>(H);
  // rescaled_theta = theta^T / [0.5 w, 0.5 h]: column 0 (x) over 0.5 w, column 1 (y) over 0.5 h.
  const float r00 = theta[0] / hw, r10 = theta[1] / hw, r20 = theta[2] / hw;
  const float r01 = theta[3] / hh, r11 = theta[4] / hh, r21 = theta[5] / hh;
  const float sx = static_cast<float>(W) / 2.0f, sy = static_cast<float>(H) / 2.0f;
  const bool has_fill = !fill.empty();
  for (std::int64_t oy = 0; oy < H; ++oy) {
    const float y = (1.0f - static_cast<float>(H)) * 0.5f + static_cast<float>(oy);
    for (std::int64_t ox = 0; ox < W; ++ox) {
      const float x = (1.0f - static_cast<float>(W)) * 0.5f + static_cast<float>(ox);
      // The grid's product (bmm) and grid_sample's unnormalize (align_corners=False:
      // (g + 1) size / 2 - 0.5), fused as ATen's kernels fuse them.
      const float gx = std::fma(y, r10, x * r00) + r20;
      const float gy = std::fma(y, r11, x * r01) + r21;
      const float ix = std::fma(gx + 1.0f, sx, -0.5f);
      const float iy = std::fma(gy + 1.0f, sy, -0.5f);
      const std::int64_t o = oy * W + ox;
      if (mode == Interpolation::nearest) {
        const float nx = std::nearbyint(ix), ny = std::nearbyint(iy);
        const bool inside = nx >= 0.0f && nx < static_cast<float>(W) && ny >= 0.0f &&
                            ny < static_cast<float>(H);
        const std::int64_t src = inside ? static_cast<std::int64_t>(ny) * W +
                                              static_cast<std::int64_t>(nx)
                                        : 0;
        for (std::int64_t c = 0; c < C; ++c) {
          float v = inside ? in[c * H * W + src] : 0.0f;
          // the mask is 1 inside and 0 outside: where(mask < 0.5, fill, v)
          if (has_fill && !inside) v = fill[fill.size() == 1 ? 0 : static_cast<std::size_t>(c)];
          out[c * H * W + o] = v;
        }
      } else {
        const float x0 = std::floor(ix), y0 = std::floor(iy);
        const float tw = ix - x0, te = 1.0f - tw, tn = iy - y0, ts = 1.0f - tn;
        const float wts[4] = {ts * te, ts * tw, tn * te, tn * tw};  // nw, ne, sw, se
        const std::int64_t xs[4] = {static_cast<std::int64_t>(x0), static_cast<std::int64_t>(x0) + 1,
                                    static_cast<std::int64_t>(x0), static_cast<std::int64_t>(x0) + 1};
        const std::int64_t ys[4] = {static_cast<std::int64_t>(y0), static_cast<std::int64_t>(y0),
                                    static_cast<std::int64_t>(y0) + 1, static_cast<std::int64_t>(y0) + 1};
        // Taps outside the image read 0; the sum nw, ne, sw, se fused in that order.
        bool ok[4];
        for (int k = 0; k < 4; ++k) ok[k] = xs[k] >= 0 && xs[k] < W && ys[k] >= 0 && ys[k] < H;
        // (No lambda here: it would be compiled once, outside the clones.)
        float mask = (ok[0] ? 1.0f : 0.0f) * wts[0];
        for (int k = 1; k < 4; ++k) mask = std::fma(ok[k] ? 1.0f : 0.0f, wts[k], mask);
        for (std::int64_t c = 0; c < C; ++c) {
          const float* p = in + c * H * W;
          float v = (ok[0] ? p[ys[0] * W + xs[0]] : 0.0f) * wts[0];
          for (int k = 1; k < 4; ++k) v = std::fma(ok[k] ? p[ys[k] * W + xs[k]] : 0.0f, wts[k], v);
          if (has_fill) {  // (v - fill) * mask + fill
            const float f = fill[fill.size() == 1 ? 0 : static_cast<std::size_t>(c)];
            v = (v - f) * mask + f;
          }
          out[c * H * W + o] = v;
        }
      }
    }
  }
}

void require_geometry(const char* who, const Shape& s, Interpolation mode,
                      const std::vector<float>& fill) {
  COHORT_CHECK(s.rank() == 3 && s[1] >= 1 && s[2] >= 1, who,
               ": expected a [C, H, W] image of at least 1x1, got ", s.str());
  COHORT_CHECK(mode != Interpolation::bicubic, who,
               ": interpolation bicubic is not available for affine transforms on tensors "
               "(torchvision's tensor path takes nearest or bilinear)");
  check_fill(who, s, fill);
}

}  // namespace

void affine(const float* in, const Shape& s, const Affine& p, Interpolation mode,
            const std::vector<float>& fill, float* out) {
  require_geometry("affine", s, mode, fill);
  COHORT_CHECK(p.scale > 0.0, "affine: scale ", p.scale, " must be > 0");
  const double H = static_cast<double>(s[1]), W = static_cast<double>(s[2]);
  const double centre[2] = {p.has_center ? p.center[0] - W * 0.5 : 0.0,
                            p.has_center ? p.center[1] - H * 0.5 : 0.0};
  double m[6];
  inverse_matrix(centre, p.angle, p.translate, p.scale, p.shear, m);
  std::vector<float> tmp;
  float* dst = out;
  if (out == in) {
    tmp.resize(static_cast<std::size_t>(s.numel()));
    dst = tmp.data();
  }
  grid_transform(in, s, m, mode, fill, dst);
  if (dst != out) std::memcpy(out, dst, sizeof(float) * tmp.size());
}

void rotate(const float* in, const Shape& s, double angle, Interpolation mode,
            const std::vector<float>& fill, float* out) {
  require_geometry("rotate", s, mode, fill);
  // Python's angle % 360: in [0, 360).
  double a = std::fmod(angle, 360.0);
  if (a != 0.0 && a < 0.0) a += 360.0;
  const std::int64_t C = s[0], H = s[1], W = s[2];
  const bool square = H == W;
  if (a == 0.0 || a == 180.0 || (square && (a == 90.0 || a == 270.0))) {
    // torch.rot90: exact pixel moves (k = 1: out[i][j] = in[j][W-1-i]; k = 3: in[H-1-j][i]).
    std::vector<float> src(in, in + s.numel());
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t i = 0; i < H; ++i)
        for (std::int64_t j = 0; j < W; ++j) {
          std::int64_t si = i, sj = j;
          if (a == 180.0) si = H - 1 - i, sj = W - 1 - j;
          if (a == 90.0) si = j, sj = W - 1 - i;
          if (a == 270.0) si = H - 1 - j, sj = i;
          out[(c * H + i) * W + j] = src[static_cast<std::size_t>((c * H + si) * W + sj)];
        }
    return;
  }
  Affine p;
  p.angle = -a;
  affine(in, s, p, mode, fill, out);
}

}  // namespace functional
}  // namespace cohort::data
