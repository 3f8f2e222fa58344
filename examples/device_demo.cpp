// A tour of the device layer, and the main job until the training example exists: lists the
// devices of this build, picks one (--device NAME, else COHORT_DEVICE, else the best available),
// makes seeded tensors, multiplies them, checks the product against the host, and times a
// 1024^3 GEMM.
//
//   build/bin/device_demo [--device host|cuda|cuda:N]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "cohort/core/ops.hpp"
#include "cohort/devices.hpp"

int main(int argc, char** argv) {
  std::string spec;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      spec = argv[++i];
    } else {
      std::fprintf(stderr,
                   "device_demo: unknown argument '%s' (usage: device_demo [--device NAME])\n",
                   argv[i]);
      return 2;
    }
  }
  try {
    std::printf("host threads: %d per rank (%s)\n", cohort::host_threads().threads,
                cohort::host_threads().reason.c_str());
    std::cout << "devices in this build:\n" << cohort::describe_devices();
    cohort::Device& dev = cohort::device(spec);
    std::cout << "using device: " << dev.name() << "\n\n";

    auto a = cohort::Tensor::uniform({2, 3}, -1.0f, 1.0f, /*seed=*/1, dev);
    auto b = cohort::Tensor::normal({3, 4}, 0.0f, 1.0f, /*seed=*/2, dev);
    auto c = cohort::ops::matmul(a, b);
    std::cout << "a = " << a << "\nb = " << b << "\na @ b = " << c << "\n";

    // The same seeds on the host give the same inputs; the product must agree.
    auto& host = cohort::host_device();
    auto ch = cohort::ops::matmul(cohort::Tensor::uniform({2, 3}, -1.0f, 1.0f, 1, host),
                                  cohort::Tensor::normal({3, 4}, 0.0f, 1.0f, 2, host));
    const auto got = c.to_vector<float>(), ref = ch.to_vector<float>();
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
      worst = std::fmax(worst, std::fabs(got[i] - ref[i]));
    std::cout << "max |device - host| = " << worst << "\n";

    const long n = 1024;
    auto x = cohort::Tensor::uniform({n, n}, -1.0f, 1.0f, 3, dev);
    auto y = cohort::Tensor::uniform({n, n}, -1.0f, 1.0f, 4, dev);
    auto z = cohort::Tensor::empty({n, n}, cohort::DType::f32, dev);
    cohort::ops::gemm(x, false, y, false, z);
    dev.synchronize();
    const int iters = 10;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) cohort::ops::gemm(x, false, y, false, z);
    dev.synchronize();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("gemm 1024^3 on %s: %.1f GFLOP/s\n", dev.name().c_str(),
                2.0 * n * n * n * iters / s / 1e9);
    return worst < 1e-5 ? 0 : 1;
  } catch (const cohort::Error& e) {
    std::fprintf(stderr, "device_demo: %s\n", e.what());
    return 1;
  }
}
