// The host device's oneDNN convolutions (backends/host/conv2d.hpp) against a direct
// convolution written out loop by loop in double, over the shapes the layers and the model zoo
// produce and the awkward ones (strides whose floor drops trailing input rows, dilation, groups,
// depthwise, 1x1, padding wider than the kernel's reach); and the host's split of shared-kernel
// launches between threads: bit-identical to one thread, and safe across fork().
#include <doctest/doctest.h>
#include <omp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>
#include <vector>

#include "cohort/core/layer_ops.hpp"
#include "cohort/core/math_mode.hpp"
#include "cohort/core/ops.hpp"
#include "cohort/devices.hpp"
#include "common/testing.hpp"
#include "host/conv2d.hpp"

using cohort::Conv2dArgs;
using cohort::testing::error_of;
namespace calls = cohort::calls;
namespace ops = cohort::ops;

namespace {

std::vector<float> random_vector(std::int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = dist(gen);
  return v;
}

Conv2dArgs shape(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t k,
                 std::int64_t r, std::int64_t s, std::int64_t stride, std::int64_t pad,
                 std::int64_t dil = 1, std::int64_t groups = 1) {
  Conv2dArgs a;
  a.n = n, a.c = c, a.h = h, a.w = w, a.k = k, a.r = r, a.s = s;
  a.stride_h = a.stride_w = stride;
  a.pad_h = a.pad_w = pad;
  a.dil_h = a.dil_w = dil;
  a.groups = groups;
  a.oh = cohort::conv_out_size(h, r, stride, pad, dil);
  a.ow = cohort::conv_out_size(w, s, stride, pad, dil);
  return a;
}

// Calls f(b, k, oy, ox, ci, p, q, x_index, w_index) for every tap that reads inside the input.
template <class F>
void taps(const Conv2dArgs& a, F&& f) {
  const std::int64_t kg = a.k / a.groups, cg = a.c / a.groups;
  for (std::int64_t b = 0; b < a.n; ++b)
    for (std::int64_t k = 0; k < a.k; ++k)
      for (std::int64_t oy = 0; oy < a.oh; ++oy)
        for (std::int64_t ox = 0; ox < a.ow; ++ox)
          for (std::int64_t ci = 0; ci < cg; ++ci)
            for (std::int64_t p = 0; p < a.r; ++p)
              for (std::int64_t q = 0; q < a.s; ++q) {
                const std::int64_t iy = oy * a.stride_h - a.pad_h + p * a.dil_h;
                const std::int64_t ix = ox * a.stride_w - a.pad_w + q * a.dil_w;
                if (iy < 0 || iy >= a.h || ix < 0 || ix >= a.w) continue;
                const std::int64_t c = (k / kg) * cg + ci;
                f(((b * a.k + k) * a.oh + oy) * a.ow + ox, ((b * a.c + c) * a.h + iy) * a.w + ix,
                  ((k * cg + ci) * a.r + p) * a.s + q);
              }
}

// f32 sums of up to ~600 products against double: relative to 1 + |value|.
void check_close(const std::vector<float>& got, const std::vector<double>& want,
                 double tol = 1e-4) {
  REQUIRE(got.size() == want.size());
  double worst = 0.0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(got[i] - want[i]) / (1.0 + std::fabs(want[i]));
    if (err > worst) worst = err, at = i;
  }
  CAPTURE(at);
  CHECK(worst <= tol);
}

struct Case {
  const char* what;
  Conv2dArgs a;
};

std::vector<Case> cases() {
  return {
      {"MNIST conv1 (1 input channel)", shape(4, 1, 28, 28, 32, 3, 3, 1, 0)},
      {"MNIST conv2", shape(3, 32, 26, 26, 64, 3, 3, 1, 0)},
      {"ResNet 3x3 pad 1", shape(2, 64, 16, 16, 64, 3, 3, 1, 1)},
      {"ResNet-50 stem 7x7 stride 2 pad 3", shape(2, 3, 32, 32, 64, 7, 7, 2, 3)},
      {"1x1 stride 2 (downsample)", shape(2, 16, 9, 9, 32, 1, 1, 2, 0)},
      {"1x1 stride 1 (bottleneck)", shape(2, 64, 8, 8, 16, 1, 1, 1, 0)},
      {"stride 2 dropping a trailing row", shape(2, 5, 10, 10, 7, 3, 3, 2, 0)},
      {"ViT patch embedding 4x4 stride 4", shape(2, 3, 32, 32, 24, 4, 4, 4, 0)},
      {"dilation 2", shape(2, 4, 11, 11, 6, 3, 3, 1, 2, 2)},
      {"groups 2", shape(2, 8, 7, 7, 6, 3, 3, 1, 1, 1, 2)},
      {"depthwise", shape(2, 8, 7, 7, 8, 3, 3, 1, 1, 1, 8)},
      {"padding beyond the kernel's reach", shape(1, 3, 4, 4, 5, 3, 3, 1, 3)},
      {"one image, odd sizes", shape(1, 3, 13, 7, 5, 5, 3, 1, 1)},
  };
}

}  // namespace

TEST_CASE("host conv: oneDNN forward, backward data and backward filter equal a direct loop") {
  REQUIRE(cohort::host::conv_path() == cohort::host::ConvPath::onednn);
  for (const Case& cs : cases()) {
    const std::string what = cs.what;
    CAPTURE(what);
    Conv2dArgs a = cs.a;
    const std::int64_t nx = a.n * a.c * a.h * a.w, nw = a.k * (a.c / a.groups) * a.r * a.s,
                       ny = a.n * a.k * a.oh * a.ow;
    const auto x = random_vector(nx, 1), w = random_vector(nw, 2), bias = random_vector(a.k, 3),
               dy = random_vector(ny, 4), dw0 = random_vector(nw, 5);

    std::vector<double> y_ref(static_cast<std::size_t>(ny)), dx_ref(static_cast<std::size_t>(nx)),
        dw_ref(dw0.begin(), dw0.end());
    for (std::int64_t i = 0; i < ny; ++i) y_ref[i] = bias[(i / (a.oh * a.ow)) % a.k];
    taps(a, [&](std::int64_t yi, std::int64_t xi, std::int64_t wi) {
      y_ref[yi] += static_cast<double>(x[xi]) * w[wi];
      dx_ref[xi] += static_cast<double>(dy[yi]) * w[wi];
      dw_ref[wi] += static_cast<double>(dy[yi]) * x[xi];
    });

    std::vector<float> y(static_cast<std::size_t>(ny), NAN), dx(static_cast<std::size_t>(nx), NAN),
        dw = dw0;
    // Each entry point must take the case (not fall back), and honour its contract.
    REQUIRE(cohort::host::onednn_conv_forward(calls::Conv2dForward{a, x.data(), w.data(),
                                                                   bias.data(), y.data()}));
    check_close(y, y_ref);
    const bool few_channels = a.c / a.groups <= 4;  // left to the per-image path
    REQUIRE(cohort::host::onednn_conv_backward_data(calls::Conv2dBackwardData{
                a, dy.data(), w.data(), dx.data()}) == !few_channels);
    if (!few_channels) check_close(dx, dx_ref);
    REQUIRE(cohort::host::onednn_conv_backward_filter(  // accumulates into dw
        calls::Conv2dBackwardFilter{a, x.data(), dy.data(), dw.data(), nullptr}));
    check_close(dw, dw_ref);

    // Without bias; twice, so the second call runs the cached primitive.
    for (int round = 0; round < 2; ++round) {
      std::vector<float> y2(static_cast<std::size_t>(ny), NAN);
      REQUIRE(cohort::host::onednn_conv_forward(
          calls::Conv2dForward{a, x.data(), w.data(), nullptr, y2.data()}));
      for (std::int64_t i = 0; i < ny; ++i) y_ref[i] -= bias[(i / (a.oh * a.ow)) % a.k];
      check_close(y2, y_ref);
      for (std::int64_t i = 0; i < ny; ++i) y_ref[i] += bias[(i / (a.oh * a.ow)) % a.k];
    }
  }
}

TEST_CASE("host conv: NaN and infinity reach the output, through the activation") {
  // torch.relu passes NaN through; oneDNN's fused ReLU would turn it into 0, which would hide a
  // diverged step from the loss's finite check.
  auto& dev = cohort::host_device();
  std::vector<float> xv(1 * 2 * 5 * 5, 0.5f);
  xv[7] = NAN;
  xv[30] = INFINITY;
  cohort::Tensor x = cohort::Tensor::from_vector(xv, {1, 2, 5, 5}, dev);
  cohort::Tensor w = cohort::Tensor::from_vector(std::vector<float>(3 * 2 * 3 * 3, 0.25f),
                                                 {3, 2, 3, 3}, dev);
  ops::Conv2dParams p;
  const cohort::Shape ys = ops::conv2d_output_shape(x.shape(), w.shape(), p);
  cohort::Tensor y = cohort::Tensor::empty(ys, cohort::DType::f32, dev);
  ops::conv2d_forward(x, w, nullptr, y, p, cohort::Activation::relu, 0.0f);
  const auto out = y.to_vector<float>();
  int nans = 0, infs = 0;
  for (float v : out) nans += std::isnan(v), infs += std::isinf(v);
  CHECK(nans > 0);  // every output whose window holds the NaN (and the infinity's, with NaN)
  CHECK(nans + infs >= 9);
}

TEST_CASE("host launches split between threads give the bits of one thread") {
  auto& dev = cohort::host_device();
  // Ops whose launches exceed the split threshold: pooling, batch norm, softmax, layer norm,
  // im2col (a grouped convolution, which oneDNN also runs: the shared path is forced below by
  // the deterministic backward filter).
  auto run = [&](int threads) {
    cohort::set_host_threads(threads);
    const auto xv = random_vector(16 * 32 * 24 * 24, 11);
    cohort::Tensor x = cohort::Tensor::from_vector(xv, {16, 32, 24, 24}, dev);
    std::vector<float> all;
    auto keep = [&](const cohort::Tensor& t) {
      const auto v = t.to_vector<float>();
      all.insert(all.end(), v.begin(), v.end());
    };
    cohort::Tensor soft = cohort::Tensor::empty(x.shape(), cohort::DType::f32, dev);
    ops::softmax_forward(/*log=*/true, x, soft, 1);
    keep(soft);
    ops::Pool2dParams pp;
    pp.kh = pp.kw = 3;
    pp.stride_h = pp.stride_w = 2;
    cohort::Tensor pooled = cohort::Tensor::empty(ops::pool2d_output_shape(x.shape(), pp),
                                                  cohort::DType::f32, dev);
    ops::pool2d_forward(x, pooled, nullptr, pp);
    keep(pooled);
    cohort::Tensor gamma = cohort::Tensor::from_vector(random_vector(24, 12), {24}, dev);
    cohort::Tensor beta = cohort::Tensor::from_vector(random_vector(24, 13), {24}, dev);
    cohort::Tensor ln = cohort::Tensor::empty(x.shape(), cohort::DType::f32, dev);
    cohort::Tensor mean = cohort::Tensor::empty({16 * 32 * 24}, cohort::DType::f32, dev);
    cohort::Tensor rstd = cohort::Tensor::empty({16 * 32 * 24}, cohort::DType::f32, dev);
    ops::layer_norm_forward(x, 24, &gamma, &beta, ln, mean, rstd, 1e-5f);
    keep(ln);
    cohort::Tensor bn = cohort::Tensor::empty(x.shape(), cohort::DType::f32, dev);
    cohort::Tensor bmean = cohort::Tensor::empty({32}, cohort::DType::f32, dev);
    cohort::Tensor binv = cohort::Tensor::empty({32}, cohort::DType::f32, dev);
    ops::batch_norm_forward(x, nullptr, nullptr, nullptr, nullptr, bn, bmean, binv, 1e-5f, 0.1f,
                               true);
    keep(bn);
    keep(bmean);
    keep(binv);
    cohort::set_deterministic_algorithms(true);
    cohort::Tensor dw = cohort::Tensor::zeros({32, 16, 3, 3}, cohort::DType::f32, dev);
    ops::Conv2dParams cp;
    cp.groups = 2;
    cp.pad_h = cp.pad_w = 1;
    ops::conv2d_backward_filter(x, soft, dw, nullptr, cp);
    cohort::set_deterministic_algorithms(false);
    keep(dw);
    return all;
  };
  const auto one = run(1), two = run(2);
  REQUIRE(one.size() == two.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < one.size(); ++i)
    differ += std::memcmp(&one[i], &two[i], sizeof(float)) != 0;
  CHECK(differ == 0);
  cohort::set_host_threads(static_cast<int>(std::thread::hardware_concurrency()));
}

TEST_CASE("host conv: backward filter's values do not follow the governor's thread count") {
  // The governor (thread_governor.hpp) drops the calling thread's OpenMP count to 1 under load and
  // restores it later; a training step's values must not depend on when that happened.
  auto& dev = cohort::host_device();
  cohort::set_host_threads(2);
  const int configured = omp_get_max_threads();
  cohort::Tensor x = cohort::Tensor::uniform({8, 32, 26, 26}, -1.f, 1.f, 31, dev);
  cohort::Tensor dy = cohort::Tensor::uniform({8, 64, 24, 24}, -1.f, 1.f, 32, dev);
  auto dw_with = [&](int omp_threads) {
    omp_set_num_threads(omp_threads);  // what the governor does
    cohort::Tensor dw = cohort::Tensor::zeros({64, 32, 3, 3}, cohort::DType::f32, dev);
    ops::conv2d_backward_filter(x, dy, dw, nullptr, {});
    omp_set_num_threads(configured);
    return dw.to_vector<float>();
  };
  const auto full = dw_with(configured), dropped = dw_with(1);
  CHECK(std::memcmp(full.data(), dropped.data(), full.size() * sizeof(float)) == 0);
  cohort::set_host_threads(static_cast<int>(std::thread::hardware_concurrency()));
}

TEST_CASE("host ops and convolutions still run in a child forked after threaded launches") {
  // GNU OpenMP's thread pool does not survive fork(): without the fork handler, a child's first
  // parallel launch waits forever for threads that stayed in the parent.
  auto& dev = cohort::host_device();
  cohort::set_host_threads(2);
  auto work = [&] {
    cohort::Tensor x = cohort::Tensor::from_vector(random_vector(8 * 16 * 32 * 32, 21),
                                                   {8, 16, 32, 32}, dev);
    cohort::Tensor w = cohort::Tensor::from_vector(random_vector(16 * 16 * 9, 22),
                                                   {16, 16, 3, 3}, dev);
    ops::Conv2dParams p;
    p.pad_h = p.pad_w = 1;
    cohort::Tensor y = cohort::Tensor::empty({8, 16, 32, 32}, cohort::DType::f32, dev);
    ops::conv2d_forward(x, w, nullptr, y, p, cohort::Activation::relu, 0.0f);
    cohort::Tensor s = cohort::Tensor::empty(y.shape(), cohort::DType::f32, dev);
    ops::softmax_forward(false, y, s, 1);
    return s.to_vector<float>();
  };
  const auto parent = work();
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const auto got = work();
    ::_exit(got == parent ? 0 : 3);
  }
  int status = 0;
  pid_t done = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((done = ::waitpid(child, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (done == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    FAIL("the forked child did not finish its host ops within 30 s (an OpenMP hang after fork)");
  }
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // 3: the child computed different values
  cohort::set_host_threads(static_cast<int>(std::thread::hardware_concurrency()));
}

// Run only by the ctest entry unit_bad_conv_path, with COHORT_HOST_CONV=bogus in its environment.
TEST_CASE("host conv: a COHORT_HOST_CONV that names no path is an error naming it" *
          doctest::skip(std::getenv("COHORT_HOST_CONV") == nullptr)) {
  auto& dev = cohort::host_device();
  cohort::Tensor x = cohort::Tensor::zeros({1, 1, 4, 4}, cohort::DType::f32, dev);
  cohort::Tensor w = cohort::Tensor::zeros({1, 1, 3, 3}, cohort::DType::f32, dev);
  cohort::Tensor y = cohort::Tensor::empty({1, 1, 2, 2}, cohort::DType::f32, dev);
  const std::string e = error_of(
      [&] { ops::conv2d_forward(x, w, nullptr, y, {}, cohort::Activation::identity, 0.0f); });
  CHECK_MESSAGE(e.find("COHORT_HOST_CONV='bogus' is not a host convolution path: use onednn "
                       "(the default) or im2col") != std::string::npos,
                e);
}

// Winograd (the default; the ctest entry unit_host_conv_direct runs this file's conv cases again
// with COHORT_HOST_CONV_ALGO=direct): taken where it pays, refused where it does not, and its
// forward and backward data give one thread's bits at two (the thread governor changes the count
// under load).
TEST_CASE(
    "host conv: the algorithm each shape gets, and forward / backward data bits at 1 and 2 "
    "threads") {
  const char* v = std::getenv("COHORT_HOST_CONV_ALGO");
  const bool winograd = v == nullptr || std::strcmp(v, "direct") != 0;
  const Conv2dArgs conv2 = shape(8, 32, 26, 26, 64, 3, 3, 1, 0);
  // oneDNN's Winograd kernels need avx512_core (AVX-512 F, BW, DQ, VL); without it direct runs.
  const std::string got = cohort::host::onednn_conv_algorithm(conv2);
  std::ifstream cpuinfo("/proc/cpuinfo");
  const std::string info((std::istreambuf_iterator<char>(cpuinfo)), {});
  bool avx512_core = true;
  for (const char* flag : {" avx512f", " avx512bw", " avx512dq", " avx512vl"})
    avx512_core = avx512_core && info.find(flag) != std::string::npos;
  // ONEDNN_MAX_CPU_ISA below AVX512_CORE (ctest --preset avx2 sets AVX2) takes the kernels away
  // on an AVX-512 CPU too.
  if (const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA")) {
    std::string c(cap);
    for (char& ch : c) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (!(c.empty() || c == "ALL" || c == "DEFAULT" || c.rfind("AVX512", 0) == 0 ||
          c.rfind("AVX10", 0) == 0))
      avx512_core = false;
  }
  CHECK(got == (winograd && avx512_core ? "winograd" : "direct"));
  MESSAGE("MNIST conv2 runs oneDNN's " << got << " kernels (avx512_core: " << avx512_core << ")");
  // Never for few channels, strides or other kernel sizes.
  CHECK(std::string(cohort::host::onednn_conv_algorithm(shape(4, 1, 28, 28, 32, 3, 3, 1, 0))) ==
        "direct");
  CHECK(std::string(cohort::host::onednn_conv_algorithm(shape(2, 32, 9, 9, 32, 3, 3, 2, 1))) ==
        "direct");
  CHECK(std::string(cohort::host::onednn_conv_algorithm(shape(2, 32, 9, 9, 32, 5, 5, 1, 2))) ==
        "direct");
  // Nor for maps below 4x4 (ResNet-50's last stages at 32x32 input), where its tiles waste most.
  CHECK(std::string(cohort::host::onednn_conv_algorithm(shape(2, 64, 2, 2, 64, 3, 3, 1, 1))) ==
        "direct");

  auto& dev = cohort::host_device();
  cohort::set_host_threads(2);
  const int configured = omp_get_max_threads();
  cohort::Tensor x = cohort::Tensor::uniform({8, 32, 26, 26}, -1.f, 1.f, 41, dev);
  cohort::Tensor w = cohort::Tensor::uniform({64, 32, 3, 3}, -0.1f, 0.1f, 42, dev);
  cohort::Tensor dy = cohort::Tensor::uniform({8, 64, 24, 24}, -1.f, 1.f, 43, dev);
  auto run = [&](int omp_threads) {
    omp_set_num_threads(omp_threads);  // what the governor does
    cohort::Tensor y = cohort::Tensor::empty({8, 64, 24, 24}, cohort::DType::f32, dev);
    cohort::Tensor dx = cohort::Tensor::empty({8, 32, 26, 26}, cohort::DType::f32, dev);
    ops::conv2d_forward(x, w, nullptr, y, {}, cohort::Activation::identity, 0.0f);
    ops::conv2d_backward_data(dy, w, dx, {});
    omp_set_num_threads(configured);
    return std::make_pair(y.to_vector<float>(), dx.to_vector<float>());
  };
  const auto two = run(configured), one = run(1);
  CHECK(std::memcmp(two.first.data(), one.first.data(), two.first.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(two.second.data(), one.second.data(), two.second.size() * sizeof(float)) == 0);
  cohort::set_host_threads(static_cast<int>(std::thread::hardware_concurrency()));
}

// Run only by the ctest entry unit_bad_conv_algo, with COHORT_HOST_CONV_ALGO=bogus.
TEST_CASE("host conv: a COHORT_HOST_CONV_ALGO that names no algorithm is an error naming it" *
          doctest::skip(std::getenv("COHORT_HOST_CONV_ALGO") == nullptr ||
                        std::strcmp(std::getenv("COHORT_HOST_CONV_ALGO"), "bogus") != 0)) {
  const std::string e =
      error_of([&] { cohort::host::onednn_conv_algorithm(shape(1, 16, 8, 8, 16, 3, 3, 1, 1)); });
  CHECK_MESSAGE(e.find("COHORT_HOST_CONV_ALGO='bogus' is not a host convolution algorithm: use "
                       "winograd (the default) or direct") != std::string::npos,
                e);
}
