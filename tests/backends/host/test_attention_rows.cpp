// The host attention's T x T passes (backends/host/attention_rows.hpp) give the same bits for
// every instruction set the library builds them for (attention.cpp's target_clones: AVX-512,
// AVX2, baseline), so a run's results do not depend on which CPU it ran on. Each set's build is
// run where this CPU has it; the baseline always.
#include <doctest/doctest.h>
#include <omp.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "cohort/core/layer_ops.hpp"
#include "cohort/core/tensor.hpp"
#include "cohort/devices.hpp"
#include "isa_builds.hpp"

TEST_CASE(
    "host attention: the AVX-512, AVX2 and baseline builds of the row passes agree bit for bit") {
  using Entry = void (*)(float*, float*, float*, std::int64_t, float*, const float*);
  const auto isas = isa_builds::wide<Entry>(attention_rows_v3, attention_rows_v4);
  int compared = 0;
  for (std::int64_t t : {1, 7, 16, 65, 200}) {  // tails, whole lanes, the ViT's 65
    CAPTURE(t);
    const std::size_t n = static_cast<std::size_t>(t * t);
    const auto scores =
        cohort::Tensor::uniform({t, t}, -8.f, 8.f, 11, cohort::host_device()).to_vector<float>();
    const auto dscores =
        cohort::Tensor::uniform({t, t}, -1.f, 1.f, 12, cohort::host_device()).to_vector<float>();
    std::vector<float> delta(static_cast<std::size_t>(t));
    for (std::size_t i = 0; i < delta.size(); ++i) delta[i] = 0.01f * static_cast<float>(i);
    auto run = [&](Entry e) {
      std::vector<float> s = scores, p = scores, dp = dscores, lse(static_cast<std::size_t>(t));
      e(s.data(), p.data(), dp.data(), t, lse.data(), delta.data());
      s.insert(s.end(), p.begin(), p.end());
      s.insert(s.end(), dp.begin(), dp.end());
      s.insert(s.end(), lse.begin(), lse.end());
      return s;
    };
    const std::vector<float> base = run(attention_rows_base);
    CHECK(base.size() == 3 * n + static_cast<std::size_t>(t));
    for (const auto& isa : isas) {
      CAPTURE(isa.name);
      if (!isa.here) continue;
      const std::vector<float> got = run(isa.run);
      CHECK(std::memcmp(got.data(), base.data(), base.size() * sizeof(float)) == 0);
      ++compared;
    }
  }
  if (compared == 0)  // on such a CPU the library runs the baseline build only
    WARN_MESSAGE(false, "no AVX2 or AVX-512 build runs on this CPU: nothing to compare with");
  MESSAGE("compared " << compared << " (instruction set, size) pairs with the baseline build");
}

// The op's heads split between two threads give one thread's bits (the thread governor changes
// the count under load, and a run's results must not depend on it).
TEST_CASE("host attention: forward and backward bits at 1 and 2 threads") {
  auto& dev = cohort::host_device();
  const std::int64_t n = 4, t = 65, h = 4, dh = 32;
  const float scale = 0.17677669f;
  const cohort::Tensor qkv = cohort::Tensor::uniform({n, t, 3, h, dh}, -2.f, 2.f, 21, dev);
  const cohort::Tensor dout = cohort::Tensor::uniform({n, t, h, dh}, -1.f, 1.f, 22, dev);
  auto run = [&](int threads) {
    omp_set_num_threads(threads);  // what the governor does
    cohort::Tensor out = cohort::Tensor::empty({n, t, h, dh}, cohort::DType::f32, dev);
    cohort::Tensor lse = cohort::Tensor::empty({n, h, t}, cohort::DType::f32, dev);
    cohort::Tensor dqkv = cohort::Tensor::empty({n, t, 3, h, dh}, cohort::DType::f32, dev);
    cohort::ops::attention_forward(qkv, out, lse, scale);
    cohort::ops::attention_backward(qkv, out, lse, dout, dqkv, scale);
    std::vector<float> all = out.to_vector<float>();
    for (const cohort::Tensor* x : {&lse, &dqkv}) {
      const std::vector<float> v = x->to_vector<float>();
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  };
  cohort::set_host_threads(2);
  const int configured = omp_get_max_threads();
  const std::vector<float> two = run(2), one = run(1);
  omp_set_num_threads(configured);
  cohort::set_host_threads(static_cast<int>(std::thread::hardware_concurrency()));
  CHECK(std::memcmp(two.data(), one.data(), two.size() * sizeof(float)) == 0);
}
