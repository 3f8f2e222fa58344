// cuDNN's convolution algorithm choice and execute-status mapping (backends/cuda/seams/
// cudnn_conv_algo.hpp, cudnn_status.hpp) on synthetic values: math type, determinism, workspace
// cap, the fallback after out of memory, the algorithms' names and tolerance families, and which
// statuses decline (the shared kernels run the case) or throw.
#include <doctest/doctest.h>

#include <cstddef>
#include <vector>

#include "cuda/seams/cudnn_conv_algo.hpp"
#include "cuda/seams/cudnn_status.hpp"
#include "cuda/seams/cudnn_values.hpp"
#if COHORT_VENDOR_CUDNN_HEADERS
#include <cudnn_graph.h>
#endif

TEST_SUITE_BEGIN("cudnn");

using namespace cohort;
using namespace cohort::cuda::seams;
namespace ce = cohort::cuda::seams::cudnn_enum;

// ---- convolution algorithm choice (GPU review G7, G8) ----

TEST_CASE("cuDNN algorithm choice: math type, determinism, status and workspace cap") {
  const std::size_t MiB = std::size_t{1} << 20;
  // A heuristic list as cuDNN returns it, best first.
  const std::vector<AlgoPerf> perf = {
      {6, ce::kStatusSuccess, 0.1f, 8 * MiB, ce::kDeterministic,
       ce::kDefaultMath},  // winograd, DEFAULT
      {1, ce::kStatusSuccess, 0.2f, 2 * MiB, ce::kDeterministic,
       ce::kTensorOpMath},                                                          // tensor cores
      {7, ce::kStatusSuccess, 0.3f, 900 * MiB, ce::kDeterministic, ce::kFmaMath},   // big workspace
      {5, ce::kStatusNotSupported, 0.4f, 0, ce::kDeterministic, ce::kFmaMath},      // failed
      {0, ce::kStatusSuccess, 0.5f, 4 * MiB, ce::kNonDeterministic, ce::kFmaMath},  // atomics
      {2, ce::kStatusSuccess, 0.6f, 16 * MiB, ce::kDeterministic, ce::kFmaMath},
      {3, ce::kStatusSuccess, 0.7f, 0, ce::kDeterministic, ce::kFmaMath},
  };
  // rejection() as a string ("" when accepted), so a wrong acceptance fails the CHECK, not a throw.
  auto why = [](const AlgoPerf& p, const AlgoRules& r) {
    const char* w = rejection(p, r);
    return std::string(w ? w : "");
  };
  auto algos = [](const std::vector<RankedAlgo>& r) {
    std::vector<int> a;
    for (const RankedAlgo& x : r) a.push_back(x.algo);
    return a;
  };
  AlgoRules rules;
  rules.workspace_cap = cohort::cuda::seams::workspace_cap(std::size_t{4} << 30);  // 1 GiB
  CHECK(rules.workspace_cap == kMaxWorkspace);

  SUBCASE("TF32 off: only FMA_MATH (DEFAULT_MATH may use TF32 on Ampere and later)") {
    CHECK(why(perf[0], rules) == "math type");
    CHECK(why(perf[1], rules) == "math type");
    CHECK(why(perf[2], rules) == "");
    CHECK(algos(rank_algorithms(perf, rules)) == std::vector<int>{7, 0, 2, 3});
    for (const RankedAlgo& r : rank_algorithms(perf, rules)) CHECK(r.math_type == ce::kFmaMath);
  }
  SUBCASE("TF32 on: any math type, still in cuDNN's order") {
    rules.allow_tf32 = true;
    const auto r = rank_algorithms(perf, rules);
    CHECK(algos(r) == std::vector<int>{6, 1, 7, 0, 2, 3});
    CHECK(r[0].math_type == ce::kDefaultMath);
    CHECK(r[0].workspace == 8 * MiB);
  }
  SUBCASE("deterministic mode: non-deterministic entries rejected") {
    rules.deterministic = true;
    CHECK(why(perf[4], rules) == "determinism");
    CHECK(algos(rank_algorithms(perf, rules)) == std::vector<int>{7, 2, 3});
  }
  SUBCASE("status other than success rejected") { CHECK(why(perf[3], rules) == "status"); }
  SUBCASE("workspace over the cap skipped: the cap follows free memory") {
    rules.workspace_cap = cohort::cuda::seams::workspace_cap(1000 * MiB);  // half of it: 500 MiB
    CHECK(rules.workspace_cap == 500 * MiB);
    CHECK(why(perf[2], rules) == "workspace");
    CHECK(algos(rank_algorithms(perf, rules)) == std::vector<int>{0, 2, 3});
    rules.workspace_cap =
        cohort::cuda::seams::workspace_cap(0);  // nothing free: only no-workspace algorithms
    CHECK(algos(rank_algorithms(perf, rules)) == std::vector<int>{3});
  }
  SUBCASE("16-bit data: every math type but ALLOW_CONVERSION (bf16 must not become f16)") {
    rules.lowp = true;
    CHECK(why(perf[0], rules) == "");
    CHECK(why(perf[1], rules) == "");
    AlgoPerf conv = perf[1];
    conv.math_type = ce::kTensorOpMathAllowConversion;
    CHECK(why(conv, rules) == "math type");
    CHECK(algos(rank_algorithms(perf, rules)) == std::vector<int>{6, 1, 7, 0, 2, 3});
  }
  SUBCASE("nothing usable: an empty list (the shared kernels run the case)") {
    const std::vector<AlgoPerf> bad = {perf[0], perf[1], perf[3]};
    CHECK(rank_algorithms(bad, rules).empty());
  }
}

TEST_CASE("cuDNN algorithm choice: workspace cap is min(1 GiB, half the free memory)") {
  CHECK(cohort::cuda::seams::workspace_cap(std::size_t{10} << 30) == std::size_t{1} << 30);
  CHECK(cohort::cuda::seams::workspace_cap(std::size_t{2} << 30) == std::size_t{1} << 30);
  CHECK(cohort::cuda::seams::workspace_cap((std::size_t{2} << 30) - 2) ==
        (std::size_t{1} << 30) - 1);
  CHECK(cohort::cuda::seams::workspace_cap(600) == 300);
}

TEST_CASE(
    "cuDNN algorithm choice: after out of memory, the next ranked entry with a smaller workspace") {
  const std::vector<RankedAlgo> ranked = {{1, 500, ce::kFmaMath},
                                          {6, 700, ce::kFmaMath},
                                          {0, 500, ce::kFmaMath},
                                          {2, 100, ce::kFmaMath},
                                          {3, 0, ce::kFmaMath}};
  CHECK(next_after_out_of_memory(ranked, 0) == 3);  // 700 and 500 are not smaller than 500
  CHECK(next_after_out_of_memory(ranked, 1) == 2);
  CHECK(next_after_out_of_memory(ranked, 3) == 4);
  CHECK(next_after_out_of_memory(ranked, 4) == -1);  // nothing smaller than 0: the error stands
  CHECK(next_after_out_of_memory(ranked, 9) == -1);
  CHECK(next_after_out_of_memory({}, 0) == -1);
}

// Benchmark mode (cohort::cudnn_benchmark()): cudnnFind*AlgorithmEx's entries as measured, some
// failed (time -1, as cuDNN reports an algorithm it could not run in the workspace given).
TEST_CASE("cuDNN benchmark mode: measured entries fastest first under the same rules") {
  const std::size_t MiB = std::size_t{1} << 20;
  const std::vector<AlgoPerf> measured = {
      {1, ce::kStatusSuccess, 0.30f, 2 * MiB, ce::kDeterministic, ce::kFmaMath},
      {4, ce::kStatusNotSupported, -1.0f, 0, ce::kDeterministic, ce::kFmaMath},       // did not run
      {0, ce::kStatusSuccess, 0.12f, 0, ce::kNonDeterministic, ce::kFmaMath},         // atomics
      {6, ce::kStatusSuccess, 0.05f, 8 * MiB, ce::kDeterministic, ce::kDefaultMath},  // TF32
      {2, ce::kStatusSuccess, 0.12f, 16 * MiB, ce::kDeterministic, ce::kFmaMath},
      {3, ce::kStatusSuccess, 0.90f, 0, ce::kDeterministic, ce::kFmaMath},
  };
  auto algos = [](const std::vector<RankedAlgo>& r) {
    std::vector<int> a;
    for (const RankedAlgo& x : r) a.push_back(x.algo);
    return a;
  };
  AlgoRules rules;
  rules.workspace_cap = kMaxWorkspace;
  // Fastest first; 0 and 2 tie at 0.12 and keep cuDNN's order; failed and TF32 entries dropped.
  CHECK(algos(rank_measured(measured, rules)) == std::vector<int>{0, 2, 1, 3});
  const std::vector<RankedAlgo> r = rank_measured(measured, rules);
  CHECK(r[1].workspace == 16 * MiB);  // each entry keeps its own workspace
  rules.allow_tf32 = true;
  CHECK(algos(rank_measured(measured, rules)) == std::vector<int>{6, 0, 2, 1, 3});
  rules.allow_tf32 = false;
  rules.deterministic = true;
  CHECK(algos(rank_measured(measured, rules)) == std::vector<int>{2, 1, 3});
  rules.workspace_cap = 4 * MiB;  // the cap holds for measured entries too
  CHECK(algos(rank_measured(measured, rules)) == std::vector<int>{1, 3});
  // Nothing usable (or nothing measured): empty, and the caller keeps the heuristic list.
  CHECK(rank_measured({measured[1], measured[3]}, AlgoRules{}).empty());
  CHECK(rank_measured({}, rules).empty());

  // The timing's workspace: the largest among the heuristic's usable entries.
  CHECK(benchmark_workspace(
            {{1, 500, ce::kFmaMath}, {6, 700, ce::kFmaMath}, {3, 0, ce::kFmaMath}}) == 700);
  CHECK(benchmark_workspace({{3, 0, ce::kFmaMath}}) == 0);
  CHECK(benchmark_workspace({}) == 0);
}

TEST_CASE("cuDNN algorithm names and tolerance families") {
  CHECK(std::string(conv_algo_name(ConvDir::forward, 1)) == "IMPLICIT_PRECOMP_GEMM");
  CHECK(std::string(conv_algo_name(ConvDir::forward, 7)) == "WINOGRAD_NONFUSED");
  CHECK(std::string(conv_algo_name(ConvDir::backward_data, 3)) == "FFT_TILING");
  CHECK(std::string(conv_algo_name(ConvDir::backward_filter, 3)) == "ALGO_3");
  CHECK(std::string(conv_algo_name(ConvDir::backward_filter, 6)) == "FFT_TILING");
  CHECK(std::string(conv_algo_name(ConvDir::forward, 8)) == "unknown");
  CHECK(conv_algo_family(ConvDir::forward, 3) == AlgoFamily::direct);
  CHECK(conv_algo_family(ConvDir::forward, 4) == AlgoFamily::fft);
  CHECK(conv_algo_family(ConvDir::backward_data, 4) == AlgoFamily::winograd);
  CHECK(conv_algo_family(ConvDir::backward_filter, 0) == AlgoFamily::gemm);
  CHECK(conv_tolerance(AlgoFamily::gemm) == 1e-5);
  CHECK(conv_tolerance(AlgoFamily::direct) == 1e-5);
  CHECK(conv_tolerance(AlgoFamily::winograd) == 1e-4);
  CHECK(conv_tolerance(AlgoFamily::fft) == 1e-4);
  CHECK(conv_tolerance(AlgoFamily::unknown) == 1e-4);
}

// ---- execute-call status (GPU review G6) ----

TEST_CASE("cuDNN execute status: NOT_SUPPORTED and its sub-codes decline, other failures throw") {
#if COHORT_VENDOR_CUDNN_HEADERS
  // Against the header the build uses.
  const int not_supported[] = {
      CUDNN_STATUS_NOT_SUPPORTED,
      CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN,
      CUDNN_STATUS_NOT_SUPPORTED_SHAPE,
      CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
      CUDNN_STATUS_NOT_SUPPORTED_LAYOUT,
      CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER,
      CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART,
      CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH,
      CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING,
      CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE,
      CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT,
      CUDNN_STATUS_NOT_SUPPORTED_PADDING,
      CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM,
      CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API,
      CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE,
  };
  const int failures[] = {CUDNN_STATUS_NOT_INITIALIZED,
                          CUDNN_STATUS_BAD_PARAM,
                          CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
                          CUDNN_STATUS_INTERNAL_ERROR,
                          CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED,
                          CUDNN_STATUS_EXECUTION_FAILED,
                          CUDNN_STATUS_EXECUTION_FAILED_CUDART,
                          CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED};
  CHECK(execute_status_action(CUDNN_STATUS_SUCCESS) == StatusAction::done);
#else
  // The documented numbers of cudnn_graph.h (cuDNN 9.19): 3000 and 3001-3014.
  std::vector<int> not_supported;
  for (int s = 3000; s <= 3014; ++s) not_supported.push_back(s);
  const int failures[] = {1001, 2000, 2002, 4000, 4004, 5000, 5003, 1008};
  CHECK(execute_status_action(0) == StatusAction::done);
#endif

  for (int s : not_supported) {
    CAPTURE(s);
    CHECK(execute_status_action(s) == StatusAction::decline);
  }
  for (int s : failures) {
    CAPTURE(s);
    CHECK(execute_status_action(s) == StatusAction::fail);
  }
  CHECK(ce::kStatusNotSupportedLast == 3014);
}

TEST_CASE(
    "cuDNN fused conv + bias + ReLU status: BAD_PARAM and INTERNAL_ERROR decline too, the rest as any execute call") {
#if COHORT_VENDOR_CUDNN_HEADERS
  const int bad_param[] = {CUDNN_STATUS_BAD_PARAM, CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
                           CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH,
                           CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE};
  const int internal[] = {CUDNN_STATUS_INTERNAL_ERROR, CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED,
                          CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                          CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED};
  const int failures[] = {CUDNN_STATUS_NOT_INITIALIZED, CUDNN_STATUS_EXECUTION_FAILED,
                          CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER};
  CHECK(fused_status_action(CUDNN_STATUS_SUCCESS) == StatusAction::done);
  CHECK(fused_status_action(CUDNN_STATUS_NOT_SUPPORTED) == StatusAction::decline);
#else
  const int bad_param[] = {2000, 2002, 2008, 2012};
  const int internal[] = {4000, 4001, 4003, 4004};
  const int failures[] = {1001, 5000, 5003};
  CHECK(fused_status_action(0) == StatusAction::done);
  CHECK(fused_status_action(3000) == StatusAction::decline);
#endif
  for (int s : bad_param) {
    CAPTURE(s);
    CHECK(fused_status_action(s) == StatusAction::decline);
    CHECK(execute_status_action(s) == StatusAction::fail);  // only the fused call declines them
  }
  // GPU review 2, Q2: an internal error of the fused call declines it (the plain route computes
  // the op and reports its own error); the execute calls still fail on it.
  for (int s : internal) {
    CAPTURE(s);
    CHECK(fused_status_action(s) == StatusAction::decline);
    CHECK(execute_status_action(s) == StatusAction::fail);
  }
  for (int s : failures) {
    CAPTURE(s);
    CHECK(fused_status_action(s) == StatusAction::fail);
  }
  CHECK(ce::kStatusBadParam == 2000);
}

TEST_SUITE_END();
