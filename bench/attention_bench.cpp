// Forward+backward time of attention at the ViT's shapes (batch 64, T = 65 tokens, E = 256, 8
// heads of 32), cohort's side of bench/attention_compare.sh (which runs
// bench/attention_bench_torch.py beside it and prints the ratios). Rows:
//   sdpa          ops::attention_forward + attention_backward on the packed qkv [N, T, 3, H, dh]
//                 (PyTorch: F.scaled_dot_product_attention on q, k, v [N, H, T, dh])
//   mha_fused     nn::MultiheadAttention, the fused op (the default)
//   mha_unfused   the same layer on the separate ops (set_fused(false): head permutations,
//                 batched GEMMs, softmax)
//                 (both against torch.nn.MultiheadAttention(batch_first=True), need_weights=False,
//                 which calls scaled_dot_product_attention)
// Method as bench/layers_bench (median_time.hpp): a fixed random input and output gradient; one
// iteration is forward + backward, ended by a device synchronisation (a no-op on the host); the
// figure is the median over iterations run for at least --min-time seconds after 3 warm-up
// iterations. Prints "<row> <median ms>" per row. tools/gpu_check.sh runs it with --device cuda.
//
//   build/bin/attention_bench [--batch 64] [--tokens 65] [--embed 256] [--heads 8]
//                             [--min-time 1] [--threads 1] [--device host|cuda]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "cohort/core/layer_ops.hpp"
#include "cohort/devices.hpp"
#include "cohort/layers.hpp"
#include "median_time.hpp"

namespace nn = cohort::nn;
using cohort::Shape;
using cohort::Tensor;

namespace {

long arg(int argc, char** argv, const char* name, long def) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::strtol(argv[i + 1], nullptr, 10);
  return def;
}
std::string str_arg(int argc, char** argv, const char* name, const char* def) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return def;
}

}  // namespace

int main(int argc, char** argv) {
  const long n = arg(argc, argv, "--batch", 64), t = arg(argc, argv, "--tokens", 65);
  const long e = arg(argc, argv, "--embed", 256), h = arg(argc, argv, "--heads", 8);
  double min_time = 1.0;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--min-time") == 0) min_time = std::atof(argv[i + 1]);
  cohort::set_host_threads(static_cast<int>(arg(argc, argv, "--threads", 1)));
  cohort::Device& dev = cohort::device(str_arg(argc, argv, "--device", "host"));
  auto timed = [&](const std::function<void()>& work) {
    return median_ms(
        [&] {
          work();
          dev.synchronize();
        },
        min_time);
  };
  const long dh = e / h;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));

  const Tensor qkv = Tensor::uniform({n, t, 3, h, dh}, -1.f, 1.f, 1, dev);
  const Tensor dout = Tensor::uniform({n, t, h, dh}, -1.f, 1.f, 2, dev);
  Tensor out = Tensor::empty({n, t, h, dh}, cohort::DType::f32, dev);
  Tensor lse = Tensor::empty({n, h, t}, cohort::DType::f32, dev);
  Tensor dqkv = Tensor::empty({n, t, 3, h, dh}, cohort::DType::f32, dev);
  std::printf("sdpa %.4f\n", timed([&] {
                cohort::ops::attention_forward(qkv, out, lse, scale);
                cohort::ops::attention_backward(qkv, out, lse, dout, dqkv, scale);
              }));

  const Tensor x = Tensor::uniform({n, t, e}, -1.f, 1.f, 3, dev);
  const Tensor dy = Tensor::uniform({n, t, e}, -1.f, 1.f, 4, dev);
  for (bool fused : {true, false}) {
    nn::manual_seed(5);
    nn::MultiheadAttention m(e, h, dev);
    m.set_fused(fused);
    std::printf("%s %.4f\n", fused ? "mha_fused" : "mha_unfused", timed([&] {
                  m.forward(x);
                  m.backward(dy);
                }));
  }
  return 0;
}
