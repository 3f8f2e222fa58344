// COHORT_DATA_CLONES: a function compiled twice (AVX with FMA, and the baseline) and picked when
// the library loads by what the CPU has, for the image operations' per-pixel loops. Their
// arithmetic is written with std::fma where ATen fuses, and files using this are compiled with
// -ffp-contract=off, so both clones compute the same bits; the FMA clone makes std::fma, floor
// and nearbyint single instructions (the baseline calls libm for them: 3x slower). Features, not
// "arch=" names: GCC picks an arch= clone by the CPU's model (__builtin_cpu_is), so
// "arch=skylake-avx512" is never taken on a Zen 4 or a newer Xeon. Lambdas inside a cloned
// function are compiled once, outside the clones: write such loops out.
#pragma once

// (Not under ThreadSanitizer: an instrumented ifunc resolver runs before the TSan runtime.)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define COHORT_DATA_CLONES \
  __attribute__((target_clones("fma", "default")))
#else
#define COHORT_DATA_CLONES
#endif
