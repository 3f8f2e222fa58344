// Element types. f32 is the compute type; integer types carry labels and raw data; bf16 is stored
// (2 bytes, the upper half of an f32) so gradients can be compressed, but no op computes in it yet.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace cohort {

enum class DType : std::uint8_t { f32, f64, bf16, i32, i64, u8 };

std::size_t dtype_size(DType dt);
const char* dtype_name(DType dt);  // "f32", "i64", ...
DType dtype_from_name(const std::string& name);  // throws, listing the known names

// The DType of a C++ element type, for typed accessors: dtype_of<float>() == DType::f32.
template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<std::int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<std::int64_t>() { return DType::i64; }
template <> constexpr DType dtype_of<std::uint8_t>() { return DType::u8; }

// bf16 conversions (round to nearest even; NaN stays NaN).
std::uint16_t float_to_bf16(float f);
float bf16_to_float(std::uint16_t b);

// Element i of a host buffer of `dt` elements, read as a double or written from one (a C++ cast;
// bf16 rounds to nearest even). For printing, checks and tools, not for hot loops.
double load_element(const void* buf, DType dt, std::size_t i);
void store_element(void* buf, DType dt, std::size_t i, double v);

}  // namespace cohort
