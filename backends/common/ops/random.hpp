// Random family: fill_uniform, fill_normal, dropout_forward, dropout_backward. Every value is a
// pure function of (seed, stream position) through Philox4x32-10 (cohort/core/rng.hpp), so every
// device and every thread split draws the same numbers, and dropout's backward regenerates the
// forward mask instead of storing it. Dropout can take the activation before it into its pass
// (Act<F> of activation.hpp, the same element functions: the same bits as the two ops).
#pragma once

#include <cstddef>
#include <cstdint>

#include "cohort/backend/op_calls.hpp"
#include "common/ops/activation.hpp"
#include "common/ops/common.hpp"

namespace cohort::kernels {

template <class G>
struct GenerateItem {  // item: element; x[i] = g(stream position offset + i)
  G g;
  float* x;
  std::uint64_t offset;
  COHORT_HD void operator()(i64 i) const { x[i] = g(offset + static_cast<std::uint64_t>(i)); }
};

// ---- Philox-based fills (stream position p -> value) ----

struct UniformAt {
  std::uint64_t seed;
  float lo, hi;
  COHORT_HD float operator()(std::uint64_t p) const { return rng::uniform_at(seed, p, lo, hi); }
};

// Box-Muller on lane pairs (0,1) and (2,3) of a block: even lanes take the cosine, odd the sine.
struct NormalAt {
  std::uint64_t seed;
  float mean, stddev;
  COHORT_HD float operator()(std::uint64_t p) const {
    const U32x4 r = philox_block(seed, p >> 2);
    const unsigned lane = static_cast<unsigned>(p & 3);
    const unsigned pair = lane & 2u;
    const float u1 = u32_to_unit_open0(r.v[pair]);
    const float u2 = u32_to_unit(r.v[pair + 1]);
    const float radius = sqrtf(-2.0f * logf(u1));
    const float theta = 6.28318530717958647692f * u2;
    const float z = (lane & 1u) ? radius * sinf(theta) : radius * cosf(theta);
    return mean + stddev * z;
  }
};

// ---------------------------------------------------------------------------------------------
// Dropout. Element i of a step draws Philox4x32-10 lane i % 4 of counter block i / 4, with the
// counter (block, step) and the key seed, so each training step draws an independent mask and
// forward and backward draw the same one. An item is kBlocks consecutive blocks, computed
// round by round across the blocks: Philox is a serial chain of ten multiply rounds, and
// interleaving independent blocks is what lets the CPU overlap them (and the compiler vectorise
// the 32x32->64-bit multiplies); one block per item runs at the chain's latency.

template <Activation F, bool Backward>
struct DropoutBlocks {
  static constexpr int kBlocks = 8;  // 32 elements per item
  static constexpr i64 items(i64 n) { return (n + kBlocks * 4 - 1) / (kBlocks * 4); }
  DropoutArgs a;
  i64 n;
  const float* in;  // x (forward) or dy (backward)
  float* out;
  float alpha;     // the fused activation's
  const float* x;  // backward with an activation: its input
  i64 cost() const { return 8 * kBlocks * 4; }
  // Forward: f(x) * mask. Backward: dropout's dy * mask, then f's backward from x (and f(x),
  // recomputed with forward's function, for the activations whose backward reads the output).
  COHORT_HD_ALWAYS_INLINE float value(i64 i, float mask) const {
    if constexpr (!Backward) {
      return Act<F>::f(in[i], alpha) * mask;
    } else if constexpr (F == Activation::identity) {
      return in[i] * mask;
    } else {
      const float xv = x[i];
      const float yv = Act<F>::uses_x ? 0.0f : Act<F>::f(xv, alpha);
      return Act<F>::df(xv, yv, in[i] * mask, alpha);
    }
  }
  COHORT_HD void operator()(i64 item) const {
    std::uint32_t c0[kBlocks], c1[kBlocks], c2[kBlocks], c3[kBlocks];
    for (int j = 0; j < kBlocks; ++j) {
      const std::uint64_t b = static_cast<std::uint64_t>(item) * kBlocks + j;
      c0[j] = static_cast<std::uint32_t>(b);
      c1[j] = static_cast<std::uint32_t>(b >> 32);
      c2[j] = static_cast<std::uint32_t>(a.step);
      c3[j] = static_cast<std::uint32_t>(a.step >> 32);
    }
    std::uint32_t k0 = static_cast<std::uint32_t>(a.seed), k1 = static_cast<std::uint32_t>(a.seed >> 32);
    for (int round = 0; round < 10; ++round) {  // philox4x32_10 of cohort/core/rng.hpp, blocks side by side
      for (int j = 0; j < kBlocks; ++j) {
        const std::uint64_t p0 = static_cast<std::uint64_t>(0xD2511F53u) * c0[j];
        const std::uint64_t p1 = static_cast<std::uint64_t>(0xCD9E8D57u) * c2[j];
        const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c1[j] ^ k0;
        const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c3[j] ^ k1;
        c1[j] = static_cast<std::uint32_t>(p1);
        c3[j] = static_cast<std::uint32_t>(p0);
        c0[j] = n0;
        c2[j] = n2;
      }
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    // ATen multiplies by a mask of 0 or 1 / (1 - p) computed in float.
    const float keep_scale = a.p < 1.0f ? 1.0f / (1.0f - a.p) : 0.0f;
    const i64 first = item * kBlocks * 4;
    for (int j = 0; j < kBlocks; ++j) {
      const std::uint32_t r[4] = {c0[j], c1[j], c2[j], c3[j]};
      for (int lane = 0; lane < 4; ++lane) {
        const i64 i = first + j * 4 + lane;
        if (i < n) out[i] = value(i, u32_to_unit(r[lane]) >= a.p ? keep_scale : 0.0f);
      }
    }
  }
};

template <class Exec, class G>
void generate(Exec& e, const char* label, float* x, std::size_t n, std::uint64_t offset, const G& g) {
  if constexpr (has_transforms_v<Exec>)
    e.generate(x, n, offset, g);
  else
    e.for_each(label, static_cast<i64>(n), GenerateItem<G>{g, x, offset});
}
template <class Exec>
void run(Exec& e, const calls::FillUniform& c) {
  generate(e, "cohort::fill_uniform", c.x, c.n, c.offset, UniformAt{c.seed, c.lo, c.hi});
}
template <class Exec>
void run(Exec& e, const calls::FillNormal& c) {
  generate(e, "cohort::fill_normal", c.x, c.n, c.offset, NormalAt{c.seed, c.mean, c.stddev});
}

template <bool Backward, class Exec>
void dropout(Exec& e, const DropoutArgs& a, Activation f, float alpha, const float* in, float* out,
             const float* x, std::size_t n) {
  const i64 count = static_cast<i64>(n);
  with_activation(f, [&](auto tag) {
    using Blocks = DropoutBlocks<decltype(tag)::value, Backward>;
    e.for_each("cohort::dropout", Blocks::items(count), Blocks{a, count, in, out, alpha, x});
  });
}
template <class Exec>
void run(Exec& e, const calls::DropoutForward& c) {
  dropout<false>(e, c.a, c.f, c.alpha, c.x, c.y, nullptr, c.n);
}
template <class Exec>
void run(Exec& e, const calls::DropoutBackward& c) {
  dropout<true>(e, c.a, c.f, c.alpha, c.dy, c.dx, c.x, c.n);
}

}  // namespace cohort::kernels
