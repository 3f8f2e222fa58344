// cuDNN calls for the CUDA device (see cudnn_ops.hpp for what is covered and why the legacy API).
// Plain C++: the host compiler builds it against cudnn.h; nothing here launches a kernel of ours.
//
// Every argument of every cuDNN call comes from a seam of plain values (seams/cudnn_*.hpp:
// descriptor extents, modes, alpha/beta, coverage, the algorithm ranking and what an execute
// status means), which tests/vendor checks on the CPU against references of cuDNN's documented
// meaning. This file only turns those values into descriptors and calls; the static_asserts below
// tie the seams' int copies of cuDNN's enums to cudnn.h.
//
// Every call is enqueued on the device's compute stream (the handle is bound to it) and returns
// without waiting. Workspaces and stand-in buffers come from the device's allocator and go back to
// it in stream order right after the call is enqueued, so cuDNN never allocates on its own and a
// training step after the first asks the driver for nothing.
#include "cudnn_ops.hpp"

#include <cudnn.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cohort/core/error.hpp"
#include "cohort/core/math_mode.hpp"
#include "cuda_check.hpp"
#include "cuda_device.hpp"
#include "cuda/seams/cudnn_conv.hpp"
#include "cuda/seams/cudnn_conv_algo.hpp"
#include "cuda/seams/cudnn_norm.hpp"
#include "cuda/seams/cudnn_softmax.hpp"
#include "cuda/seams/cudnn_status.hpp"

// The legacy convolution and batch-norm calls are marked deprecated in cuDNN 9; using them is the
// decision recorded in cudnn_ops.hpp, so their warnings are noise here.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace cohort::cuda {
namespace e = seams::cudnn_enum;
static_assert(e::kTensorNchw == CUDNN_TENSOR_NCHW && e::kDataFloat == CUDNN_DATA_FLOAT);
static_assert(e::kConvolution == CUDNN_CONVOLUTION && e::kCrossCorrelation == CUDNN_CROSS_CORRELATION);
static_assert(e::kDefaultMath == CUDNN_DEFAULT_MATH && e::kTensorOpMath == CUDNN_TENSOR_OP_MATH &&
              e::kTensorOpMathAllowConversion == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION &&
              e::kFmaMath == CUDNN_FMA_MATH);
static_assert(e::kNonDeterministic == CUDNN_NON_DETERMINISTIC &&
              e::kDeterministic == CUDNN_DETERMINISTIC);
static_assert(e::kBatchNormSpatial == CUDNN_BATCHNORM_SPATIAL);
static_assert(CUDNN_BN_MIN_EPSILON <= 0.0, "cuda/seams/cudnn_norm.cpp assumes a minimum epsilon of 0");
static_assert(e::kSoftmaxAccurate == CUDNN_SOFTMAX_ACCURATE && e::kSoftmaxLog == CUDNN_SOFTMAX_LOG &&
              e::kSoftmaxModeChannel == CUDNN_SOFTMAX_MODE_CHANNEL);
static_assert(e::kStatusSuccess == CUDNN_STATUS_SUCCESS &&
              e::kStatusNotSupported == CUDNN_STATUS_NOT_SUPPORTED &&
              e::kStatusNotSupportedLast == CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE);
// The algorithm name tables of seams/cudnn_conv_algo.cpp are indexed by these enums.
static_assert(CUDNN_CONVOLUTION_FWD_ALGO_COUNT == 8 && CUDNN_CONVOLUTION_FWD_ALGO_DIRECT == 3 &&
              CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING == 5 &&
              CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED == 7);
static_assert(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT == 6 &&
              CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING == 3 &&
              CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED == 5);
static_assert(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT == 7 &&
              CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3 == 3 &&
              CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED == 5 &&
              CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING == 6);

namespace {

using i64 = std::int64_t;
using seams::ConvDir;

// RAII descriptors, owned from the moment they are created: a Set* call that throws destroys the
// descriptor on the way out (GPU review G15). Created per call (host-side calls, no device work),
// so nothing about a shape outlives the op except the chosen algorithms.
struct TensorDeleter {
  void operator()(cudnnTensorStruct* d) const noexcept { cudnnDestroyTensorDescriptor(d); }
};
struct FilterDeleter {
  void operator()(cudnnFilterStruct* d) const noexcept { cudnnDestroyFilterDescriptor(d); }
};
struct ConvDeleter {
  void operator()(cudnnConvolutionStruct* d) const noexcept {
    cudnnDestroyConvolutionDescriptor(d);
  }
};
using TensorDesc = std::unique_ptr<cudnnTensorStruct, TensorDeleter>;
using FilterDesc = std::unique_ptr<cudnnFilterStruct, FilterDeleter>;
using ConvDesc = std::unique_ptr<cudnnConvolutionStruct, ConvDeleter>;

TensorDesc tensor_desc(const seams::Tensor4d& t) {
  cudnnTensorDescriptor_t raw = nullptr;
  COHORT_CHECK_CUDNN(cudnnCreateTensorDescriptor(&raw));
  TensorDesc d(raw);
  COHORT_CHECK_CUDNN(cudnnSetTensor4dDescriptor(d.get(),
                                                static_cast<cudnnTensorFormat_t>(e::kTensorNchw),
                                                static_cast<cudnnDataType_t>(e::kDataFloat), t.n,
                                                t.c, t.h, t.w));
  return d;
}

FilterDesc filter_desc(const seams::Filter4d& f) {
  cudnnFilterDescriptor_t raw = nullptr;
  COHORT_CHECK_CUDNN(cudnnCreateFilterDescriptor(&raw));
  FilterDesc d(raw);
  COHORT_CHECK_CUDNN(cudnnSetFilter4dDescriptor(d.get(), static_cast<cudnnDataType_t>(e::kDataFloat),
                                                static_cast<cudnnTensorFormat_t>(e::kTensorNchw),
                                                f.k, f.c, f.r, f.s));
  return d;
}

ConvDesc conv_desc(const seams::ConvValues& v) {
  cudnnConvolutionDescriptor_t raw = nullptr;
  COHORT_CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&raw));
  ConvDesc d(raw);
  COHORT_CHECK_CUDNN(cudnnSetConvolution2dDescriptor(
      d.get(), v.pad_h, v.pad_w, v.stride_h, v.stride_w, v.dil_h, v.dil_w,
      static_cast<cudnnConvolutionMode_t>(v.mode), static_cast<cudnnDataType_t>(v.compute_type)));
  COHORT_CHECK_CUDNN(cudnnSetConvolutionGroupCount(d.get(), v.groups));
  // The heuristics rank under this math type; each algorithm's own is set before it runs.
  // CUDNN_DEFAULT_MATH lets cuDNN use TF32 for f32 on Ampere and later; FMA_MATH forbids it.
  COHORT_CHECK_CUDNN(cudnnSetConvolutionMathType(
      d.get(), static_cast<cudnnMathType_t>(allow_tf32() ? e::kDefaultMath : e::kFmaMath)));
  return d;
}

// Every descriptor of one convolution, from the seam's values.
struct ConvDescs {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  explicit ConvDescs(const seams::ConvValues& v)
      : x(tensor_desc(v.x)), y(tensor_desc(v.y)), w(filter_desc(v.w)), conv(conv_desc(v)) {}
};

// What the algorithm cache is keyed on: the direction, every extent, and the two math modes (a
// change of mode picks again rather than reusing a choice made under the other rules).
using ConvKey = std::array<i64, 19>;
ConvKey key_of(ConvDir dir, const Conv2dArgs& a) {
  return {static_cast<i64>(dir), a.n,       a.c,        a.h,     a.w,     a.k,
          a.r,                   a.s,       a.stride_h, a.stride_w, a.pad_h, a.pad_w,
          a.dil_h,               a.dil_w,   a.groups,   a.oh,    a.ow,    allow_tf32() ? 1 : 0,
          deterministic_algorithms() ? 1 : 0};
}

const char* dir_name(ConvDir dir) {
  switch (dir) {
    case ConvDir::forward: return "forward";
    case ConvDir::backward_data: return "backward_data";
    case ConvDir::backward_filter: return "backward_filter";
  }
  return "?";
}

std::string shape_of(const Conv2dArgs& a) {
  return ::cohort::detail::concat("x[", a.n, ",", a.c, ",", a.h, ",", a.w, "] w[", a.k, ",",
                                  a.c / a.groups, ",", a.r, ",", a.s, "] stride ", a.stride_h,
                                  "x", a.stride_w, " pad ", a.pad_h, "x", a.pad_w, " dil ",
                                  a.dil_h, "x", a.dil_w, " groups ", a.groups);
}

// COHORT_CUDNN_LOG=1: one stderr line per algorithm choice and per fallback, so a failure on a GPU
// can be read against the algorithm that produced it (GPU review G4).
bool log_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("COHORT_CUDNN_LOG");
    return v != nullptr && v[0] == '1';
  }();
  return on;
}

// The caching allocator's out-of-memory error (backends/common/caching_allocator.hpp), the one
// allocation failure a smaller workspace can avoid.
bool is_out_of_memory(const Error& err) { return err.why().rfind("out of memory", 0) == 0; }

}  // namespace

struct Cudnn::State {
  CudaDevice& device;
  cudnnHandle_t handle = nullptr;
  // The algorithm cache and the record of what ran; the handle is used from the device's stream
  // only.
  mutable std::mutex mu;
  std::map<ConvKey, std::vector<seams::RankedAlgo>> algos;  // empty list: shared kernels
  std::map<ConvDir, ConvAlgorithmUsed> last;

  explicit State(CudaDevice& d) : device(d) {}

  // Device memory that goes back to the allocator, in stream order, when the op has been enqueued.
  struct Scratch {
    CudaDevice& device;
    void* p = nullptr;
    std::size_t bytes = 0;
    Scratch(CudaDevice& d, std::size_t n) : device(d), p(d.allocate(n)), bytes(n) {}
    ~Scratch() { device.deallocate(p, bytes); }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    float* f() const { return static_cast<float*>(p); }
  };

  // Bytes a workspace may take now: the driver's free memory plus the allocator's cached blocks
  // (it releases those before it gives up). The device is current (its stream was asked for).
  std::size_t free_bytes() const {
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
      (void)cudaGetLastError();
      return seams::kMaxWorkspace * 2;  // unknown: the fixed cap alone
    }
    const MemoryStats m = device.memory_stats();
    return free + (m.bytes_reserved - m.bytes_in_use);
  }

  // cuDNN's heuristic ranking as plain values, each entry's memory replaced by the exact workspace
  // size under that entry's math type (the heuristic's estimate is for its own settings).
  template <class Perf, class Query>
  std::vector<seams::AlgoPerf> to_plain(const Perf* perf, int returned, const ConvDescs& d,
                                        const seams::AlgoRules& rules, Query query) {
    std::vector<seams::AlgoPerf> out;
    seams::AlgoRules no_cap = rules;
    no_cap.workspace_cap = SIZE_MAX;
    for (int i = 0; i < returned; ++i) {
      const Perf& p = perf[i];
      seams::AlgoPerf v{static_cast<int>(p.algo), static_cast<int>(p.status), p.time, p.memory,
                        static_cast<int>(p.determinism), static_cast<int>(p.mathType)};
      if (!seams::rejection(v, no_cap)) {
        COHORT_CHECK_CUDNN(cudnnSetConvolutionMathType(d.conv.get(), p.mathType));
        std::size_t exact = 0;
        const cudnnStatus_t st = query(p.algo, &exact);
        if (st == CUDNN_STATUS_SUCCESS)
          v.memory = exact;
        else
          v.status = static_cast<int>(st);  // not runnable as described: passed over
      }
      out.push_back(v);
    }
    return out;
  }

  std::vector<seams::RankedAlgo> choose(ConvDir dir, const Conv2dArgs& a, const ConvDescs& d) {
    const ConvKey key = key_of(dir, a);
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = algos.find(key);
      if (it != algos.end()) return it->second;
    }
    seams::AlgoRules rules;
    rules.deterministic = deterministic_algorithms();
    rules.allow_tf32 = allow_tf32();
    rules.workspace_cap = seams::workspace_cap(free_bytes());
    std::vector<seams::AlgoPerf> plain;
    int returned = 0;
    switch (dir) {
      case ConvDir::forward: {
        std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> perf{};
        COHORT_CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(
            handle, d.x.get(), d.w.get(), d.conv.get(), d.y.get(), static_cast<int>(perf.size()),
            &returned, perf.data()));
        plain = to_plain(perf.data(), returned, d, rules, [&](auto algo, std::size_t* bytes) {
          return cudnnGetConvolutionForwardWorkspaceSize(handle, d.x.get(), d.w.get(),
                                                         d.conv.get(), d.y.get(), algo, bytes);
        });
        break;
      }
      case ConvDir::backward_data: {
        std::array<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT> perf{};
        COHORT_CHECK_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(
            handle, d.w.get(), d.y.get(), d.conv.get(), d.x.get(), static_cast<int>(perf.size()),
            &returned, perf.data()));
        plain = to_plain(perf.data(), returned, d, rules, [&](auto algo, std::size_t* bytes) {
          return cudnnGetConvolutionBackwardDataWorkspaceSize(
              handle, d.w.get(), d.y.get(), d.conv.get(), d.x.get(), algo, bytes);
        });
        break;
      }
      case ConvDir::backward_filter: {
        std::array<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>
            perf{};
        COHORT_CHECK_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            handle, d.x.get(), d.y.get(), d.conv.get(), d.w.get(), static_cast<int>(perf.size()),
            &returned, perf.data()));
        plain = to_plain(perf.data(), returned, d, rules, [&](auto algo, std::size_t* bytes) {
          return cudnnGetConvolutionBackwardFilterWorkspaceSize(
              handle, d.x.get(), d.y.get(), d.conv.get(), d.w.get(), algo, bytes);
        });
        break;
      }
    }
    std::vector<seams::RankedAlgo> ranked = seams::rank_algorithms(plain, rules);
    if (log_enabled()) {
      std::string list;
      for (const seams::AlgoPerf& p : plain) {
        const char* why = seams::rejection(p, rules);
        list += ::cohort::detail::concat(list.empty() ? "" : ", ", seams::conv_algo_name(dir, p.algo),
                                         " (", p.memory, " B", why ? ", rejected: " : "",
                                         why ? why : "", ")");
      }
      std::fprintf(stderr, "cohort cudnn: conv %s %s -> %s; workspace cap %zu B; ranked: %s\n",
                   dir_name(dir), shape_of(a).c_str(),
                   ranked.empty() ? "shared kernels" : seams::conv_algo_name(dir, ranked[0].algo),
                   rules.workspace_cap, list.c_str());
    }
    std::lock_guard<std::mutex> lock(mu);
    return algos.emplace(key, std::move(ranked)).first->second;
  }

  // An execute call reported NOT_SUPPORTED for `algo`: no later call of this shape tries it again.
  void drop(ConvDir dir, const Conv2dArgs& a, int algo) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = algos.find(key_of(dir, a));
    if (it == algos.end()) return;
    auto& list = it->second;
    for (auto i = list.begin(); i != list.end(); ++i)
      if (i->algo == algo) {
        list.erase(i);
        break;
      }
  }

  void record(ConvDir dir, const Conv2dArgs& a, const seams::RankedAlgo& r) {
    std::lock_guard<std::mutex> lock(mu);
    ConvAlgorithmUsed& u = last[dir];
    u.dir = dir;
    u.algo = r.algo;
    u.name = seams::conv_algo_name(dir, r.algo);
    u.family = seams::conv_algo_family(dir, r.algo);
    u.math_type = r.math_type;
    u.workspace = r.workspace;
    u.shape = shape_of(a);
  }

  // Runs `exec(algo, workspace pointer)` with the ranked algorithms in order until one succeeds:
  // an out-of-memory workspace moves to the next entry with a smaller workspace (G7), a
  // NOT_SUPPORTED status drops the entry from the cache and moves on (G6). False when none ran.
  template <class Exec>
  bool run_conv(ConvDir dir, const Conv2dArgs& a, const ConvDescs& d, Exec exec) {
    const std::vector<seams::RankedAlgo> ranked = choose(dir, a, d);
    std::size_t i = 0;
    while (i < ranked.size()) {
      const seams::RankedAlgo& r = ranked[i];
      std::optional<Scratch> ws;
      try {
        ws.emplace(device, r.workspace);
      } catch (const Error& err) {
        const int next = seams::next_after_out_of_memory(ranked, i);
        if (!is_out_of_memory(err) || next < 0) throw;
        if (log_enabled())
          std::fprintf(stderr, "cohort cudnn: conv %s %s: %zu B workspace for %s out of memory, "
                       "trying %s\n", dir_name(dir), shape_of(a).c_str(), r.workspace,
                       seams::conv_algo_name(dir, r.algo),
                       seams::conv_algo_name(dir, ranked[static_cast<std::size_t>(next)].algo));
        i = static_cast<std::size_t>(next);
        continue;
      }
      COHORT_CHECK_CUDNN(
          cudnnSetConvolutionMathType(d.conv.get(), static_cast<cudnnMathType_t>(r.math_type)));
      const cudnnStatus_t st = exec(r.algo, ws->p, r.workspace);
      switch (seams::execute_status_action(static_cast<int>(st))) {
        case seams::StatusAction::done:
          record(dir, a, r);
          return true;
        case seams::StatusAction::decline:
          // Assumed: a NOT_SUPPORTED status is returned before anything is launched, so dw (beta
          // 1) has not been touched and the next algorithm or the shared kernels start clean.
          if (log_enabled())
            std::fprintf(stderr, "cohort cudnn: conv %s %s: %s not supported here (%s), dropped\n",
                         dir_name(dir), shape_of(a).c_str(), seams::conv_algo_name(dir, r.algo),
                         cudnnGetErrorString(st));
          drop(dir, a, r.algo);
          ++i;
          continue;
        case seams::StatusAction::fail:
          break;
      }
      COHORT_CHECK_CUDNN(st);  // throws with cuDNN's message
    }
    return false;
  }
};

// An execute call other than a convolution: true when it ran, false when cuDNN does not support
// it here (the shared kernels run the case), else throws.
#define COHORT_CUDNN_EXECUTE(call)                                                      \
  do {                                                                                  \
    const cudnnStatus_t cohort_st_ = (call);                                            \
    switch (seams::execute_status_action(static_cast<int>(cohort_st_))) {               \
      case seams::StatusAction::done: return true;                                      \
      case seams::StatusAction::decline: return false;                                  \
      case seams::StatusAction::fail: break;                                            \
    }                                                                                   \
    COHORT_CHECK_CUDNN(cohort_st_);                                                     \
    return false;                                                                       \
  } while (0)

Cudnn::Cudnn(CudaDevice& device) : s_(std::make_unique<State>(device)) {
  void* stream = device.stream();  // also makes the device current, which the handle binds to
  COHORT_CHECK_CUDNN(cudnnCreate(&s_->handle));
  const cudnnStatus_t st = cudnnSetStream(s_->handle, static_cast<cudaStream_t>(stream));
  if (st != CUDNN_STATUS_SUCCESS) {
    cudnnDestroy(s_->handle);
    COHORT_CHECK_CUDNN(st);
  }
}

Cudnn::~Cudnn() {
  if (s_ && s_->handle) cudnnDestroy(s_->handle);
}

std::size_t Cudnn::cached_algorithms() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->algos.size();
}

std::vector<Cudnn::ConvAlgorithmUsed> Cudnn::last_algorithms() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  std::vector<ConvAlgorithmUsed> out;
  for (const auto& [dir, used] : s_->last) out.push_back(used);
  return out;
}

bool Cudnn::conv_forward(const calls::Conv2dForward& c) {
  const seams::ConvValues v = seams::conv_values(c);
  if (!v.covered) return false;
  const ConvDescs d(v);
  return s_->run_conv(ConvDir::forward, c.a, d, [&](int algo, void* ws, std::size_t bytes) {
    return cudnnConvolutionForward(s_->handle, &v.alpha, d.x.get(), c.x, d.w.get(), c.w,
                                   d.conv.get(), static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws,
                                   bytes, &v.beta, d.y.get(), c.y);
  });
}

bool Cudnn::conv_backward_data(const calls::Conv2dBackwardData& c) {
  const seams::ConvValues v = seams::conv_values(c);
  if (!v.covered) return false;
  const ConvDescs d(v);
  return s_->run_conv(ConvDir::backward_data, c.a, d, [&](int algo, void* ws, std::size_t bytes) {
    return cudnnConvolutionBackwardData(s_->handle, &v.alpha, d.w.get(), c.w, d.y.get(), c.dy,
                                        d.conv.get(),
                                        static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws,
                                        bytes, &v.beta, d.x.get(), c.dx);
  });
}

bool Cudnn::conv_backward_filter(const calls::Conv2dBackwardFilter& c) {
  const seams::ConvValues v = seams::conv_values(c);
  if (!v.covered) return false;
  const ConvDescs d(v);
  return s_->run_conv(ConvDir::backward_filter, c.a, d, [&](int algo, void* ws, std::size_t bytes) {
    return cudnnConvolutionBackwardFilter(s_->handle, &v.alpha, d.x.get(), c.x, d.y.get(), c.dy,
                                          d.conv.get(),
                                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws,
                                          bytes, &v.beta, d.w.get(), c.dw);
  });
}

// cudnnConvolutionBackwardBias is not among the routines cuDNN lists as non-reproducible (its
// "Reproducibility" notes name only atomics-based convolution algorithms, max-pooling backward and
// a few others), so deterministic_algorithms() needs no fallback here.
bool Cudnn::conv_backward_bias(const calls::Conv2dBackwardFilter& c) {
  const seams::ConvValues v = seams::conv_values(c);
  if (!v.covered || !v.bias_grad) return false;
  const TensorDesc dy = tensor_desc(v.y), db = tensor_desc(v.db);
  COHORT_CUDNN_EXECUTE(cudnnConvolutionBackwardBias(s_->handle, &v.bias_alpha, dy.get(), c.dy,
                                                    &v.bias_beta, db.get(), c.dbias));
}

// Batch norm as cuDNN's SPATIAL mode on [n, c, inner, 1]; every value from seams/cudnn_norm.hpp.
bool Cudnn::batch_norm_forward(const calls::BatchNormForward& c) {
  const seams::BnForwardValues v = seams::bn_forward_values(c);
  if (!v.covered) return false;
  const TensorDesc x = tensor_desc(v.x), bn = tensor_desc(v.bn);
  const std::size_t cbytes = static_cast<std::size_t>(v.bn.c) * sizeof(float);
  // cuDNN needs scale and bias; a layer without affine parameters gets 1 and 0.
  State::Scratch ones(s_->device, v.unit_scale ? cbytes : 0),
      zeros(s_->device, v.zero_bias ? cbytes : 0);
  const float one = 1.0f, zero = 0.0f;
  if (v.unit_scale) COHORT_CHECK_CUDNN(cudnnSetTensor(s_->handle, bn.get(), ones.p, &one));
  if (v.zero_bias) COHORT_CHECK_CUDNN(cudnnSetTensor(s_->handle, bn.get(), zeros.p, &zero));
  COHORT_CUDNN_EXECUTE(cudnnBatchNormalizationForwardTraining(
      s_->handle, static_cast<cudnnBatchNormMode_t>(v.mode), &v.alpha, &v.beta, x.get(), c.x,
      x.get(), c.y, bn.get(), v.unit_scale ? ones.f() : c.gamma, v.zero_bias ? zeros.f() : c.beta,
      v.exponential_average_factor, v.update_running ? c.running_mean : nullptr,
      v.update_running ? c.running_var : nullptr, v.epsilon, c.save_mean, c.save_invstd));
}

bool Cudnn::batch_norm_backward(const calls::BatchNormBackward& c) {
  const seams::BnBackwardValues v = seams::bn_backward_values(c);
  if (!v.covered) return false;
  const TensorDesc x = tensor_desc(v.x), bn = tensor_desc(v.bn);
  const std::size_t cbytes = static_cast<std::size_t>(v.bn.c) * sizeof(float);
  const std::size_t xbytes =
      static_cast<std::size_t>(v.x.n) * v.x.c * v.x.h * v.x.w * sizeof(float);
  // cuDNN writes every output: the ones the caller did not ask for land in scratch.
  State::Scratch ones(s_->device, v.unit_scale ? cbytes : 0),
      dx(s_->device, v.dx_scratch ? xbytes : 0), dgamma(s_->device, v.dgamma_scratch ? cbytes : 0),
      dbeta(s_->device, v.dbeta_scratch ? cbytes : 0);
  const float one = 1.0f;
  if (v.unit_scale) COHORT_CHECK_CUDNN(cudnnSetTensor(s_->handle, bn.get(), ones.p, &one));
  COHORT_CUDNN_EXECUTE(cudnnBatchNormalizationBackward(
      s_->handle, static_cast<cudnnBatchNormMode_t>(v.mode), &v.alpha_data, &v.beta_data,
      &v.alpha_param, &v.beta_param, x.get(), c.x, x.get(), c.dy, x.get(),
      v.dx_scratch ? dx.f() : c.dx, bn.get(), v.unit_scale ? ones.f() : c.gamma,
      v.dgamma_scratch ? dgamma.f() : c.dgamma, v.dbeta_scratch ? dbeta.f() : c.dbeta, v.epsilon,
      c.save_mean, c.save_invstd));
}

bool Cudnn::softmax_forward(const calls::SoftmaxForward& c) {
  const seams::SoftmaxValues v = seams::softmax_values(c.log, c.d);
  if (!v.covered) return false;
  const TensorDesc t = tensor_desc(v.t);
  COHORT_CUDNN_EXECUTE(cudnnSoftmaxForward(s_->handle, static_cast<cudnnSoftmaxAlgorithm_t>(v.algorithm),
                                           static_cast<cudnnSoftmaxMode_t>(v.mode), &v.alpha,
                                           t.get(), c.x, &v.beta, t.get(), c.y));
}

bool Cudnn::softmax_backward(const calls::SoftmaxBackward& c) {
  const seams::SoftmaxValues v = seams::softmax_values(c.log, c.d);
  if (!v.covered) return false;
  const TensorDesc t = tensor_desc(v.t);
  COHORT_CUDNN_EXECUTE(cudnnSoftmaxBackward(
      s_->handle, static_cast<cudnnSoftmaxAlgorithm_t>(v.algorithm),
      static_cast<cudnnSoftmaxMode_t>(v.mode), &v.alpha, t.get(), c.y, t.get(), c.dy, &v.beta,
      t.get(), c.dx));
}

}  // namespace cohort::cuda
