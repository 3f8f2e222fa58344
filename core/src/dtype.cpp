// Names of the element types and the f32 <-> bf16 / f16 conversions the host uses (round to
// nearest even, as torch).
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
                          {DType::f16, "f16", 2}, {DType::i32, "i32", 4}, {DType::i64, "i64", 8},
                          {DType::u8, "u8", 1}};
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

double load_element(const void* buf, DType dt, std::size_t i) {
  switch (dt) {
    case DType::f32: return static_cast<const float*>(buf)[i];
    case DType::f64: return static_cast<const double*>(buf)[i];
    case DType::bf16: return bf16_to_float(static_cast<const std::uint16_t*>(buf)[i]);
    case DType::f16: return f16_to_float(static_cast<const std::uint16_t*>(buf)[i]);
    case DType::i32: return static_cast<const std::int32_t*>(buf)[i];
    case DType::i64: return static_cast<double>(static_cast<const std::int64_t*>(buf)[i]);
    case DType::u8: return static_cast<const std::uint8_t*>(buf)[i];
  }
  return 0.0;
}

void store_element(void* buf, DType dt, std::size_t i, double v) {
  switch (dt) {
    case DType::f32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    case DType::f64: static_cast<double*>(buf)[i] = v; break;
    case DType::bf16: static_cast<std::uint16_t*>(buf)[i] = float_to_bf16(static_cast<float>(v)); break;
    case DType::f16: static_cast<std::uint16_t*>(buf)[i] = float_to_f16(static_cast<float>(v)); break;
    case DType::i32: static_cast<std::int32_t*>(buf)[i] = static_cast<std::int32_t>(v); break;
    case DType::i64: static_cast<std::int64_t*>(buf)[i] = static_cast<std::int64_t>(v); break;
    case DType::u8: static_cast<std::uint8_t*>(buf)[i] = static_cast<std::uint8_t>(v); break;
  }
}

}  // namespace cohort
