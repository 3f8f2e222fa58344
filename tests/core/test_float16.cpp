// cohort::float_to_f16 / f16_to_float against three independent references: hand-worked cases,
// PyTorch's conversions (digests in tests/golden/f16.json, written by make_f16_golden.py over
// inputs that both sides build by the same formula) and, where the CPU has F16C, the hardware's
// own conversion instructions over every f16 and a sweep of 16.7 million float bit patterns.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cohort/core/dtype.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define COHORT_TEST_F16C 1
#endif

namespace {

using cohort::f16_to_float;
using cohort::float_to_f16;

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The to_f16 inputs of make_f16_golden.py that its digest covers, in its order.
std::vector<std::uint32_t> golden_inputs() {
  std::vector<std::uint32_t> in;
  for (std::uint32_t sign : {0u, 0x80000000u})
    for (std::uint32_t h = 0; h < 0x7bff; ++h) {
      const float v = f16_to_float(static_cast<std::uint16_t>(h));
      const float w = f16_to_float(static_cast<std::uint16_t>(h + 1));
      const std::uint32_t m = bits((v + w) / 2);
      in.insert(in.end(), {bits(v) | sign, m | sign, (m - 1) | sign, (m + 1) | sign});
    }
  return in;
}

struct Fnv {
  std::uint64_t h = 0xcbf29ce484222325ull;
  template <class T>
  void add(T v) {  // little-endian bytes, as the script packs them
    for (std::size_t i = 0; i < sizeof v; ++i) {
      h ^= static_cast<std::uint8_t>(static_cast<std::uint64_t>(v) >> (8 * i));
      h *= 0x100000001b3ull;
    }
  }
  std::string hex() const {
    char b[17];
    std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
    return b;
  }
};

std::uint32_t parse_hex(const std::string& s) { return static_cast<std::uint32_t>(std::stoul(s, nullptr, 16)); }

std::string hex(std::uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%x", v);
  return b;
}

bool is_nan16(std::uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }

#ifdef COHORT_TEST_F16C
__attribute__((target("f16c"))) std::uint16_t hw_to_f16(float f) {
  return static_cast<std::uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
__attribute__((target("f16c"))) float hw_to_float(std::uint16_t h) { return _cvtsh_ss(h); }
#endif

}  // namespace

TEST_CASE("f16: hand-worked conversions") {
  CHECK(cohort::dtype_size(cohort::DType::f16) == 2);
  CHECK(std::string(cohort::dtype_name(cohort::DType::f16)) == "f16");
  CHECK(cohort::dtype_from_name("f16") == cohort::DType::f16);
  CHECK(float_to_f16(1.0f) == 0x3c00);
  CHECK(float_to_f16(-2.0f) == 0xc000);
  CHECK(float_to_f16(-0.0f) == 0x8000);
  // The f16 spacing at 1 is 2^-10: 1 + 2^-11 is a tie (to even: 1), 1 + 3 * 2^-11 a tie between
  // 0x3c01 (odd) and 0x3c02 (even), and a hair above the first tie rounds up.
  CHECK(float_to_f16(1.0f + 0x1p-11f) == 0x3c00);
  CHECK(float_to_f16(1.0f + 3 * 0x1p-11f) == 0x3c02);
  CHECK(float_to_f16(std::nextafter(1.0f + 0x1p-11f, 2.0f)) == 0x3c01);
  // Largest finite 65504 = 0x7bff; 65520 is the tie with 2^16, which rounds to infinity.
  CHECK(float_to_f16(65504.0f) == 0x7bff);
  CHECK(float_to_f16(65519.0f) == 0x7bff);
  CHECK(float_to_f16(65520.0f) == 0x7c00);
  CHECK(float_to_f16(-1e30f) == 0xfc00);
  // Subnormals: 2^-24 is the smallest (0x0001); 2^-25 is the tie with 0 (to even: 0); 3 * 2^-25
  // the tie between 0x0001 and 0x0002 (to 0x0002); 2^-14 the smallest normal (0x0400).
  CHECK(float_to_f16(0x1p-24f) == 0x0001);
  CHECK(float_to_f16(0x1p-25f) == 0x0000);
  CHECK(float_to_f16(3 * 0x1p-25f) == 0x0002);
  CHECK(float_to_f16(0x1p-14f) == 0x0400);
  CHECK(float_to_f16(-0x1p-30f) == 0x8000);
  CHECK(float_to_f16(std::nanf("")) == 0x7e00);
  CHECK(float_to_f16(from_bits(0xff800001)) == 0xfe00);  // signalling: quieted, sign kept
  CHECK(float_to_f16(from_bits(0x7fbfffff)) == 0x7fff);  // upper payload bits kept
  CHECK(f16_to_float(0x3555) == from_bits(0x3eaaa000));  // 0.333251953125
  CHECK(f16_to_float(0x0001) == 0x1p-24f);
  CHECK(f16_to_float(0x03ff) == 1023 * 0x1p-24f);
  CHECK(f16_to_float(0xfbff) == -65504.0f);
  CHECK(std::isinf(f16_to_float(0x7c00)));
  CHECK(std::isnan(f16_to_float(0x7e00)));
  CHECK(std::isnan(f16_to_float(0xfc01)));
  CHECK(std::signbit(f16_to_float(0x8000)));
  // Store and load through the generic accessors.
  std::uint16_t buf[2];
  cohort::store_element(buf, cohort::DType::f16, 1, 0.1);
  CHECK(buf[1] == 0x2e66);  // 0.0999755859375, the nearest f16 to 0.1
  CHECK(cohort::load_element(buf, cohort::DType::f16, 1) == 0.0999755859375);
}

TEST_CASE("f16: digests of PyTorch's conversions (tests/golden/f16.json)") {
  const std::string path = std::string(COHORT_GOLDEN_DIR) + "/f16.json";
  std::ifstream f(path);
  REQUIRE_MESSAGE(f.good(), "cannot open ", path);
  const auto doc = nlohmann::json::parse(f);
  INFO("golden file: " << path << " (" << doc["generator"].get<std::string>() << ")");

  Fnv wid;
  for (std::uint32_t h = 0; h < 65536; ++h) wid.add(bits(f16_to_float(static_cast<std::uint16_t>(h))));
  for (const auto& item : doc["to_float"]["samples"].items()) {
    const std::string h = item.key();  // (a named copy: INFO cannot capture a structured binding)
    const auto& v = item.value();
    INFO("f16 0x" << h);
    CHECK(bits(f16_to_float(static_cast<std::uint16_t>(parse_hex(h)))) == parse_hex(v.get<std::string>()));
  }
  CHECK(wid.hex() == doc["to_float"]["fnv1a64"].get<std::string>());

  // Specials: exact, except that PyTorch makes every NaN 0x7e00 (sign kept) where cohort keeps
  // the upper payload bits (as F16C does): NaNs must be NaN with the same sign.
  REQUIRE(doc["to_f16"]["specials"].size() == 21);
  for (const auto& item : doc["to_f16"]["specials"].items()) {
    const std::string x = item.key();
    const auto& h = item.value();
    INFO("float 0x" << x);
    const std::uint16_t mine = float_to_f16(from_bits(parse_hex(x)));
    const auto torch = static_cast<std::uint16_t>(parse_hex(h.get<std::string>()));
    if (is_nan16(torch))
      CHECK((is_nan16(mine) && (mine & 0x8000) == (torch & 0x8000)));
    else
      CHECK(mine == torch);
  }
  const auto in = golden_inputs();
  REQUIRE(in.size() == doc["to_f16"]["count"].get<std::size_t>());
  Fnv nar;
  for (std::uint32_t x : in) nar.add(float_to_f16(from_bits(x)));
  CHECK(nar.hex() == doc["to_f16"]["fnv1a64"].get<std::string>());
}

TEST_CASE("f16: the CPU's F16C instructions agree (every f16, 16.7M floats)") {
#ifdef COHORT_TEST_F16C
  unsigned a = 0, b = 0, c = 0, d = 0;  // F16C: CPUID.1:ECX bit 29
  if (!(__get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0)) {
    MESSAGE("this CPU has no F16C: the hardware cross-check does not run here");
    return;
  }
  int bad = 0;
  for (std::uint32_t h = 0; h < 65536 && bad < 10; ++h) {
    const float mine = f16_to_float(static_cast<std::uint16_t>(h)), hw = hw_to_float(static_cast<std::uint16_t>(h));
    const bool ok = bits(mine) == bits(hw);  // NaNs too: both quiet them and keep the payload
    if (!ok) {
      ++bad;
      FAIL_CHECK("f16 " << hex(h) << ": cohort " << hex(bits(mine)) << ", F16C " << hex(bits(hw)));
    }
  }
  // Every 257th float bit pattern (257 is odd, so the low bits that decide the rounding take all
  // values), plus the golden inputs (every tie and its neighbours).
  auto check = [&](std::uint32_t x) {
    const std::uint16_t mine = float_to_f16(from_bits(x)), hw = hw_to_f16(from_bits(x));
    if (mine != hw && ++bad <= 10)  // NaNs too: same quieting, same payload bits
      FAIL_CHECK("float " << hex(x) << ": cohort " << hex(mine) << ", F16C " << hex(hw));
  };
  for (std::uint64_t x = 0; x <= 0xffffffffull; x += 257) check(static_cast<std::uint32_t>(x));
  for (std::uint32_t x : golden_inputs()) check(x);
  CHECK(bad == 0);
#else
  MESSAGE("not an x86-64 GCC/Clang build: the hardware cross-check does not run here");
#endif
}
