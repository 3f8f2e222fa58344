// The convolution family on the CUDA device: cuDNN's whole-batch convolutions (forward, backward
// data, backward filter, backward bias) and the choice of algorithm for each shape. op_table.cu
// routes the three convolution ops here first; a case cuDNN declines runs the shared per-image
// im2col + GEMM family (backends/common/ops/conv2d.hpp) on this device.
//
// Every argument of every cuDNN call comes from a seam of plain values (seams/cudnn_conv.hpp,
// seams/cudnn_conv_algo.hpp: descriptor extents, modes, alpha/beta, coverage, the algorithm
// ranking and what an execute status means), which tests/vendor checks on the CPU. Workspaces come
// from the device's allocator and go back to it in stream order right after the call is enqueued.
#include <array>
#include <atomic>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cohort/core/math_mode.hpp"
#include "cuda/seams/cudnn_conv.hpp"
#include "cuda/seams/cudnn_status.hpp"
#include "cudnn_state.hpp"

namespace cohort::cuda {
namespace {

using namespace cudnn_detail;
using seams::ConvDir;

// The math type the heuristics (and the timing of benchmark mode) rank under; each algorithm's own
// is set before it runs. CUDNN_DEFAULT_MATH lets cuDNN use TF32 for f32 on Ampere and later;
// FMA_MATH forbids it. 16-bit data rank under TENSOR_OP_MATH, the tensor cores autocast is for.
int ranking_math(bool lowp) {
  return lowp ? e::kTensorOpMath : allow_tf32() ? e::kDefaultMath : e::kFmaMath;
}

ConvDesc conv_desc(const seams::ConvValues& v) {
  cudnnConvolutionDescriptor_t raw = nullptr;
  COHORT_CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&raw));
  ConvDesc d(raw);
  COHORT_CHECK_CUDNN(cudnnSetConvolution2dDescriptor(
      d.get(), v.pad_h, v.pad_w, v.stride_h, v.stride_w, v.dil_h, v.dil_w,
      static_cast<cudnnConvolutionMode_t>(v.mode), static_cast<cudnnDataType_t>(v.compute_type)));
  COHORT_CHECK_CUDNN(cudnnSetConvolutionGroupCount(d.get(), v.groups));
  COHORT_CHECK_CUDNN(
      cudnnSetConvolutionMathType(d.get(), static_cast<cudnnMathType_t>(ranking_math(v.lowp))));
  return d;
}

// Bytes per element of the convolution's data (f32, or autocast's bf16 / f16 copies).
std::size_t elem_bytes(const seams::ConvValues& v) { return v.lowp ? 2 : 4; }

}  // namespace

// Every descriptor of one convolution shape, from the seam's values (cudnn_state.hpp declares it
// for State's cache).
struct cudnn_detail::ConvDescs {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  explicit ConvDescs(const seams::ConvValues& v)
      : x(tensor_desc(v.x, v.data_type)),
        y(tensor_desc(v.y, v.data_type)),
        w(filter_desc(v.w, v.data_type)),
        conv(conv_desc(v)) {}
};

namespace {

ConvKey key_of(ConvDir dir, bool fused, const Conv2dArgs& a);

// The descriptors of `a`'s shape, made on its first call and kept (State::conv_descs), as
// PyTorch keeps them: a small convolution cost 27 us of host time per call on the H100 against
// PyTorch's 14, and creating and setting five descriptors per call is the difference found by
// reading the code (not timed apart). One entry serves the three
// directions; the key holds every extent, the data type and the math modes the descriptors
// encode. The convolution descriptor's math type changes per algorithm run (run_conv), so
// rankings set it back first; like the handle, the descriptors serve one thread at a time (the
// one enqueuing on the device's stream).
std::shared_ptr<ConvDescs> descs_for(Cudnn::State& s, const Conv2dArgs& a,
                                     const seams::ConvValues& v) {
  const ConvKey key = key_of(ConvDir::forward, false, a);
  std::lock_guard<std::mutex> lock(s.mu);
  std::shared_ptr<ConvDescs>& d = s.conv_descs[key];
  if (!d) d = std::make_shared<ConvDescs>(v);
  return d;
}

// The operands benchmark mode times the algorithms on: the call's two inputs (forward x and w,
// backward data w and dy, backward filter x and dy) and the output's size in bytes. The timing
// writes a scratch output of that size, never the call's own (backward filter adds to dw).
struct FindIo {
  const void* a;
  const void* b;
  std::size_t out_bytes;
};

// What the algorithm cache is keyed on (cudnn_state.hpp's ConvKey): a change of mode or data type
// picks again rather than reusing a choice made under other rules.
// The fused forward (bias and ReLU in the call) has its own entry: an algorithm that declines the
// fused call may still run the plain one.
ConvKey key_of(ConvDir dir, bool fused, const Conv2dArgs& a) {
  // clang-format off
  return {static_cast<i64>(dir) + (fused ? 3 : 0), a.n, a.c, a.h, a.w, a.k, a.r, a.s, a.stride_h, a.stride_w,
          a.pad_h, a.pad_w, a.dil_h, a.dil_w, a.groups, a.oh, a.ow, allow_tf32() ? 1 : 0,
          deterministic_algorithms() ? 1 : 0, static_cast<i64>(a.compute), cudnn_benchmark() ? 1 : 0};
  // clang-format on
}

const char* dir_name(ConvDir dir, bool fused = false) {
  switch (dir) {
    case ConvDir::forward:
      return fused ? "forward + bias + relu" : "forward";
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

// The caching allocator's out-of-memory error (backends/common/caching_allocator.hpp), the one
// allocation failure a smaller workspace can avoid.
bool is_out_of_memory(const Error& err) { return err.why().rfind("out of memory", 0) == 0; }

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

// The exact workspace of one algorithm of a direction (its enum type picks the query), as
// to_plain asks it for each entry.
struct WorkspaceQuery {
  Cudnn::State& s;
  const ConvDescs& d;
  cudnnStatus_t operator()(cudnnConvolutionFwdAlgo_t algo, std::size_t* bytes) const {
    return cudnnGetConvolutionForwardWorkspaceSize(s.handle, d.x.get(), d.w.get(), d.conv.get(),
                                                   d.y.get(), algo, bytes);
  }
  cudnnStatus_t operator()(cudnnConvolutionBwdDataAlgo_t algo, std::size_t* bytes) const {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(s.handle, d.w.get(), d.y.get(),
                                                        d.conv.get(), d.x.get(), algo, bytes);
  }
  cudnnStatus_t operator()(cudnnConvolutionBwdFilterAlgo_t algo, std::size_t* bytes) const {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(s.handle, d.x.get(), d.y.get(),
                                                          d.conv.get(), d.w.get(), algo, bytes);
  }
};

// Benchmark mode's timing: cudnnFindConvolution*AlgorithmEx over every algorithm, on the call's
// inputs, a scratch output and a workspace of `ws_bytes`, converted as the heuristic's entries are.
// It runs on the handle's stream (after the work that made the inputs) and waits for its timings.
// The workspace goes back to the driver afterwards, not to the cache (Scratch's to_driver).
std::vector<seams::AlgoPerf> measure(Cudnn::State& s, ConvDir dir, const ConvDescs& d,
                                     const FindIo& io, std::size_t ws_bytes,
                                     const seams::AlgoRules& rules) {
  const Cudnn::State::Scratch out(s.device, io.out_bytes), ws(s.device, ws_bytes, true);
  int returned = 0;
  COHORT_CHECK_CUDNN(cudnnSetConvolutionMathType(
      d.conv.get(), static_cast<cudnnMathType_t>(ranking_math(rules.lowp))));
  switch (dir) {
    case ConvDir::forward: {
      std::array<cudnnConvolutionFwdAlgoPerf_t, 2 * CUDNN_CONVOLUTION_FWD_ALGO_COUNT> perf{};
      COHORT_CHECK_CUDNN(cudnnFindConvolutionForwardAlgorithmEx(
          s.handle, d.x.get(), io.a, d.w.get(), io.b, d.conv.get(), d.y.get(), out.p,
          static_cast<int>(perf.size()), &returned, perf.data(), ws.p, ws_bytes));
      return to_plain(perf.data(), returned, d, rules, WorkspaceQuery{s, d});
    }
    case ConvDir::backward_data: {
      std::array<cudnnConvolutionBwdDataAlgoPerf_t, 2 * CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>
          perf{};
      COHORT_CHECK_CUDNN(cudnnFindConvolutionBackwardDataAlgorithmEx(
          s.handle, d.w.get(), io.a, d.y.get(), io.b, d.conv.get(), d.x.get(), out.p,
          static_cast<int>(perf.size()), &returned, perf.data(), ws.p, ws_bytes));
      return to_plain(perf.data(), returned, d, rules, WorkspaceQuery{s, d});
    }
    case ConvDir::backward_filter: {
      std::array<cudnnConvolutionBwdFilterAlgoPerf_t, 2 * CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>
          perf{};
      COHORT_CHECK_CUDNN(cudnnFindConvolutionBackwardFilterAlgorithmEx(
          s.handle, d.x.get(), io.a, d.y.get(), io.b, d.conv.get(), d.w.get(), out.p,
          static_cast<int>(perf.size()), &returned, perf.data(), ws.p, ws_bytes));
      return to_plain(perf.data(), returned, d, rules, WorkspaceQuery{s, d});
    }
  }
  return {};
}

// Benchmark mode could not time a shape: said once per process (COHORT_CUDNN_LOG=1 names each).
void note_untimed(ConvDir dir, bool fused, const Conv2dArgs& a, const Error& err) {
  static std::atomic<bool> said{false};
  if (!log_enabled() && said.exchange(true)) return;
  std::fprintf(stderr,
               "cohort cudnn: benchmark mode could not time conv %s%s %s (%s); cuDNN's heuristic "
               "order runs it%s\n",
               dir_name(dir), fused ? " + bias + relu (fused)" : "", shape_of(a).c_str(), err.what(),
               log_enabled() ? ""
                             : " (further such shapes are not reported; COHORT_CUDNN_LOG=1 "
                               "lists each)");
}

std::vector<seams::RankedAlgo> choose(Cudnn::State& s, ConvDir dir, bool fused, const Conv2dArgs& a,
                                      const ConvDescs& d, const FindIo& io) {
  const ConvKey key = key_of(dir, fused, a);
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.algos.find(key);
    if (it != s.algos.end()) return it->second;
  }
  seams::AlgoRules rules;
  rules.deterministic = deterministic_algorithms();
  rules.allow_tf32 = allow_tf32();
  rules.lowp = a.compute != DType::f32;
  rules.workspace_cap = seams::workspace_cap(s.free_bytes());
  std::vector<seams::AlgoPerf> plain;
  int returned = 0;
  COHORT_CHECK_CUDNN(cudnnSetConvolutionMathType(
      d.conv.get(), static_cast<cudnnMathType_t>(ranking_math(rules.lowp))));
  switch (dir) {
    case ConvDir::forward: {
      std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> perf{};
      COHORT_CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(
          s.handle, d.x.get(), d.w.get(), d.conv.get(), d.y.get(), static_cast<int>(perf.size()),
          &returned, perf.data()));
      plain = to_plain(perf.data(), returned, d, rules, WorkspaceQuery{s, d});
      break;
    }
    case ConvDir::backward_data: {
      std::array<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT> perf{};
      COHORT_CHECK_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(
          s.handle, d.w.get(), d.y.get(), d.conv.get(), d.x.get(), static_cast<int>(perf.size()),
          &returned, perf.data()));
      plain = to_plain(perf.data(), returned, d, rules, WorkspaceQuery{s, d});
      break;
    }
    case ConvDir::backward_filter: {
      std::array<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>
          perf{};
      COHORT_CHECK_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          s.handle, d.x.get(), d.y.get(), d.conv.get(), d.w.get(), static_cast<int>(perf.size()),
          &returned, perf.data()));
      plain = to_plain(perf.data(), returned, d, rules, WorkspaceQuery{s, d});
      break;
    }
  }
  std::vector<seams::RankedAlgo> ranked = seams::rank_algorithms(plain, rules);
  if (cudnn_benchmark() && !ranked.empty()) {
    // Time what the heuristics allow, fastest first; the heuristic order stays when the timing
    // leaves nothing usable, or cannot run: the timing is an optimisation, so out of memory for
    // its scratch output and workspace (GPU review G7), or a status Find fails with, must not
    // fail the op.
    std::vector<seams::AlgoPerf> timed;
    try {
      timed = measure(s, dir, d, io, seams::benchmark_workspace(ranked), rules);
    } catch (const Error& err) {
      note_untimed(dir, fused, a, err);
    }
    std::vector<seams::RankedAlgo> fastest = seams::rank_measured(timed, rules);
    if (log_enabled()) {
      std::string list;
      for (const seams::AlgoPerf& p : timed)
        list += ::cohort::detail::concat(list.empty() ? "" : ", ",
                                         seams::conv_algo_name(dir, p.algo), " ", p.time, " ms");
      std::fprintf(stderr, "cohort cudnn: conv %s %s benchmark: %s; timed: %s\n",
                   dir_name(dir, fused), shape_of(a).c_str(),
                   fastest.empty() ? "nothing usable, heuristic order kept"
                                   : seams::conv_algo_name(dir, fastest[0].algo),
                   list.c_str());
    }
    if (!fastest.empty()) {
      ranked = std::move(fastest);
      plain = std::move(timed);
    }
  }
  if (log_enabled()) {
    std::string list;
    for (const seams::AlgoPerf& p : plain) {
      const char* why = seams::rejection(p, rules);
      list += ::cohort::detail::concat(list.empty() ? "" : ", ", seams::conv_algo_name(dir, p.algo),
                                       " (", p.memory, " B", why ? ", rejected: " : "",
                                       why ? why : "", ")");
    }
    std::fprintf(stderr, "cohort cudnn: conv %s %s -> %s; workspace cap %zu B; ranked: %s\n",
                 dir_name(dir, fused), shape_of(a).c_str(),
                 ranked.empty() ? "shared kernels" : seams::conv_algo_name(dir, ranked[0].algo),
                 rules.workspace_cap, list.c_str());
  }
  std::lock_guard<std::mutex> lock(s.mu);
  return s.algos.emplace(key, std::move(ranked)).first->second;
}

// An execute call reported NOT_SUPPORTED for `algo`: no later call of this shape tries it again.
void drop(Cudnn::State& s, ConvDir dir, bool fused, const Conv2dArgs& a, int algo) {
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.algos.find(key_of(dir, fused, a));
  if (it == s.algos.end()) return;
  auto& list = it->second;
  for (auto i = list.begin(); i != list.end(); ++i)
    if (i->algo == algo) {
      list.erase(i);
      break;
    }
}

void record(Cudnn::State& s, ConvDir dir, bool fused, const Conv2dArgs& a,
            const seams::RankedAlgo& r) {
  std::lock_guard<std::mutex> lock(s.mu);
  Cudnn::ConvAlgorithmUsed& u = s.last[dir];
  u.dir = dir;
  u.algo = r.algo;
  u.name = seams::conv_algo_name(dir, r.algo);
  u.family = seams::conv_algo_family(dir, r.algo);
  u.math_type = r.math_type;
  u.workspace = r.workspace;
  u.shape = shape_of(a);
  u.fused_bias_act = fused;
}

// Runs `exec(algo, workspace pointer)` with the ranked algorithms in order until one succeeds:
// an out-of-memory workspace moves to the next entry with a smaller workspace (G7), a
// NOT_SUPPORTED status drops the entry from the cache and moves on (G6). False when none ran.
// `fused`: the forward call with bias and ReLU, ranked as the plain forward but cached apart.
template <class Exec>
bool run_conv(Cudnn::State& s, ConvDir dir, bool fused, const Conv2dArgs& a, const ConvDescs& d,
              const FindIo& io, Exec exec) {
  const std::vector<seams::RankedAlgo> ranked = choose(s, dir, fused, a, d, io);
  std::size_t i = 0;
  while (i < ranked.size()) {
    const seams::RankedAlgo& r = ranked[i];
    std::optional<Cudnn::State::Scratch> ws;
    try {
      ws.emplace(s.device, r.workspace);
    } catch (const Error& err) {
      const int next = seams::next_after_out_of_memory(ranked, i);
      if (!is_out_of_memory(err) || next < 0) throw;
      if (log_enabled())
        std::fprintf(stderr,
                     "cohort cudnn: conv %s %s: %zu B workspace for %s out of memory, "
                     "trying %s\n",
                     dir_name(dir, fused), shape_of(a).c_str(), r.workspace,
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
        record(s, dir, fused, a, r);
        return true;
      case seams::StatusAction::decline:
        // Assumed: a NOT_SUPPORTED status is returned before anything is launched, so dw (beta
        // 1) has not been touched and the next algorithm or the shared kernels start clean.
        if (log_enabled())
          std::fprintf(stderr, "cohort cudnn: conv %s %s: %s not supported here (%s), dropped\n",
                       dir_name(dir, fused), shape_of(a).c_str(),
                       seams::conv_algo_name(dir, r.algo), cudnnGetErrorString(st));
        drop(s, dir, fused, a, r.algo);
        ++i;
        continue;
      case seams::StatusAction::fail:
        break;
    }
    COHORT_CHECK_CUDNN(st);  // throws with cuDNN's message
  }
  return false;
}

ActivationDesc activation_desc(const seams::ConvValues& v) {
  cudnnActivationDescriptor_t raw = nullptr;
  COHORT_CHECK_CUDNN(cudnnCreateActivationDescriptor(&raw));
  ActivationDesc d(raw);
  COHORT_CHECK_CUDNN(
      cudnnSetActivationDescriptor(d.get(), static_cast<cudnnActivationMode_t>(v.act_mode),
                                   static_cast<cudnnNanPropagation_t>(v.act_nan), 0.0));
  return d;
}

// The fused forward did not run for a shape: every ranked algorithm declined it, or the rules left
// none to try (GPU review 2, H6: both end here). Said once per process; the convolution then runs
// unfused (cuDNN's plain call, or the shared kernels where cuDNN has no algorithm either), and the
// bias + ReLU as a pass of its own, as with fusion off.
void note_unfused(const Conv2dArgs& a) {
  static std::atomic<bool> said{false};
  if (said.exchange(true)) return;
  std::fprintf(stderr,
               "cohort cudnn: conv + bias + relu %s not fused: cuDNN's fused call declined every "
               "algorithm tried, or none was eligible; the convolution runs unfused and the bias "
               "+ relu as a pass of its own (further such shapes are not reported; "
               "COHORT_CUDNN_LOG=1 lists each decline)\n",
               shape_of(a).c_str());
}

}  // namespace

bool Cudnn::conv_forward(const calls::Conv2dForward& c, const ConvLowp* lowp, bool* bias_act) {
  if (bias_act) *bias_act = false;
  const seams::ConvValues v = seams::conv_values(c);
  if (!v.covered) return false;
  COHORT_CHECK(v.lowp == (lowp != nullptr),
               "cuDNN conv forward: 16-bit copies are passed exactly under autocast");
  const void* x = lowp ? lowp->x : c.x;
  const void* w = lowp ? lowp->w : c.w;
  void* y = lowp ? lowp->out : c.y;
  const std::shared_ptr<ConvDescs> dp = descs_for(*s_, c.a, v);
  const ConvDescs& d = *dp;
  const FindIo io{x, w, static_cast<std::size_t>(c.a.n * c.a.k * c.a.oh * c.a.ow) * elem_bytes(v)};
  if (v.fused_bias_act && bias_act) {
    const TensorDesc b = tensor_desc(v.bias);
    const ActivationDesc act = activation_desc(v);
    // z is y with alpha2 0, as cuDNN's samples and TensorFlow's fused convolution pass it. A
    // status the fused call may decline with (seams::fused_status_action) reads as NOT_SUPPORTED
    // to run_conv: that algorithm is dropped for the fused call only.
    if (run_conv(
            *s_, ConvDir::forward, true, c.a, d, io, [&](int algo, void* ws, std::size_t bytes) {
              const cudnnStatus_t st = cudnnConvolutionBiasActivationForward(
                  s_->handle, &v.alpha, d.x.get(), x, d.w.get(), w, d.conv.get(),
                  static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws, bytes, &v.alpha2, d.y.get(), y,
                  b.get(), c.bias, act.get(), d.y.get(), y);
              if (st != CUDNN_STATUS_SUCCESS && seams::fused_status_action(static_cast<int>(st)) ==
                                                    seams::StatusAction::decline) {
                if (log_enabled())
                  std::fprintf(stderr,
                               "cohort cudnn: conv forward + bias + relu %s: %s declined it (%s)\n",
                               shape_of(c.a).c_str(), seams::conv_algo_name(ConvDir::forward, algo),
                               cudnnGetErrorString(st));
                return CUDNN_STATUS_NOT_SUPPORTED;
              }
              return st;
            })) {
      *bias_act = true;
      return true;
    }
    note_unfused(c.a);
  }
  return run_conv(
      *s_, ConvDir::forward, false, c.a, d, io, [&](int algo, void* ws, std::size_t bytes) {
        return cudnnConvolutionForward(s_->handle, &v.alpha, d.x.get(), x, d.w.get(), w,
                                       d.conv.get(), static_cast<cudnnConvolutionFwdAlgo_t>(algo),
                                       ws, bytes, &v.beta, d.y.get(), y);
      });
}

bool Cudnn::conv_backward_data(const calls::Conv2dBackwardData& c, const ConvLowp* lowp) {
  const seams::ConvValues v = seams::conv_values(c);
  if (!v.covered) return false;
  COHORT_CHECK(v.lowp == (lowp != nullptr),
               "cuDNN conv backward data: 16-bit copies are passed exactly under autocast");
  const void* w = lowp ? lowp->w : c.w;
  const void* dy = lowp ? lowp->dy : c.dy;
  void* dx = lowp ? lowp->out : c.dx;
  const std::shared_ptr<ConvDescs> dp = descs_for(*s_, c.a, v);
  const ConvDescs& d = *dp;
  const FindIo io{w, dy, static_cast<std::size_t>(c.a.n * c.a.c * c.a.h * c.a.w) * elem_bytes(v)};
  return run_conv(
      *s_, ConvDir::backward_data, false, c.a, d, io, [&](int algo, void* ws, std::size_t bytes) {
        return cudnnConvolutionBackwardData(
            s_->handle, &v.alpha, d.w.get(), w, d.y.get(), dy, d.conv.get(),
            static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws, bytes, &v.beta, d.x.get(), dx);
      });
}

bool Cudnn::conv_backward_filter(const calls::Conv2dBackwardFilter& c, const ConvLowp* lowp) {
  const seams::ConvValues v = seams::conv_values(c);
  if (!v.covered) return false;
  COHORT_CHECK(v.lowp == (lowp != nullptr),
               "cuDNN conv backward filter: 16-bit copies are passed exactly under autocast");
  const void* x = lowp ? lowp->x : c.x;
  const void* dy = lowp ? lowp->dy : c.dy;
  void* dw = lowp ? lowp->out : c.dw;  // under autocast overwritten (beta 0), the caller adds it
  const std::shared_ptr<ConvDescs> dp = descs_for(*s_, c.a, v);
  const ConvDescs& d = *dp;
  const FindIo io{
      x, dy,
      static_cast<std::size_t>(c.a.k * (c.a.c / c.a.groups) * c.a.r * c.a.s) * elem_bytes(v)};
  return run_conv(
      *s_, ConvDir::backward_filter, false, c.a, d, io, [&](int algo, void* ws, std::size_t bytes) {
        return cudnnConvolutionBackwardFilter(
            s_->handle, &v.alpha, d.x.get(), x, d.y.get(), dy, d.conv.get(),
            static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws, bytes, &v.beta, d.w.get(), dw);
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

}  // namespace cohort::cuda
