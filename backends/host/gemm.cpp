// The GEMM family on the host: every product through oneDNN's dnnl_sgemm, and the batched
// GEMM's split between threads. Why not OpenBLAS or KokkosBlas::gemm (which
// resolves to OpenBLAS): Debian's OpenBLAS 0.3.21 mis-detects this CPU family and runs a generic
// kernel at ~24 GFLOP/s unless OPENBLAS_CORETYPE is set before the library loads, which a library
// cannot do for its users; oneDNN detects the ISA itself (AVX-512/AMX) and reaches 140-200 GFLOP/s
// on one core. bench/gemm_bench prints both side by side.
//
// Under autocast bf16 (GemmArgs::compute) the product runs through oneDNN's matmul primitive
// instead: both operands reordered into dense bf16 (rounding to nearest even; the reorder also
// applies the transposes), the products summed in f32, C written in f32 with alpha as the output
// scale and beta as a sum post-op. A batched GEMM is one 3-D matmul. Primitives are made once per
// shape, scalars and thread count, as the convolutions' are (conv2d.cpp).
#include <dnnl.h>
#include <omp.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "cohort/core/autocast.hpp"
#include "cohort/core/error.hpp"
#include "cohort/devices.hpp"
#include "gemm.hpp"
#include "onednn.hpp"
#include "scratch.hpp"
#include "thread_governor.hpp"

namespace cohort::host {
namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;


struct MatmulPlan {
  dnnl::reorder to_a, to_b;  // f32 (strided, maybe transposed) -> dense bf16
  memory::desc a_f32, b_f32, a_bf16, b_bf16, c_f32;
  dnnl::matmul prim;
};

// Everything make_matmul reads: shape, transposes, leading dimensions, batch strides (C's too),
// alpha and beta (their bits), and the thread count oneDNN fixes at creation.
using MatmulKey = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool, bool,
                             std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                             std::int64_t, std::uint32_t, std::uint32_t, int>;

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

std::unique_ptr<MatmulPlan> make_matmul(const GemmArgs& g, std::int64_t batch, std::int64_t sa,
                                        std::int64_t sb, std::int64_t sc) {
  auto p = std::make_unique<MatmulPlan>();
  const memory::dims ad{batch, g.m, g.k}, bd{batch, g.k, g.n}, cd{batch, g.m, g.n};
  // op(A)[i][l] = A[l][i] when transposed: the strides swap.
  p->a_f32 = memory::desc(ad, dt::f32, g.trans_a ? memory::dims{sa, 1, g.lda} : memory::dims{sa, g.lda, 1});
  p->b_f32 = memory::desc(bd, dt::f32, g.trans_b ? memory::dims{sb, 1, g.ldb} : memory::dims{sb, g.ldb, 1});
  p->c_f32 = memory::desc(cd, dt::f32, memory::dims{sc, g.ldc, 1});
  p->a_bf16 = memory::desc(ad, dt::bf16, tag::abc);
  p->b_bf16 = memory::desc(bd, dt::bf16, tag::abc);
  p->to_a = dnnl::reorder(dnnl::reorder::primitive_desc(onednn_engine(), p->a_f32, onednn_engine(), p->a_bf16));
  p->to_b = dnnl::reorder(dnnl::reorder::primitive_desc(onednn_engine(), p->b_f32, onednn_engine(), p->b_bf16));
  dnnl::primitive_attr attr;
  if (g.alpha != 1.0f) attr.set_output_scales(0, {g.alpha});
  if (g.beta != 0.0f) {
    dnnl::post_ops po;
    po.append_sum(g.beta);
    attr.set_post_ops(po);
  }
  const dnnl::matmul::desc desc(p->a_bf16, p->b_bf16, p->c_f32);
  p->prim = dnnl::matmul(dnnl::matmul::primitive_desc(desc, attr, onednn_engine()));
  return p;
}

// One buffer per thread and role (ops run on the calling thread).
void* bf16_scratch(int role, std::size_t bytes) {
  thread_local ScratchBuffer bufs[2];
  return bufs[role].get(bytes, "a bf16 GEMM's operands");
}

// C = alpha op(A) op(B) + beta C over `batch` matrices in bf16 products with f32 sums; false when
// oneDNN has no primitive for the case.
bool matmul_bf16(const GemmArgs& g, std::int64_t batch, std::int64_t sa, std::int64_t sb,
                 std::int64_t sc) {
  adapt_threads_to_load();
  const int threads = omp_get_max_threads();
  const MatmulKey key{batch, g.m, g.n, g.k, g.trans_a, g.trans_b, g.lda, g.ldb, g.ldc, sa, sb, sc,
                      bits(g.alpha), bits(g.beta), threads};
  static std::mutex mu;
  static auto* plans = new std::map<MatmulKey, std::unique_ptr<MatmulPlan>>;  // never destroyed
  const MatmulPlan* p;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = plans->find(key);
    if (it == plans->end()) {
      std::unique_ptr<MatmulPlan> made;
      try {
        made = make_matmul(g, batch, sa, sb, sc);
      } catch (const dnnl::error&) {
        made = nullptr;
      }
      it = plans->emplace(key, std::move(made)).first;
    }
    p = it->second.get();
  }
  if (p == nullptr) return false;
  dnnl::stream& s = onednn_stream();
  memory a32(p->a_f32, onednn_engine(), const_cast<float*>(g.a));
  memory b32(p->b_f32, onednn_engine(), const_cast<float*>(g.b));
  memory c32(p->c_f32, onednn_engine(), g.c);
  memory a16(p->a_bf16, onednn_engine(), bf16_scratch(0, p->a_bf16.get_size()));
  memory b16(p->b_bf16, onednn_engine(), bf16_scratch(1, p->b_bf16.get_size()));
  p->to_a.execute(s, a32, a16);
  p->to_b.execute(s, b32, b16);
  p->prim.execute(s, {{DNNL_ARG_SRC, a16}, {DNNL_ARG_WEIGHTS, b16}, {DNNL_ARG_DST, c32}});
  s.wait();
  return true;
}

// Whether this GEMM runs in bf16 (true: done), after the autocast notice where it cannot.
bool autocast_gemm(const GemmArgs& g, std::int64_t batch, std::int64_t sa, std::int64_t sb,
                   std::int64_t sc, const char* op) {
  if (g.compute == DType::f32) return false;
  const char* why = nullptr;
  if (g.compute == DType::f16)
    why = "oneDNN 2.6 has no f16 GEMM on CPUs (it needs AVX-512 FP16)";
  else if (!bf16_native())
    why = bf16_missing_reason();
  else if (g.k == 0)
    return false;  // nothing to multiply: the f32 path scales C by beta
  else {
    try {
      if (matmul_bf16(g, batch, sa, sb, sc)) return true;
    } catch (const dnnl::error& e) {
      ::cohort::detail::throw_error(
          __FILE__, __LINE__, "", "host",
          ::cohort::detail::concat("oneDNN bf16 matmul failed (status ", static_cast<int>(e.status),
                                   ": ", e.what(), ") for m=", g.m, " n=", g.n, " k=", g.k,
                                   " batch=", batch));
    }
    why = "oneDNN has no bf16 matmul for this case";
  }
  autocast_fell_back(host_device(), g.compute, op, why);
  return false;
}

}  // namespace

void sgemm(const GemmArgs& g) {
  if (g.m == 0 || g.n == 0) return;
  if (autocast_gemm(g, 1, g.m * g.k, g.k * g.n, g.m * g.n, "gemm")) return;
  if (g.k == 0) {  // op(A) op(B) is all zeros: C = beta C, with beta == 0 overwriting NaN
    for (std::int64_t i = 0; i < g.m; ++i)
      for (std::int64_t j = 0; j < g.n; ++j) {
        float& c = g.c[i * g.ldc + j];
        c = g.beta == 0.0f ? 0.0f : g.beta * c;
      }
    return;
  }
  adapt_threads_to_load();
  const dnnl_status_t st =
      dnnl_sgemm(g.trans_a ? 'T' : 'N', g.trans_b ? 'T' : 'N', g.m, g.n, g.k, g.alpha, g.a, g.lda,
                 g.b, g.ldb, g.beta, g.c, g.ldc);
  COHORT_CHECK_IN("host", st == dnnl_success, "dnnl_sgemm failed with status ",
                  static_cast<int>(st), " for m=", g.m, " n=", g.n, " k=", g.k,
                  " lda=", g.lda, " ldb=", g.ldb, " ldc=", g.ldc);
}

// Attention's per-head products: the batch split between the threads, each GEMM on one thread
// (oneDNN's sgemm runs sequentially inside a team), because the products are too small to split
// (the ViT's 65 x 65 x 32). Each GEMM is the same call as on one thread.
bool bf16_batched(const calls::GemmBatched& c) {
  if (c.batch == 0 || c.m == 0 || c.n == 0) return false;  // nothing to compute: the f32 path
  return autocast_gemm(c, c.batch, c.stride_a, c.stride_b, c.stride_c, "gemm_batched");
}

void sgemm_batched(const calls::GemmBatched& c, int threads) {
#pragma omp parallel num_threads(threads)
  {
    const std::int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
    for (std::int64_t i = c.batch * t / n; i < c.batch * (t + 1) / n; ++i) {
      GemmArgs g = c;
      g.a = c.a + i * c.stride_a;
      g.b = c.b + i * c.stride_b;
      g.c = c.c + i * c.stride_c;
      sgemm(g);
    }
  }
}

}  // namespace cohort::host
