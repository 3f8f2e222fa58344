// The host attention's T x T passes (backends/host/attention_rows.hpp) give the same bits for
// every instruction set the library builds them for (attention.cpp's target_clones: AVX-512,
// AVX2, baseline), so a run's results do not depend on which CPU it ran on. Each set's build is
// run where this CPU has it; the baseline always.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "cohort/core/tensor.hpp"
#include "cohort/devices.hpp"

void attention_rows_base(float*, float*, float*, std::int64_t, float*, const float*);
void attention_rows_v3(float*, float*, float*, std::int64_t, float*, const float*);
void attention_rows_v4(float*, float*, float*, std::int64_t, float*, const float*);

TEST_CASE(
    "host attention: the AVX-512, AVX2 and baseline builds of the row passes agree bit for bit") {
  using Entry = void (*)(float*, float*, float*, std::int64_t, float*, const float*);
  struct Isa {
    const char* name;
    Entry run;
    bool here;
  };
  const Isa isas[] = {{"x86-64-v3", attention_rows_v3, __builtin_cpu_supports("x86-64-v3") > 0},
                      {"x86-64-v4", attention_rows_v4, __builtin_cpu_supports("x86-64-v4") > 0}};
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
    for (const Isa& isa : isas) {
      CAPTURE(isa.name);
      if (!isa.here) continue;
      const std::vector<float> got = run(isa.run);
      CHECK(std::memcmp(got.data(), base.data(), base.size() * sizeof(float)) == 0);
      ++compared;
    }
  }
  MESSAGE("compared " << compared << " (instruction set, size) pairs with the baseline build");
}
