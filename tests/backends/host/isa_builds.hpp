// The entry points of isa_builds.cpp, one per instruction set it is built for (base, v3, v4), and
// the builds this CPU can run, for the tests that compare them bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "cohort/core/op_options.hpp"

#define COHORT_ISA_ENTRIES(isa)                                                               \
  void attention_rows_##isa(float* s, float* p, float* dp, std::int64_t t, float* lse,        \
                            const float* delta);                                              \
  void activation_span_##isa(cohort::Activation f, float alpha, const float* x, float* y,     \
                             const float* dy, float* dx, std::int64_t n);                     \
  void bias_act_spans_##isa(cohort::Activation f, float alpha, const float* bias, float* p,   \
                            std::int64_t rows, std::int64_t n);                               \
  void bias_act_grad_##isa(cohort::Activation f, float alpha, const float* x, const float* y, \
                           const float* dy, float* dx, std::int64_t rows, std::int64_t n,     \
                           float* dbias);
COHORT_ISA_ENTRIES(base)
COHORT_ISA_ENTRIES(v3)
COHORT_ISA_ENTRIES(v4)
#undef COHORT_ISA_ENTRIES

namespace isa_builds {

// One wide build of an entry point: its name, the entry, and whether this CPU runs it.
template <class Entry>
struct Build {
  const char* name;
  Entry run;
  bool here;
};

// The AVX2 (x86-64-v3) and AVX-512 (x86-64-v4) builds of one entry point.
template <class Entry>
std::vector<Build<Entry>> wide(Entry v3, Entry v4) {
  return {{"x86-64-v3", v3, __builtin_cpu_supports("x86-64-v3") > 0},
          {"x86-64-v4", v4, __builtin_cpu_supports("x86-64-v4") > 0}};
}

}  // namespace isa_builds
