// The CUDA device's op table: every op through the shared families of backends/common/ops/ on
// the Thrust executor (thrust_exec.hpp) with thrust::cuda::par_nosync on the compute stream, and
// the ops a vendor library takes first, as exact-match overloads of run() that kernels::run_call
// prefers to the family templates. The vendor calls themselves sit in the file named after the
// op's family: conv2d.cpp, norm.cpp and softmax_loss.cpp (cuDNN), gemm.cpp and activation.cpp
// (cuBLAS); a case the vendor declines runs the family template on this device.
//
// The only file nvcc compiles. Built with --fmad=false so element-wise results equal the host's
// bit for bit. Ops enqueue on the compute stream and return without waiting: none of the Thrust
// algorithms used here synchronises or allocates temporary storage.
#include <cuda_runtime.h>
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/system_error.h>

#include <cstdint>
#include <cstdlib>
#include <utility>
#include <vector>

#include "cohort/core/autocast.hpp"
#include "common/caching_allocator.hpp"
#include "common/ops/run_call.hpp"
#include "cuda_check.hpp"
#include "cuda_device.hpp"
#include "cudnn.hpp"
#include "cuda/seams/cublas_gemm.hpp"
#include "thrust_exec.hpp"

namespace cohort::cuda {
namespace {

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

// ---- GEMM family: cuBLAS's batched GEMM (gemm.cpp; k == 0 is the family's beta scaling) ----

void run(CudaExec& e, const calls::GemmBatched& c) {
  if (c.k == 0) return kernels::run(e, c);
  e.gemm_batched(c);
}

// ---- activation family: cuBLAS's sgemv for the linear bias gradient (activation.cpp) ----
// dbias += dy^T ones: one vendor call instead of the shared kernel's one thread per 16 columns,
// each summing a whole column serially (GPU review G2). The sum runs in float in cuBLAS's order,
// not the shared kernel's double; the parity row's tolerance covers the difference. Other layouts
// (inner > 1: the convolution's bias gradient) stay on the shared kernel.
void run(CudaExec& e, const calls::BiasGrad& c) {
  if (c.d.inner != 1) return kernels::run(e, c);
  if (c.d.outer == 0 || c.d.channels == 0) return;  // dbias += nothing
  e.gemv(seams::cublas_bias_grad(c, e.ones(c.d.outer)));
}
// The fused activation backward + bias gradient on [N, F]: the shared item is one thread per 16
// columns summing serially (the cost BiasGrad's route above avoids), so on the GPU it is two
// launches again: the element-wise backward, then the same sgemv over the dx it wrote.
void run(CudaExec& e, const calls::BiasActBackward& c) {
  if (c.d.inner != 1) return kernels::run(e, c);
  const std::size_t n = static_cast<std::size_t>(c.d.outer * c.d.channels);
  kernels::run(e, calls::ActivationBackward{c.f, c.alpha, c.x, c.y, c.dy, c.dx, n});
  run(e, calls::BiasGrad{c.d, c.dx, c.dbias});
}

// ---- convolution, normalisation, softmax families: cuDNN (conv2d.cpp, norm.cpp, softmax_loss.cpp) ----

// Under autocast a case cuDNN declines in 16-bit runs as an f32 call (cuDNN or the shared kernels).
template <class Call>
Call as_f32(const Call& c) {
  Call f = c;
  f.a.compute = DType::f32;
  return f;
}

void run(CudaExec& e, const calls::Conv2dForward& c) {
  if (c.a.compute != DType::f32) {
    if (!e.conv_lowp(c)) return run(e, as_f32(c));
  } else {
    bool bias_act = false;  // conv + bias + ReLU in one cuDNN call (cuda/conv2d.cpp)
    if (!e.cudnn().conv_forward(c, nullptr, &bias_act)) return kernels::run(e, c);
    if (bias_act) return;
  }
  kernels::conv2d_bias_act_pass(e, c.a, c.bias, c.y);  // one pass over y for the whole batch
}
void run(CudaExec& e, const calls::Conv2dBackwardData& c) {
  if (c.a.compute != DType::f32) {
    if (!e.conv_lowp(c)) run(e, as_f32(c));
  } else if (!e.cudnn().conv_backward_data(c)) {
    kernels::run(e, c);
  }
}
void run(CudaExec& e, const calls::Conv2dBackwardFilter& c) {
  if (c.a.compute != DType::f32) {
    if (!e.conv_lowp(c)) return run(e, as_f32(c));
  } else if (!e.cudnn().conv_backward_filter(c)) {
    return kernels::run(e, c);
  }
  // dbias += sum dy through cuDNN's reduction: the shared pass is one thread per channel, each
  // summing N * P * Q values (GPU review G2); it stays as the fallback.
  if (c.dbias && !e.cudnn().conv_backward_bias(c)) kernels::conv2d_bias_grad_pass(e, c);
}
void run(CudaExec& e, const calls::BatchNormForward& c) {
  if (!e.cudnn().batch_norm_forward(c)) kernels::run(e, c);
}
void run(CudaExec& e, const calls::BatchNormBackward& c) {
  if (!e.cudnn().batch_norm_backward(c)) kernels::run(e, c);
}
void run(CudaExec& e, const calls::SoftmaxForward& c) {
  if (!e.cudnn().softmax_forward(c)) kernels::run(e, c);
}
void run(CudaExec& e, const calls::SoftmaxBackward& c) {
  if (!e.cudnn().softmax_backward(c)) kernels::run(e, c);
}

// Where each op runs (cohort-doctor --ops). Each entry names an overload above; the address checks
// below fail to compile when one is missing.
#define COHORT_CUDA_VENDOR_ROUTES(X)                                                               \
  X(conv2d_forward, Conv2dForward, "cuDNN (cuda/conv2d.cpp)",                                      \
    "f32 with bias + ReLU: one cudnnConvolutionBiasActivationForward call; other bias + "          \
    "activation in one shared pass over the batch; shared im2col + cuBLAS when no algorithm fits " \
    "the math modes and workspace, or a 32-bit descriptor limit")                                  \
  X(conv2d_backward_data, Conv2dBackwardData, "cuDNN (cuda/conv2d.cpp)",                           \
    "shared im2col + cuBLAS when declined")                                                        \
  X(conv2d_backward_filter, Conv2dBackwardFilter, "cuDNN (cuda/conv2d.cpp)",                       \
    "only deterministic algorithms under deterministic_algorithms(); shared when declined")        \
  X(gemm_batched, GemmBatched, "cuBLAS batched (cuda/gemm.cpp)",                                   \
    "cublasSgemmStridedBatched_64; k == 0 runs the shared beta scaling")                           \
  X(bias_grad, BiasGrad, "cuBLAS sgemv (cuda/activation.cpp)",                                     \
    "cublasSgemv_64 times a ones vector, for [N, F] only; NCHW runs the shared per-channel sum")   \
  X(bias_act_backward, BiasActBackward, "shared + cuBLAS sgemv (cuda/op_table.cu)",                \
    "for [N, F]: the shared element-wise backward, then bias_grad's sgemv over its dx; NCHW runs " \
    "the shared fused items")                                                                      \
  X(batch_norm_forward, BatchNormForward, "cuDNN (cuda/norm.cpp)",                                 \
    "training mode only; eval mode and declined cases run the shared kernels")                     \
  X(batch_norm_backward, BatchNormBackward, "cuDNN (cuda/norm.cpp)",                               \
    "training mode only; eval mode and declined cases run the shared kernels")                     \
  X(softmax_forward, SoftmaxForward, "cuDNN (cuda/softmax_loss.cpp)",                              \
    "shared kernels when a dimension exceeds cuDNN's 32-bit descriptors")                          \
  X(softmax_backward, SoftmaxBackward, "cuDNN (cuda/softmax_loss.cpp)",                            \
    "shared kernels when a dimension exceeds cuDNN's 32-bit descriptors")

}  // namespace

COHORT_DEFINE_OP_ROUTES(CudaExec, COHORT_CUDA_VENDOR_ROUTES, "cuda",
                        "shared kernels on Thrust (for_each_n, transform, fill_n with par_nosync "
                        "on the compute stream); their GEMMs through cuBLAS sgemm (cuda/gemm.cpp)")

// Every case of every op: the shared families cover them all, and a vendor's refusal falls back to
// them inside run().
bool CudaDevice::supports(const OpCall&) const { return true; }

void CudaDevice::run(const OpCall& call) {
  const memory::OpLabel label(op_name(op_of(call)));  // names the op in out-of-memory errors
  try {
    CudaExec e(*this);
    kernels::run_call(e, call);
  } catch (const thrust::system_error& e) {  // a failed launch: report it as the other ops do
    (void)cudaGetLastError();
    ::cohort::detail::throw_error(__FILE__, __LINE__, "thrust", "cuda",
                                  ::cohort::detail::concat(op_name(op_of(call)), " on ", name(),
                                                           ": ", e.what()));
  }
  static const bool sync_each = [] {
    const char* v = std::getenv("COHORT_CUDA_SYNC");
    return v != nullptr && v[0] == '1';
  }();
  if (sync_each) {
    const cudaError_t st = cudaStreamSynchronize(static_cast<cudaStream_t>(stream()));
    if (st != cudaSuccess) {
      (void)cudaGetLastError();
      ::cohort::detail::throw_error(__FILE__, __LINE__, "cudaStreamSynchronize", "cuda",
                                    ::cohort::detail::concat(op_name(op_of(call)), " on ",
                                                             name(), " failed: ",
                                                             detail::describe(st)));
    }
  }
}

}  // namespace cohort::cuda
