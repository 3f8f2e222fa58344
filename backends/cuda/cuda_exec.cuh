// The CUDA device's executor (CudaExec: the shared op families of backends/common/ops/ on Thrust
// with thrust::cuda::par_nosync on the compute stream, plus the vendor helpers the routes use) and
// the declarations that tie the op table together across its files.
//
// run(CudaExec&, const calls::X&) for each op a vendor library takes first (cuDNN, cuBLAS) is
// declared here, not only in its family's file, because a shared family template may call another
// family's op (attention's GEMMs are gemm_batched): every file that instantiates the templates
// must see every vendor overload, or the same call would route differently in different files.
//
// run_op(CudaExec&, const calls::X&) for every op of cohort/backend/op_list.hpp: one definition
// each, in ops/<family>.cu (COHORT_CUDA_RUN_OP_DEF); op_table.cu dispatches to them. One file per
// family keeps an op's CUDA code one hop from its family; backends/cuda/CMakeLists.txt compiles
// them as two nvcc units, since each unit pays Thrust's headers again (docs/GPU.md, "Build").
//
// Included only by .cu files (nvcc). Built with --fmad=false so element-wise results equal the
// host's bit for bit. Ops enqueue on the compute stream and return without waiting: none of the
// Thrust algorithms used here synchronises or allocates temporary storage.
#pragma once

#include <cuda_runtime.h>
#include <thrust/system/cuda/execution_policy.h>

#include <cstdint>
#include <cstdlib>
#include <utility>
#include <vector>

#include "cohort/backend/op_list.hpp"
#include "cohort/core/autocast.hpp"
#include "common/caching_allocator.hpp"
#include "cuda/seams/cublas_gemm.hpp"
#include "cuda_check.hpp"
#include "cuda_device.hpp"
#include "cudnn.hpp"
#include "thrust_exec.hpp"

namespace cohort::cuda {

using CudaPolicy = decltype(thrust::cuda::par_nosync.on(std::declval<cudaStream_t>()));

// f32 -> 16-bit bits, rounding to nearest even (cohort/core/dtype.hpp's conversions).
struct ToBf16 {
  __host__ __device__ std::uint16_t operator()(float v) const { return float_to_bf16(v); }
};
struct ToF16 {
  __host__ __device__ std::uint16_t operator()(float v) const { return float_to_f16(v); }
};
// 16-bit bits -> f32 (exact), written or added to the f32 value already there.
struct Widen {
  bool bf16;
  __host__ __device__ float operator()(std::uint16_t b) const {
    return bf16 ? bf16_to_float(b) : f16_to_float(b);
  }
};
struct WidenAdd {
  bool bf16;
  __host__ __device__ float operator()(std::uint16_t b, float old) const {
    return old + (bf16 ? bf16_to_float(b) : f16_to_float(b));
  }
};

class CudaExec : public ThrustExec<CudaPolicy> {
 public:
  explicit CudaExec(CudaDevice& device)
      : ThrustExec<CudaPolicy>(
            thrust::cuda::par_nosync.on(static_cast<cudaStream_t>(device.stream()))),
        device_(device) {}
  // Scratch goes back to the cache in stream order: kernels still reading it finish first.
  ~CudaExec() {
    for (const auto& [p, bytes] : scratch_) device_.deallocate(p, bytes);
  }
  CudaExec(const CudaExec&) = delete;
  CudaExec& operator=(const CudaExec&) = delete;

  void gemm(const GemmArgs& g) {
    if (g.compute != DType::f32 && g.k > 0) return gemm_lowp(seams::cublas_gemm(g), g, 1, 0, 0);
    device_.gemm(g);
  }
  void gemm_batched(const calls::GemmBatched& g) {
    if (g.compute != DType::f32 && g.k > 0)
      return gemm_lowp(seams::cublas_gemm_batched(g), g, g.batch, g.stride_a, g.stride_b);
    device_.gemm_batched(g);
  }
  // Convolutions under autocast: cuDNN on 16-bit copies (seams/cudnn_conv.hpp), the result
  // widened into the f32 output. False, having said so once (or thrown under strict autocast),
  // when cuDNN has no 16-bit algorithm for the case (before sm_80 for bf16, a shape beyond its
  // descriptors): the caller runs it in f32.
  bool conv_lowp(const calls::Conv2dForward& c) {
    Cudnn::ConvLowp lp;
    lp.x = copy16(c.x, x_numel(c.a), c.a.compute);
    lp.w = copy16(c.w, w_numel(c.a), c.a.compute);
    return run16(c.a, "conv2d_forward", lp, c.y, y_numel(c.a), false,
                 [&] { return cudnn().conv_forward(c, &lp); });
  }
  bool conv_lowp(const calls::Conv2dBackwardData& c) {
    Cudnn::ConvLowp lp;
    lp.w = copy16(c.w, w_numel(c.a), c.a.compute);
    lp.dy = copy16(c.dy, y_numel(c.a), c.a.compute);
    return run16(c.a, "conv2d_backward_data", lp, c.dx, x_numel(c.a), false,
                 [&] { return cudnn().conv_backward_data(c, &lp); });
  }
  bool conv_lowp(const calls::Conv2dBackwardFilter& c) {  // dw += the 16-bit dw, in f32
    Cudnn::ConvLowp lp;
    lp.x = copy16(c.x, x_numel(c.a), c.a.compute);
    lp.dy = copy16(c.dy, y_numel(c.a), c.a.compute);
    return run16(c.a, "conv2d_backward_filter", lp, c.dw, w_numel(c.a), true,
                 [&] { return cudnn().conv_backward_filter(c, &lp); });
  }

 private:
  static std::int64_t x_numel(const Conv2dArgs& a) { return a.n * a.c * a.h * a.w; }
  static std::int64_t y_numel(const Conv2dArgs& a) { return a.n * a.k * a.oh * a.ow; }
  static std::int64_t w_numel(const Conv2dArgs& a) { return a.k * (a.c / a.groups) * a.r * a.s; }
  const void* copy16(const float* x, std::int64_t n, DType t) {
    return lowp_copy(x, 1, n, 0, 1, 0, t);
  }
  // The call on the 16-bit copies in `lp`, its 16-bit output (n elements) then widened into
  // `out` (written, or added with `add`); false, said once, when cuDNN declined.
  template <class Call>
  bool run16(const Conv2dArgs& a, const char* op, Cudnn::ConvLowp& lp, float* out, std::int64_t n,
             bool add, Call call) {
    lp.out = scratch(static_cast<std::size_t>(n + 1) / 2);
    if (!call()) return declined(a.compute, op);
    widen(lp.out, n, out, add, a.compute);
    return true;
  }
  bool declined(DType t, const char* op) const {
    autocast_fell_back(device_, t, op,
                       "cuDNN has no bf16/f16 algorithm for this case (bf16 needs sm_80 or later)");
    return false;
  }
  // out = widen(b) or out += widen(b), n elements.
  void widen(const void* b, std::int64_t n, float* out, bool add, DType t) {
    const auto* p = static_cast<const std::uint16_t*>(b);
    const bool bf = t == DType::bf16;
    if (add)
      thrust::transform(policy(), p, p + n, out, out, WidenAdd{bf});
    else
      thrust::transform(policy(), p, p + n, out, Widen{bf});
  }

  // The 16-bit copy of an operand of `rows` x `cols` (leading dimension ld), `batch` of them
  // `stride` apart: the same layout, every element of the span rounded to nearest even.
  const void* lowp_copy(const float* x, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                        std::int64_t batch, std::int64_t stride, DType t) {
    const std::int64_t span = (batch - 1) * stride + (rows - 1) * ld + cols;
    auto* out = reinterpret_cast<std::uint16_t*>(scratch(static_cast<std::size_t>(span + 1) / 2));
    if (t == DType::bf16)
      thrust::transform(policy(), x, x + span, out, ToBf16{});
    else
      thrust::transform(policy(), x, x + span, out, ToF16{});
    return out;
  }
  // C = alpha op(A) op(B) + beta C with A and B rounded to bf16 / f16 (autocast).
  void gemm_lowp(const seams::CublasGemm& v, const GemmArgs& g, std::int64_t batch,
                 std::int64_t stride_a, std::int64_t stride_b) {
    const std::int64_t ar = g.trans_a ? g.k : g.m, ac = g.trans_a ? g.m : g.k;
    const std::int64_t br = g.trans_b ? g.n : g.k, bc = g.trans_b ? g.k : g.n;
    const void* a16 = lowp_copy(g.a, ar, ac, g.lda, batch, stride_a, g.compute);
    const void* b16 = lowp_copy(g.b, br, bc, g.ldb, batch, stride_b, g.compute);
    // The seam computes C^T = op(b)^T op(a)^T: its A is our b, its B our a.
    device_.gemm_lowp(v, v.A == g.a ? a16 : b16, v.B == g.a ? a16 : b16, g.compute);
  }

 public:
  void gemv(const seams::CublasGemv& v) const { device_.gemv(v); }
  // The device's cached vector of at least n ones, filled here (on the compute stream, before
  // whatever reads it) when the device had to allocate it.
  const float* ones(std::int64_t n) const {
    std::int64_t fill = 0;
    float* p = device_.ones_block(n, &fill);
    if (fill > 0) fill_n(p, static_cast<std::size_t>(fill), 1.0f);
    return p;
  }
  Cudnn& cudnn() const { return device_.cudnn(); }
  float* scratch(std::size_t floats) {
    const std::size_t bytes = floats * sizeof(float);
    void* p = device_.allocate(bytes);
    scratch_.emplace_back(p, bytes);
    return static_cast<float*>(p);
  }

 private:
  CudaDevice& device_;
  std::vector<std::pair<void*, std::size_t>> scratch_;
};

// The vendor routes (defined in ops/<family>.cu; listed with their reasons in op_table.cu).
void run(CudaExec& e, const calls::GemmBatched& c);           // ops/gemm.cu: cuBLAS batched
void run(CudaExec& e, const calls::BiasGrad& c);              // ops/activation.cu: cuBLAS sgemv
void run(CudaExec& e, const calls::BiasActBackward& c);       // ops/activation.cu
void run(CudaExec& e, const calls::Conv2dForward& c);         // ops/conv2d.cu: cuDNN
void run(CudaExec& e, const calls::Conv2dBackwardData& c);    // ops/conv2d.cu
void run(CudaExec& e, const calls::Conv2dBackwardFilter& c);  // ops/conv2d.cu
void run(CudaExec& e, const calls::BatchNormForward& c);      // ops/norm.cu: cuDNN
void run(CudaExec& e, const calls::BatchNormBackward& c);     // ops/norm.cu
void run(CudaExec& e, const calls::SoftmaxForward& c);        // ops/softmax_loss.cu: cuDNN
void run(CudaExec& e, const calls::SoftmaxBackward& c);       // ops/softmax_loss.cu

// Every op, one definition each in its family's file (COHORT_CUDA_RUN_OP_DEF below).
#define COHORT_CUDA_DECLARE_RUN_OP(name, Call) void run_op(CudaExec& e, const calls::Call& c);
COHORT_OP_LIST(COHORT_CUDA_DECLARE_RUN_OP)
#undef COHORT_CUDA_DECLARE_RUN_OP

}  // namespace cohort::cuda

// Defines run_op for the listed calls of one family: the vendor overload above where there is
// one, else the family's shared template (`using kernels::run` for the templates; argument-
// dependent lookup finds the vendor overloads, and an exact-match non-template beats a template).
// Used at global scope of an ops/<family>.cu, after the family's header.
#define COHORT_CUDA_RUN_OP_DEF(Call)                             \
  void cohort::cuda::run_op(CudaExec& e, const calls::Call& c) { \
    using kernels::run;                                          \
    run(e, c);                                                   \
  }
