// The attention family on the host (backends/common/ops/attention.hpp has the math): one head at a
// time per thread, its T x T scores in the thread's scratch (17 KB for the ViT's T = 65, so they
// stay in L1/L2 instead of the unfused layer's [N*H, T, T] tensors going through memory four times
// each way), the products through oneDNN's sgemm reading q, k, v and writing out, dq, dk, dv in
// the packed layouts directly (leading dimensions 3E and E: no head permutations). Heads are split
// between the threads; each head's arithmetic is the same whatever the split, so results do not
// depend on the thread count. Backward recomputes the probabilities from forward's log-sum-exp.
#include "attention.hpp"

#include <dnnl.h>
#include <omp.h>

#include <cmath>
#include <cstdint>

#include "cohort/core/error.hpp"
#include "common/ops/attention.hpp"
#include "scratch.hpp"

// The T x T passes, built three times for the CPUs that run them (attention_rows.hpp says why);
// once elsewhere than GCC on x86-64.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define COHORT_ATTENTION_ROWS \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
#include "attention_rows.hpp"

namespace cohort::host {
namespace {

using i64 = std::int64_t;

// c = alpha op(a) op(b), row-major, on the calling thread's share.
void gemm(char ta, char tb, i64 m, i64 n, i64 k, float alpha, const float* a, i64 lda,
          const float* b, i64 ldb, float* c, i64 ldc) {
  const dnnl_status_t st = dnnl_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, 0.0f, c, ldc);
  COHORT_CHECK_IN("host", st == dnnl_success, "dnnl_sgemm failed with status ",
                  static_cast<int>(st), " in attention (m=", m, " n=", n, " k=", k, ")");
}

// Two T x T buffers of this thread.
float* head_scratch(i64 t) {
  thread_local ScratchBuffer buf;
  return static_cast<float*>(
      buf.get(static_cast<std::size_t>(2 * t * t) * sizeof(float), "attention scores"));
}

// Heads [0, heads) split between `threads` OpenMP threads, fn(head) for each.
template <class Fn>
void for_heads(i64 heads, int threads, const Fn& fn) {
  if (threads <= 1) {
    for (i64 b = 0; b < heads; ++b) fn(b);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const i64 id = omp_get_thread_num(), n = omp_get_num_threads();
    for (i64 b = heads * id / n; b < heads * (id + 1) / n; ++b) fn(b);
  }
}

}  // namespace

void attention_forward_heads(const calls::AttentionForward& c, int threads) {
  const kernels::AttentionIndex ix{c.a};
  const i64 t = c.a.t, dh = c.a.dh, e = ix.width();
  for_heads(c.a.n * c.a.h, threads, [&](i64 b) {
    const i64 nn = b / c.a.h, hh = b % c.a.h;
    float* s = head_scratch(t);
    gemm('N', 'T', t, t, dh, c.a.scale, c.qkv + ix.qkv(nn, 0, 0, hh), 3 * e,
         c.qkv + ix.qkv(nn, 0, 1, hh), 3 * e, s, t);
    softmax_rows(s, t, c.lse + b * t);
    gemm('N', 'N', t, dh, t, 1.0f, s, t, c.qkv + ix.qkv(nn, 0, 2, hh), 3 * e,
         c.out + ix.out(nn, 0, hh), e);
  });
}

void attention_backward_heads(const calls::AttentionBackward& c, int threads) {
  const kernels::AttentionIndex ix{c.a};
  const i64 t = c.a.t, dh = c.a.dh, e = ix.width();
  const float scale = c.a.scale;
  for_heads(c.a.n * c.a.h, threads, [&](i64 b) {
    const i64 nn = b / c.a.h, hh = b % c.a.h;
    const float* q = c.qkv + ix.qkv(nn, 0, 0, hh);
    const float* k = c.qkv + ix.qkv(nn, 0, 1, hh);
    const float* v = c.qkv + ix.qkv(nn, 0, 2, hh);
    const float* go = c.dout + ix.out(nn, 0, hh);
    float* p = head_scratch(t);
    float* dp = p + t * t;
    gemm('N', 'T', t, t, dh, scale, q, 3 * e, k, 3 * e, p, t);  // the scores again
    probabilities_rows(p, t, c.lse + b * t);
    gemm('T', 'N', t, dh, t, 1.0f, p, t, go, e, c.dqkv + ix.qkv(nn, 0, 2, hh), 3 * e);  // dV
    gemm('N', 'T', t, t, dh, 1.0f, go, e, v, 3 * e, dp, t);                             // dP
    for (i64 i = 0; i < t; ++i)
      c.delta[b * t + i] = kernels::dot_of(go + i * e, c.out + ix.out(nn, i, hh), dh);
    score_grad_rows(dp, p, t, c.delta + b * t);
    gemm('N', 'N', t, dh, t, scale, dp, t, k, 3 * e, c.dqkv + ix.qkv(nn, 0, 0, hh), 3 * e);  // dQ
    gemm('T', 'N', t, dh, t, scale, dp, t, q, 3 * e, c.dqkv + ix.qkv(nn, 0, 1, hh), 3 * e);  // dK
  });
}

}  // namespace cohort::host
