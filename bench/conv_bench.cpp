// Time of one convolution forward, backward data and backward filter on the host device, per
// shape of bench/conv_shapes.txt, with whichever host path COHORT_HOST_CONV selects (oneDNN's
// primitives by default, or the shared per-image im2col + GEMM). bench/conv_compare.sh runs it
// once per path next to bench/conv_bench_torch.py and prints the ratios.
//
//   build/bin/conv_bench [--shapes bench/conv_shapes.txt] [--threads N] [--min-time 0.2]
//                        [--device SPEC] [--pipelined N] [--amp bf16|f16]
//
// Prints "threads N path P" and then per shape "name fwd_ms bwd_data_ms bwd_filter_ms": each the
// median over iterations run for at least --min-time seconds (and at least 3) after one warm-up
// iteration (which creates oneDNN's primitives, or picks cuDNN's algorithms). Random inputs; dw
// accumulates, as in training.
//
// --device cuda (or any device spec): the same on that device, each iteration ending with the
// device synchronised, so the time is the call's host overhead plus its GPU time.
// --pipelined N: each iteration is N calls back to back and one synchronisation, divided by N: the
// time per call when the host's enqueueing overlaps the GPU's work, as in a training step; where it
// stays near the synchronised time, the host's per-call overhead is what costs.
// --amp bf16 (or f16): every call inside cohort::autocast on the device (docs/MIXED_PRECISION.md);
// the first line says so, and a device that cannot gives autocast's notice and runs f32.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "cohort/core/autocast.hpp"
#include "cohort/core/layer_ops.hpp"
#include "cohort/devices.hpp"

namespace ops = cohort::ops;
using cohort::Tensor;

namespace {

double median_ms(const std::function<void()>& f, double min_time) {
  f();  // warm-up
  std::vector<double> t;
  const auto start = std::chrono::steady_clock::now();
  while (t.size() < 3 ||
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
             min_time) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                    .count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string shapes = COHORT_BENCH_DIR "/conv_shapes.txt";
  int threads = 1;
  double min_time = 0.2;
  std::string device_spec = "host";
  int pipelined = 1;
  std::string amp = "off";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "conv_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--shapes") shapes = next();
    else if (a == "--threads") threads = std::atoi(next().c_str());
    else if (a == "--min-time") min_time = std::atof(next().c_str());
    else if (a == "--device") device_spec = next();
    else if (a == "--pipelined") pipelined = std::atoi(next().c_str());
    else if (a == "--amp") amp = next();
    else {
      std::fprintf(stderr, "conv_bench: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  std::ifstream in(shapes);
  if (!in) {
    std::fprintf(stderr, "conv_bench: cannot read %s\n", shapes.c_str());
    return 2;
  }
  if (pipelined < 1) {
    std::fprintf(stderr, "conv_bench: --pipelined %d: needs a whole number >= 1\n", pipelined);
    return 2;
  }
  cohort::Device* devp = nullptr;
  try {
    devp = &cohort::device(device_spec);
  } catch (const cohort::Error& e) {
    std::fprintf(stderr, "conv_bench: --device %s: %s\n", device_spec.c_str(), e.what());
    return 2;
  }
  auto& dev = *devp;
  if (amp != "off" && amp != "bf16" && amp != "f16") {
    std::fprintf(stderr, "conv_bench: --amp %s: use bf16, f16 or off\n", amp.c_str());
    return 2;
  }
  const cohort::DType compute = amp == "bf16" ? cohort::DType::bf16
                                : amp == "f16" ? cohort::DType::f16 : cohort::DType::f32;
  const cohort::autocast guard(dev, compute);
  cohort::set_host_threads(threads);
  const char* path = std::getenv("COHORT_HOST_CONV");
  std::string path_name = &dev == &cohort::host_device() ? (path && *path ? path : "onednn")
                                                          : dev.name();
  if (pipelined > 1) path_name += " pipelined " + std::to_string(pipelined);
  if (amp != "off") path_name += " amp " + amp;
  std::printf("threads %d path %s\n", cohort::host_threads().threads, path_name.c_str());
  // One timed iteration: `pipelined` calls, then the device synchronised.
  auto timed = [&](const std::function<void()>& f) {
    return median_ms(
               [&] {
                 for (int k = 0; k < pipelined; ++k) f();
                 dev.synchronize();
               },
               min_time) /
           pipelined;
  };
  std::string line;
  std::uint64_t seed = 1;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string name;
    std::int64_t n, c, h, w, k, r, s, stride, pad;
    if (!(ls >> name >> n >> c >> h >> w >> k >> r >> s >> stride >> pad)) {
      std::fprintf(stderr, "conv_bench: %s: bad line '%s'\n", shapes.c_str(), line.c_str());
      return 2;
    }
    ops::Conv2dParams p;
    p.stride_h = p.stride_w = stride;
    p.pad_h = p.pad_w = pad;
    Tensor x = Tensor::uniform({n, c, h, w}, -1.f, 1.f, seed++, dev);
    Tensor wt = Tensor::uniform({k, c, r, s}, -0.1f, 0.1f, seed++, dev);
    const cohort::Shape ys = ops::conv2d_output_shape(x.shape(), wt.shape(), p);
    Tensor y = Tensor::empty(ys, cohort::DType::f32, dev);
    Tensor dy = Tensor::uniform(ys, -1.f, 1.f, seed++, dev);
    Tensor dx = Tensor::empty(x.shape(), cohort::DType::f32, dev);
    Tensor dw = Tensor::zeros(wt.shape(), cohort::DType::f32, dev);
    const double fwd =
        timed([&] { ops::conv2d_forward(x, wt, nullptr, y, p, cohort::Activation::identity, 0.f); });
    const double bwd_data = timed([&] { ops::conv2d_backward_data(dy, wt, dx, p); });
    const double bwd_filter = timed([&] { ops::conv2d_backward_filter(x, dy, dw, nullptr, p); });
    std::printf("%s %.4f %.4f %.4f\n", name.c_str(), fwd, bwd_data, bwd_filter);
    std::fflush(stdout);
  }
  return 0;
}
