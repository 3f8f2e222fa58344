// The CUDA device's math modes and failure paths, on a GPU only (exits 77, "skipped: why", without
// one):
//   - deterministic algorithms: convolution backward data and filter give bit-identical results
//     run after run (cuDNN's atomics-based algorithms are excluded);
//   - TF32 off (the default): a training-sized convolution matches the host within the parity
//     tolerance; TF32 on still matches loosely (10-bit mantissa products);
//   - out of memory: an error naming the bytes asked and the bytes free, not a crash;
//   - a batched GEMM large enough for cuBLAS's tensor-core paths matches the host;
//   - the cuDNN backward passes at the MNIST CNN's conv2 size match the host.
// Where a comparison ran on cuDNN, its line names the algorithm that ran (Cudnn::last_algorithms)
// and its tolerance follows the algorithm's family (seams::conv_tolerance): 1e-5 for GEMM-based and
// direct algorithms, whose error is a reordered f32 sum; 1e-4 for Winograd and FFT, which round in
// a transform domain (GPU review G4). cuDNN's heuristics pick per GPU and version, so the family is
// read after the run rather than assumed.
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "cohort/core/layer_ops.hpp"
#include "cohort/core/math_mode.hpp"
#include "cohort/core/ops.hpp"
#include "cohort/core/tensor.hpp"
#include "cohort/devices.hpp"
#if COHORT_TEST_CUDNN_ALGOS
#include "cuda/cuda_device.hpp"
#include "cuda/cudnn.hpp"
#endif

using namespace cohort;

namespace {

int failures = 0;
void check(bool ok, const std::string& what) {
  std::printf("%s  %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

double rel_diff(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.to(host_device()).to_vector<float>();
  const std::vector<float> y = b.to(host_device()).to_vector<float>();
  double worst = x.size() == y.size() ? 0.0 : INFINITY;
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i)
    worst = std::fmax(worst, std::fabs(double(x[i]) - y[i]) / (1.0 + std::fabs(double(y[i]))));
  return worst;
}

// The cuDNN algorithm behind the latest convolution of `dir` on `gpu` (" [cuDNN FFT_TILING (fft)]")
// and the tolerance for it: `strict` for GEMM-based/direct (and when the shared kernels ran),
// conv_tolerance(family) otherwise. A sum already compared loosely keeps its looser bound.
enum class Dir { forward, backward_data, backward_filter };
std::string conv_algo(Device& gpu, Dir dir, double strict, double* tol) {
  *tol = strict;
#if COHORT_TEST_CUDNN_ALGOS
  namespace s = cohort::cuda::seams;
  auto* cuda = dynamic_cast<cohort::cuda::CudaDevice*>(&gpu);
  if (!cuda) return "";
  const s::ConvDir want = dir == Dir::forward         ? s::ConvDir::forward
                          : dir == Dir::backward_data ? s::ConvDir::backward_data
                                                      : s::ConvDir::backward_filter;
  for (const auto& used : cuda->cudnn().last_algorithms())
    if (used.dir == want) {
      *tol = std::fmax(strict, s::conv_tolerance(used.family));
      return " [cuDNN " + used.name + " (" + s::algo_family_name(used.family) + ")]";
    }
  return " [shared kernels]";
#else
  (void)gpu;
  (void)dir;
  return "";
#endif
}

Tensor uni(Device& d, const Shape& s, std::uint64_t seed) {
  return Tensor::uniform(s, -1.0f, 1.0f, seed, host_device()).to(d);
}

}  // namespace

int main() {
  Device* gpu = nullptr;
  try {
    gpu = &device("cuda");
  } catch (const Error& e) {
    std::printf("skipped: %s\n", e.what());
    return 77;
  }
  Device& h = host_device();
  // The MNIST CNN's second convolution at batch 64.
  const Shape xs{64, 32, 26, 26}, ws{64, 32, 3, 3};
  ops::Conv2dParams p;
  const Shape ys = ops::conv2d_output_shape(xs, ws, p);

  {  // deterministic algorithms: two runs, the same bits
    set_deterministic_algorithms(true);
    auto dw_once = [&] {
      Tensor dw = Tensor::zeros(ws, DType::f32, *gpu);
      ops::conv2d_backward_filter(uni(*gpu, xs, 1), uni(*gpu, ys, 2), dw, nullptr, p);
      return dw.to(h).to_vector<float>();
    };
    auto dx_once = [&] {
      Tensor dx = Tensor::zeros(xs, DType::f32, *gpu);
      ops::conv2d_backward_data(uni(*gpu, ys, 2), uni(*gpu, ws, 3), dx, p);
      return dx.to(h).to_vector<float>();
    };
    check(dw_once() == dw_once(), "deterministic: conv2d_backward_filter bit-identical twice");
    check(dx_once() == dx_once(), "deterministic: conv2d_backward_data bit-identical twice");
    set_deterministic_algorithms(false);
  }
  {  // the backward passes at this size against the host (dw accumulates onto a random start)
    auto dw_on = [&](Device& d) {
      Tensor dw = uni(d, ws, 7), db = uni(d, {64}, 8);
      ops::conv2d_backward_filter(uni(d, xs, 1), uni(d, ys, 2), dw, &db, p);
      return std::make_pair(dw, db);
    };
    auto dx_on = [&](Device& d) {
      Tensor dx = Tensor::zeros(xs, DType::f32, d);
      ops::conv2d_backward_data(uni(d, ys, 2), uni(d, ws, 3), dx, p);
      return dx;
    };
    const auto g = dw_on(*gpu), hst = dw_on(h);
    double tol = 0;
    const std::string algo = conv_algo(*gpu, Dir::backward_filter, 1e-4, &tol);
    check(rel_diff(g.first, hst.first) <= tol,
          "conv2d_backward_filter dw vs host (1e-4: sums of 43264 products)" + algo);
    check(rel_diff(g.second, hst.second) <= 1e-4, "conv2d_backward_filter dbias vs host");
    const Tensor dx = dx_on(*gpu);
    const std::string dalgo = conv_algo(*gpu, Dir::backward_data, 1e-5, &tol);
    check(rel_diff(dx, dx_on(h)) <= tol, "conv2d_backward_data vs host" + dalgo);
  }
  auto conv_on = [&](Device& d) {
    Tensor y = Tensor::zeros(ys, DType::f32, d);
    Tensor b = uni(d, {64}, 4);
    ops::conv2d_forward(uni(d, xs, 1), uni(d, ws, 3), &b, y, p, Activation::relu);
    return y;
  };
  const Tensor want = conv_on(h);
  {
    set_allow_tf32(false);
    const double d = rel_diff(conv_on(*gpu), want);
    double tol = 0;
    const std::string algo = conv_algo(*gpu, Dir::forward, 1e-5, &tol);
    check(d <= tol, "TF32 off: conv2d_forward [64,32,26,26] vs host, max rel diff " +
                        std::to_string(d) + algo);
    set_allow_tf32(true);
    const double d2 = rel_diff(conv_on(*gpu), want);
    check(d2 <= 5e-2, "TF32 on: conv2d_forward vs host, max rel diff " + std::to_string(d2) +
                          " (loose: 10-bit mantissa products)");
    set_allow_tf32(false);
  }
  {
    Tensor a = uni(*gpu, {8, 128, 64}, 5), b = uni(*gpu, {8, 64, 128}, 6);
    const double d = rel_diff(ops::bmm(a, b, false, false), ops::bmm(a.to(h), b.to(h)));
    check(d <= 1e-5, "bmm [8,128,64] x [8,64,128] vs host, max rel diff " + std::to_string(d));
  }
  {  // out of memory: far more than any GPU has
    std::string msg;
    try {
      Tensor t = Tensor::empty({std::int64_t{1} << 40}, DType::f32, *gpu);
    } catch (const Error& e) {
      msg = e.what();
    }
    check(msg.find("4398046511104 bytes") != std::string::npos && msg.find("free") != std::string::npos,
          "out of memory names the bytes asked and free: " + msg);
    // The device still works afterwards.
    const double d = rel_diff(conv_on(*gpu), want);
    double tol = 0;
    const std::string algo = conv_algo(*gpu, Dir::forward, 1e-5, &tol);
    check(d <= tol, "after the failed allocation the device still computes" + algo);
  }
  std::printf("%d failed\n", failures);
  return failures ? 1 : 0;
}
