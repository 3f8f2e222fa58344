// GEMM throughput of cohort's host device (oneDNN sgemm) next to Debian's OpenBLAS called
// directly, in the same run, for 1024^3 and the GEMM shapes of the MNIST CNN at batch 64 (the
// im2col convolutions and the linear layers, forward and both backward products).
//
//   build/bin/gemm_bench [--threads N] [--min-time SECONDS]
//
// Threads default to 1: the floor is 100 GFLOP/s on one core without any environment
// variable, and data-parallel ranks run one thread each.
#include <cblas.h>
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cohort/core/ops.hpp"
#include "cohort/devices.hpp"

namespace {
struct Shape {
  const char* what;
  bool ta, tb;
  long m, n, k;
};

// MNIST CNN (conv 1->32 3x3, conv 32->64 3x3, fc 9216->128, fc 128->10), batch 64, im2col per image
// for the convolutions, whole batch for the linear layers.
const Shape kShapes[] = {
    {"square 1024^3", false, false, 1024, 1024, 1024},
    {"conv1 fwd  W[32,9] x col[9,676]", false, false, 32, 676, 9},
    {"conv2 fwd  W[64,288] x col[288,576]", false, false, 64, 576, 288},
    {"conv2 dW   dY[64,576] x col^T", false, true, 64, 288, 576},
    {"conv2 dX   W^T[288,64] x dY[64,576]", true, false, 288, 576, 64},
    {"fc1 fwd    X[64,9216] x W^T", false, true, 64, 128, 9216},
    {"fc1 dX     dY[64,128] x W[128,9216]", false, false, 64, 9216, 128},
    {"fc1 dW     dY^T[128,64] x X[64,9216]", true, false, 128, 9216, 64},
    {"fc2 fwd    X[64,128] x W^T", false, true, 64, 10, 128},
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs fn repeatedly for at least min_time seconds (after one warm-up) and returns GFLOP/s.
template <class Fn>
double gflops(Fn fn, double flops, double min_time) {
  fn();
  long iters = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  do {
    fn();
    ++iters;
    elapsed = seconds_since(t0);
  } while (elapsed < min_time);
  return flops * static_cast<double>(iters) / elapsed / 1e9;
}
}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  double min_time = 0.5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (a == "--min-time" && i + 1 < argc) {
      min_time = std::atof(argv[++i]);
    } else {
      std::fprintf(
          stderr,
          "gemm_bench: unknown argument '%s'\nusage: gemm_bench [--threads N] [--min-time S]\n",
          argv[i]);
      return 2;
    }
  }
  if (threads < 1) {
    std::fprintf(stderr, "gemm_bench: --threads must be >= 1, got %d\n", threads);
    return 2;
  }
  // The host device decides its own count when it is created; set ours after that, or it would
  // silently run with its default while this header says otherwise.
  cohort::set_host_threads(threads);
  openblas_set_num_threads(threads);
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  std::printf("# gemm_bench: cohort %d thread(s) (%s), OpenBLAS %d thread(s); cohort host = "
              "oneDNN sgemm; peer = %s(core %s%s)\n",
              omp_get_max_threads(), cohort::host_threads().reason.c_str(),
              openblas_get_num_threads(), OPENBLAS_VERSION, openblas_get_corename(),
              coretype ? ", OPENBLAS_CORETYPE set" : ", as Debian ships it");
  std::printf("%-40s %6s %6s %6s %12s %12s %8s\n", "shape", "m", "n", "k", "cohort GF/s",
              "openblas GF/s", "ratio");
  auto& dev = cohort::host_device();
  for (const auto& s : kShapes) {
    auto a = cohort::Tensor::uniform(s.ta ? cohort::Shape{s.k, s.m} : cohort::Shape{s.m, s.k}, -1,
                                     1, 1, dev);
    auto b = cohort::Tensor::uniform(s.tb ? cohort::Shape{s.n, s.k} : cohort::Shape{s.k, s.n}, -1,
                                     1, 2, dev);
    auto c = cohort::Tensor::zeros({s.m, s.n}, cohort::DType::f32, dev);
    const double flops = 2.0 * s.m * s.n * s.k;
    const double ours = gflops([&] { cohort::ops::gemm(a, s.ta, b, s.tb, c); }, flops, min_time);
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* pc = c.data<float>();
    const double peer = gflops(
        [&] {
          cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans,
                      s.tb ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.0f, pa, s.ta ? s.m : s.k,
                      pb, s.tb ? s.k : s.n, 0.0f, pc, s.n);
        },
        flops, min_time);
    std::printf("%-40s %6ld %6ld %6ld %12.1f %12.1f %7.2fx\n", s.what, s.m, s.n, s.k, ours, peer,
                ours / peer);
  }
  return 0;
}
