// How conv2d.cpp chooses, and falls back between, cuDNN's convolution algorithms, as plain
// values: the test (tests/vendor) feeds synthetic heuristic results without cudnn.h.
// backends/cuda/conv2d.cpp copies each cudnnConvolution*AlgoPerf_t into an AlgoPerf (memory
// replaced by the exact workspace size under that entry's math type) and keeps the ranked list this
// returns as its cached choice.
//
// Rules (review findings G6-G8 of the GPU review):
//   - status must be success; under deterministic_algorithms() only CUDNN_DETERMINISTIC entries;
//   - TF32 off: only CUDNN_FMA_MATH. CUDNN_DEFAULT_MATH lets cuDNN use TF32 for f32 data on
//     Ampere and later (cudnnMathType_t), so it is as unwanted as the TENSOR_OP types;
//   - 16-bit data (autocast): any math type but TENSOR_OP_MATH_ALLOW_CONVERSION, which may
//     convert to f16 (bf16 values out of f16's range would overflow); TENSOR_OP is the tensor
//     cores, what autocast is for;
//   - workspace at most workspace_cap(free bytes) = min(1 GiB, half the device's free memory);
//   - at run time, an out-of-memory workspace allocation moves to the next ranked entry with a
//     smaller workspace, and a NOT_SUPPORTED status from the execute call drops the entry from the
//     cached list (cudnn_status.hpp); an empty list sends the case to the shared kernels.
#pragma once

#include <cstddef>
#include <vector>

#include "cuda/seams/cudnn_conv.hpp"

namespace cohort::cuda::seams {

// One entry of cudnnGetConvolution*Algorithm_v7's output, its enums as ints (cudnn_values.hpp).
struct AlgoPerf {
  int algo = 0;
  int status = cudnn_enum::kStatusSuccess;
  float time = 0.0f;
  std::size_t memory = 0;  // workspace bytes
  int determinism = cudnn_enum::kDeterministic;
  int math_type = cudnn_enum::kFmaMath;
};

struct AlgoRules {
  bool deterministic = false;  // cohort::deterministic_algorithms()
  bool allow_tf32 = false;     // cohort::allow_tf32()
  bool lowp = false;           // the data are bf16 / f16 (ConvValues::lowp)
  std::size_t workspace_cap = 0;
};

// One usable algorithm: what the execute call gets (math type set on the descriptor first).
struct RankedAlgo {
  int algo = 0;
  std::size_t workspace = 0;
  int math_type = cudnn_enum::kFmaMath;
};

constexpr std::size_t kMaxWorkspace = std::size_t{1} << 30;

// min(kMaxWorkspace, free_bytes / 2): half, so that the workspace never takes the memory the
// activations of the rest of the step (or another process on the GPU) are about to ask for.
std::size_t workspace_cap(std::size_t free_bytes);

// Why `p` is passed over under `rules` ("status", "determinism", "math type", "workspace"), or
// nullptr when it is usable.
const char* rejection(const AlgoPerf& p, const AlgoRules& rules);

// The usable entries in cuDNN's heuristic order (best first).
std::vector<RankedAlgo> rank_algorithms(const std::vector<AlgoPerf>& perf, const AlgoRules& rules);

// Benchmark mode (cohort::cudnn_benchmark(), as torch.backends.cudnn.benchmark): the first call of
// a shape times the algorithms with cudnnFindConvolution*AlgorithmEx, and its entries (converted
// as the heuristic's are) rank by measured time, fastest first; entries with equal times keep
// cuDNN's order. The same rules pass over what may not run. Empty when none is usable (or the
// timing returned nothing): the caller keeps the heuristic ranking.
std::vector<RankedAlgo> rank_measured(const std::vector<AlgoPerf>& perf, const AlgoRules& rules);

// The workspace the timing gets: the largest of the heuristic ranking's usable entries, each
// already within the cap, so the timing can run every algorithm the heuristics would allow and
// never asks for more memory than they could.
std::size_t benchmark_workspace(const std::vector<RankedAlgo>& heuristic);

// After allocating ranked[failed].workspace ran out of memory: the index of the next entry with a
// smaller workspace, or -1 when there is none.
int next_after_out_of_memory(const std::vector<RankedAlgo>& ranked, std::size_t failed);

// cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t names ("IMPLICIT_PRECOMP_GEMM", ...) and the
// family that decides how far the result may be from a plain f32 sum: gemm and direct reorder
// FMA sums; fft and winograd round in a transform domain.
enum class AlgoFamily : int { gemm, direct, fft, winograd, unknown };
const char* conv_algo_name(ConvDir dir, int algo);
AlgoFamily conv_algo_family(ConvDir dir, int algo);
const char* algo_family_name(AlgoFamily f);
// The max |a - b| / (1 + |b|) a GPU test allows against the host for a sum computed by `f`:
// 1e-5 for gemm/direct (reordered f32 sums), 1e-4 for fft/winograd/unknown (transform rounding).
double conv_tolerance(AlgoFamily f);

}  // namespace cohort::cuda::seams
