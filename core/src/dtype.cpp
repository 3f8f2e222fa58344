#include "cohort/core/dtype.hpp"

#include <cstring>

#include "cohort/core/error.hpp"

namespace cohort {
namespace {
struct Info {
  DType dt;
  const char* name;
  std::size_t size;
};
constexpr Info kInfo[] = {{DType::f32, "f32", 4}, {DType::f64, "f64", 8}, {DType::bf16, "bf16", 2},
                          {DType::i32, "i32", 4}, {DType::i64, "i64", 8}, {DType::u8, "u8", 1}};
const Info& info(DType dt) {
  for (const auto& i : kInfo)
    if (i.dt == dt) return i;
  COHORT_FAIL("unknown dtype code ", static_cast<int>(dt));
}
}  // namespace

std::size_t dtype_size(DType dt) { return info(dt).size; }
const char* dtype_name(DType dt) { return info(dt).name; }

DType dtype_from_name(const std::string& name) {
  std::string known;
  for (const auto& i : kInfo) {
    if (name == i.name) return i.dt;
    known += known.empty() ? "" : ", ";
    known += i.name;
  }
  COHORT_FAIL("unknown dtype '", name, "' (known: ", known, ")");
}

std::uint16_t float_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0)
    return static_cast<std::uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
  const std::uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>((u + rounding) >> 16);
}

float bf16_to_float(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace cohort
