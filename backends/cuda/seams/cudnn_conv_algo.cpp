// Plain-value algorithm choice for cuDNN convolutions (see cudnn_conv_algo.hpp).
#include "cuda/seams/cudnn_conv_algo.hpp"

#include <algorithm>

namespace cohort::cuda::seams {

std::size_t workspace_cap(std::size_t free_bytes) {
  return std::min(kMaxWorkspace, free_bytes / 2);
}

const char* rejection(const AlgoPerf& p, const AlgoRules& rules) {
  if (p.status != cudnn_enum::kStatusSuccess) return "status";
  if (rules.deterministic && p.determinism != cudnn_enum::kDeterministic) return "determinism";
  if (rules.lowp) {
    // 16-bit data: tensor cores are the point; a conversion would take bf16 to f16's range.
    if (p.math_type == cudnn_enum::kTensorOpMathAllowConversion) return "math type";
  } else if (!rules.allow_tf32 && p.math_type != cudnn_enum::kFmaMath) {
    return "math type";
  }
  if (p.memory > rules.workspace_cap) return "workspace";
  return nullptr;
}

std::vector<RankedAlgo> rank_algorithms(const std::vector<AlgoPerf>& perf,
                                        const AlgoRules& rules) {
  std::vector<RankedAlgo> out;
  for (const AlgoPerf& p : perf)
    if (!rejection(p, rules)) out.push_back(RankedAlgo{p.algo, p.memory, p.math_type});
  return out;
}

std::vector<RankedAlgo> rank_measured(const std::vector<AlgoPerf>& perf, const AlgoRules& rules) {
  std::vector<AlgoPerf> usable;
  for (const AlgoPerf& p : perf)
    if (!rejection(p, rules)) usable.push_back(p);
  std::stable_sort(usable.begin(), usable.end(),
                   [](const AlgoPerf& a, const AlgoPerf& b) { return a.time < b.time; });
  return rank_algorithms(usable, rules);
}

std::size_t benchmark_workspace(const std::vector<RankedAlgo>& heuristic) {
  std::size_t most = 0;
  for (const RankedAlgo& r : heuristic) most = std::max(most, r.workspace);
  return most;
}

int next_after_out_of_memory(const std::vector<RankedAlgo>& ranked, std::size_t failed) {
  if (failed >= ranked.size()) return -1;
  for (std::size_t i = failed + 1; i < ranked.size(); ++i)
    if (ranked[i].workspace < ranked[failed].workspace) return static_cast<int>(i);
  return -1;
}

namespace {
struct NamedAlgo {
  const char* name;
  AlgoFamily family;
};
// Indexed by the enum values of cudnn_ops.h (static_asserted in backends/cuda/cudnn.cpp).
constexpr NamedAlgo kForward[] = {
    {"IMPLICIT_GEMM", AlgoFamily::gemm}, {"IMPLICIT_PRECOMP_GEMM", AlgoFamily::gemm},
    {"GEMM", AlgoFamily::gemm},          {"DIRECT", AlgoFamily::direct},
    {"FFT", AlgoFamily::fft},            {"FFT_TILING", AlgoFamily::fft},
    {"WINOGRAD", AlgoFamily::winograd},  {"WINOGRAD_NONFUSED", AlgoFamily::winograd}};
constexpr NamedAlgo kBackwardData[] = {
    {"ALGO_0", AlgoFamily::gemm},       {"ALGO_1", AlgoFamily::gemm},
    {"FFT", AlgoFamily::fft},           {"FFT_TILING", AlgoFamily::fft},
    {"WINOGRAD", AlgoFamily::winograd}, {"WINOGRAD_NONFUSED", AlgoFamily::winograd}};
constexpr NamedAlgo kBackwardFilter[] = {
    {"ALGO_0", AlgoFamily::gemm},          {"ALGO_1", AlgoFamily::gemm},
    {"FFT", AlgoFamily::fft},              {"ALGO_3", AlgoFamily::gemm},
    {"WINOGRAD", AlgoFamily::winograd},    {"WINOGRAD_NONFUSED", AlgoFamily::winograd},
    {"FFT_TILING", AlgoFamily::fft}};

template <std::size_t N>
NamedAlgo lookup(const NamedAlgo (&table)[N], int algo) {
  if (algo < 0 || static_cast<std::size_t>(algo) >= N) return {"unknown", AlgoFamily::unknown};
  return table[algo];
}
NamedAlgo lookup(ConvDir dir, int algo) {
  switch (dir) {
    case ConvDir::forward: return lookup(kForward, algo);
    case ConvDir::backward_data: return lookup(kBackwardData, algo);
    case ConvDir::backward_filter: return lookup(kBackwardFilter, algo);
  }
  return {"unknown", AlgoFamily::unknown};
}
}  // namespace

const char* conv_algo_name(ConvDir dir, int algo) { return lookup(dir, algo).name; }
AlgoFamily conv_algo_family(ConvDir dir, int algo) { return lookup(dir, algo).family; }

const char* algo_family_name(AlgoFamily f) {
  switch (f) {
    case AlgoFamily::gemm: return "gemm";
    case AlgoFamily::direct: return "direct";
    case AlgoFamily::fft: return "fft";
    case AlgoFamily::winograd: return "winograd";
    case AlgoFamily::unknown: break;
  }
  return "unknown";
}

double conv_tolerance(AlgoFamily f) {
  return f == AlgoFamily::gemm || f == AlgoFamily::direct ? 1e-5 : 1e-4;
}

}  // namespace cohort::cuda::seams
