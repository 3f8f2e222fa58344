// The host device's op table: the shared families of backends/common/ops/ run by the executor
// below. This file says how the host launches work (Kokkos parallel_fors split between the host's
// OpenMP threads), where scratch memory comes from, and which ops a vendor library takes first:
// the three convolutions (oneDNN's primitives, conv2d.cpp), the batched GEMM's thread split
// (gemm.cpp) and attention (per-head sgemm, attention.cpp). Every other op, and every case oneDNN
// declines, runs the shared family template.
#include <Kokkos_Core.hpp>
#include <omp.h>

#include <algorithm>
#include <cstdlib>

#include "activation.hpp"
#include "attention.hpp"
#include "cohort/core/error.hpp"
#include "common/ops/run_call.hpp"
#include "conv2d.hpp"
#include "gemm.hpp"
#include "host_device.hpp"
#include "scratch.hpp"
#include "thread_governor.hpp"

namespace cohort::host {
namespace {

using i64 = std::int64_t;

// A functor's elements per item (backends/common/ops/common.hpp): its cost() where it has one, else 1.
template <class F>
auto item_cost(const F& f, int) -> decltype(f.cost()) {
  return f.cost();
}
template <class F>
i64 item_cost(const F&, long) {
  return 1;
}

// How many threads a launch of `work` elements gets: the GEMM's count (host_threads.cpp, and the
// governor's 1 while other processes keep the CPUs busy), but none beyond the first for less than
// kWorkPerThread elements each. Waking a sleeping OpenMP thread costs several microseconds; 16K
// elements take about as long on one core, so smaller launches stay on the calling thread. Never
// nested: a launch from inside an OpenMP team (a user's parallel region) runs on its caller.
constexpr i64 kWorkPerThread = 16384;
int launch_threads(i64 count, i64 work) {
  if (work < 2 * kWorkPerThread || count < 2 || omp_in_parallel() || in_forked_child()) return 1;
  adapt_threads_to_load();
  const i64 by_work = work / kWorkPerThread;
  i64 n = omp_get_max_threads();
  if (by_work < n) n = by_work;
  if (count < n) n = count;
  return static_cast<int>(n);
}

struct HostExec {
  // Items in [0, count), split into one contiguous range per thread, each range a Kokkos
  // parallel_for on the host execution space (Serial: Debian's Kokkos has no threaded host space).
  // Items write disjoint memory (backends/common/ops/common.hpp), so the split changes no result.
  template <class F>
  void for_each(const char* label, i64 count, const F& f) const {
    if (count <= 0) return;
    using Range = Kokkos::RangePolicy<Kokkos::Serial, Kokkos::IndexType<i64>>;
    const int threads = launch_threads(count, count * item_cost(f, 0));
    if (threads <= 1) return Kokkos::parallel_for(label, Range(0, count), f);
#pragma omp parallel num_threads(threads)
    {
      const i64 t = omp_get_thread_num(), n = omp_get_num_threads();
      const i64 begin = count * t / n, end = count * (t + 1) / n;
      if (begin < end) Kokkos::parallel_for(label, Range(begin, end), f);
    }
  }
  void gemm(const GemmArgs& g) const { sgemm(g); }
  // One grow-only buffer per thread: ops on the host run on the calling thread, so two threads
  // sharing the device never share scratch memory.
  float* scratch(std::size_t floats) const {
    thread_local ScratchBuffer buf;
    return static_cast<float*>(buf.get(floats * sizeof(float), "a layer op"));
  }
};

// ---- the ops a vendor library takes first (exact-match overloads win over the family templates
// in kernels::run_call) ----

// Activations: chunks of kActChunk elements split between the threads as the shared element
// functors' items are, each chunk through the span loop built for this CPU (activation.cpp).
constexpr i64 kActChunk = 4096;
template <class Call, void (*Range)(const Call&, i64, i64)>
struct ActChunks {
  Call c;
  i64 count() const { return (static_cast<i64>(c.n) + kActChunk - 1) / kActChunk; }
  i64 cost() const { return kActChunk; }
  void operator()(i64 k) const {
    Range(c, k * kActChunk, std::min<i64>(static_cast<i64>(c.n), (k + 1) * kActChunk));
  }
};
using ActForwardChunks = ActChunks<calls::ActivationForward, activation_forward_range>;
using ActBackwardChunks = ActChunks<calls::ActivationBackward, activation_backward_range>;
void run(HostExec& e, const calls::ActivationForward& c) {
  const ActForwardChunks chunks{c};
  e.for_each("cohort::activation_forward", chunks.count(), chunks);
}
void run(HostExec& e, const calls::ActivationBackward& c) {
  const ActBackwardChunks chunks{c};
  e.for_each("cohort::activation_backward", chunks.count(), chunks);
}

// bias_add (and so the convolutions' bias + activation pass, kernels::conv2d_bias_act_pass): the
// shared family's items, planes or rows, each through the span loop built for this CPU
// (activation.cpp).
struct BiasPlanes {
  calls::BiasAdd c;
  i64 cost() const { return c.d.inner; }
  void operator()(i64 plane) const { bias_add_planes(c, plane, plane + 1); }
};
struct BiasRows {
  calls::BiasAdd c;
  i64 cost() const { return c.d.channels; }
  void operator()(i64 row) const { bias_add_rows(c, row, row + 1); }
};
void run(HostExec& e, const calls::BiasAdd& c) {
  if (c.d.inner == 1)
    e.for_each("cohort::bias_add", c.d.outer, BiasRows{c});
  else
    e.for_each("cohort::bias_add", c.d.outer * c.d.channels, BiasPlanes{c});
}
// bias_act_backward on [rows, features]: blocks of neighbouring features over every row, through
// the span loop built for this CPU (activation.cpp); the NCHW layout takes the shared items.
struct BiasActGradBlocks {
  calls::BiasActBackward c;
  i64 cost() const { return c.d.outer * 64; }  // a block's elements (kGradColumns)
  void operator()(i64 block) const { bias_act_grad_blocks(c, block, block + 1); }
};
void run(HostExec& e, const calls::BiasActBackward& c) {
  if (c.d.inner != 1) return kernels::run(e, c);
  e.for_each("cohort::bias_act_backward", bias_act_grad_block_count(c), BiasActGradBlocks{c});
}
// Batch norm over planes shorter than kSumBlock: blocks of channels (statistics, backward) and
// whole images (the affine map), the same bits as the shared per-channel items
// (common/ops/norm.hpp says why).
void run(HostExec& e, const calls::BatchNormForward& c) {
  if (!kernels::bn_short_planes(c.a)) return kernels::run(e, c);
  const kernels::BatchNormStats stats{c.a,           c.x,         c.running_mean,
                                      c.running_var, c.save_mean, c.save_invstd};
  e.for_each("cohort::batch_norm_stats", kernels::bn_channel_blocks(c.a),
             kernels::BatchNormStatsBlock{stats});
  e.for_each("cohort::batch_norm_apply", c.a.n,
             kernels::BatchNormApplyImage{kernels::BatchNormApply{
                 c.a, c.x, c.gamma, c.beta, c.save_mean, c.save_invstd, c.y}});
}
void run(HostExec& e, const calls::BatchNormBackward& c) {
  if (!kernels::bn_short_planes(c.a)) return kernels::run(e, c);
  e.for_each("cohort::batch_norm_backward", kernels::bn_channel_blocks(c.a),
             kernels::BatchNormBackwardBlock{c});
}
void run(HostExec& e, const calls::Conv2dForward& c) {
  if (!onednn_conv_forward(c)) return kernels::run(e, c);
  kernels::conv2d_bias_act_pass(e, c.a, nullptr, c.y);  // oneDNN added the bias
}
void run(HostExec& e, const calls::GemmBatched& c) {
  if (bf16_batched(c)) return;
  const int threads = c.m == 0 || c.n == 0 || c.k == 0
                          ? 1
                          : launch_threads(c.batch, c.batch * (c.m * c.n * c.k / 8));
  if (threads <= 1) return kernels::run(e, c);
  sgemm_batched(c, threads);
}
// Attention: heads split like the batched GEMM's batch, each head's products through sgemm.
int attention_threads(const AttentionArgs& a) {
  return launch_threads(a.n * a.h, a.n * a.h * (a.t * a.t * a.dh / 4));
}
// dh == 0 (zero-width heads: leading dimensions sgemm rejects) runs the shared items.
void run(HostExec& e, const calls::AttentionForward& c) {
  if (c.a.n * c.a.h * c.a.t == 0) return;
  if (c.a.dh == 0) return kernels::run(e, c);
  attention_forward_heads(c, attention_threads(c.a));
}
void run(HostExec& e, const calls::AttentionBackward& c) {
  if (c.a.n * c.a.h * c.a.t == 0) return;
  if (c.a.dh == 0) return kernels::run(e, c);
  attention_backward_heads(c, attention_threads(c.a));
}
void run(HostExec& e, const calls::Conv2dBackwardData& c) {
  if (!onednn_conv_backward_data(c)) kernels::run(e, c);
}
void run(HostExec& e, const calls::Conv2dBackwardFilter& c) {
  if (!onednn_conv_backward_filter(c)) return kernels::run(e, c);
  kernels::conv2d_bias_grad_pass(e, c);
}

// Where each op runs (cohort-doctor --ops). Each entry names an overload above; the address checks
// below fail to compile when one is missing.
#define COHORT_HOST_VENDOR_ROUTES(X)                                                             \
  X(conv2d_forward, Conv2dForward, "oneDNN primitive (host/conv2d.cpp)",                         \
    "the bias fused in oneDNN, the activation on the span loops; shared im2col + GEMM when "     \
    "oneDNN declines the shape or COHORT_HOST_CONV=im2col")                                      \
  X(conv2d_backward_data, Conv2dBackwardData, "oneDNN primitive (host/conv2d.cpp)",              \
    "shared im2col + GEMM for 4 or fewer input channels per group, a declined shape or "         \
    "COHORT_HOST_CONV=im2col")                                                                   \
  X(conv2d_backward_filter, Conv2dBackwardFilter, "oneDNN primitive (host/conv2d.cpp)",          \
    "dbias on the shared kernel; shared im2col + GEMM under deterministic_algorithms() (oneDNN " \
    "reduces over the batch across threads), a declined shape or COHORT_HOST_CONV=im2col")       \
  X(gemm_batched, GemmBatched, "oneDNN sgemm, batch split (host/gemm.cpp)",                      \
    "the batch split across OpenMP threads, one sgemm each; the shared loop on one thread when " \
    "the work is too small to split")                                                            \
  X(activation_forward, ActivationForward, "span loops per CPU (host/activation.cpp)",           \
    "the shared element functions, built for AVX-512, AVX2 and baseline x86-64; same bits")      \
  X(activation_backward, ActivationBackward, "span loops per CPU (host/activation.cpp)",         \
    "the shared element functions, built for AVX-512, AVX2 and baseline x86-64; same bits")      \
  X(bias_add, BiasAdd, "span loops per CPU (host/activation.cpp)",                               \
    "the shared items (planes, rows), built for AVX-512, AVX2 and baseline x86-64; same bits; "  \
    "also the convolutions' activation pass")                                                    \
  X(bias_act_backward, BiasActBackward, "span loops per CPU (host/activation.cpp)",              \
    "blocks of 64 features over every row, built for AVX-512, AVX2 and baseline x86-64; same "   \
    "bits; the NCHW layout on the shared items")                                                 \
  X(batch_norm_forward, BatchNormForward, "channel blocks (host/op_table.cpp)",                  \
    "planes shorter than 32 (late ResNet stages): 16 channels per item, the map per image; "     \
    "same bits; longer planes on the shared per-channel items")                                  \
  X(batch_norm_backward, BatchNormBackward, "channel blocks (host/op_table.cpp)",                \
    "planes shorter than 32: 16 channels per item; same bits; longer planes on the shared "      \
    "per-channel items")                                                                         \
  X(attention_forward, AttentionForward, "oneDNN sgemm per head (host/attention.cpp)",           \
    "heads split across OpenMP threads, each head's scores in the thread's scratch")             \
  X(attention_backward, AttentionBackward, "oneDNN sgemm per head (host/attention.cpp)",         \
    "heads split across OpenMP threads, the probabilities recomputed from forward's lse")

}  // namespace

COHORT_DEFINE_OP_ROUTES(HostExec, COHORT_HOST_VENDOR_ROUTES, "host",
                        "shared kernels on Kokkos (host execution space), launches split across "
                        "OpenMP threads; their GEMMs through oneDNN sgemm (host/gemm.cpp)")

// Every case of every op: the shared families cover them all, and oneDNN's refusals fall back to
// them inside run().
bool HostDevice::supports(const OpCall&) const { return true; }

void HostDevice::run(const OpCall& call) {
  HostExec e;
  kernels::run_call(e, call);
}

}  // namespace cohort::host
