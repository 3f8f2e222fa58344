// The autocast scope's thread-local state and the once-per-(device, type) fallback notice.
#include "cohort/core/autocast.hpp"

#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "cohort/core/device.hpp"
#include "cohort/core/error.hpp"

namespace cohort {
namespace {

struct State {
  const Device* device = nullptr;
  DType dtype = DType::f32;
  AutocastMode mode = AutocastMode::fallback;
};
thread_local State state;

}  // namespace

autocast::autocast(Device& device, DType dtype, AutocastMode mode)
    : prev_device_(state.device), prev_dtype_(state.dtype), prev_mode_(state.mode) {
  COHORT_CHECK(dtype == DType::bf16 || dtype == DType::f16 || dtype == DType::f32,
               "autocast: ", dtype_name(dtype), " is not a compute type for autocast (bf16 or f16; "
               "f32 turns it off)");
  state.device = dtype == DType::f32 ? nullptr : &device;
  state.dtype = dtype;
  state.mode = mode;
}

autocast::~autocast() {
  state.device = prev_device_;
  state.dtype = prev_dtype_;
  state.mode = prev_mode_;
}

DType autocast_dtype(const Device& device) {
  return state.device == &device ? state.dtype : DType::f32;
}

AutocastMode autocast_mode() { return state.mode; }

void autocast_fell_back(const Device& device, DType dtype, const char* op, const char* why) {
  const std::string name = device.name();
  COHORT_CHECK(state.mode != AutocastMode::strict, "autocast ", dtype_name(dtype), " on ", name,
               " (strict): ", op, " cannot compute in ", dtype_name(dtype), ": ", why);
  static std::mutex mu;
  static std::set<std::pair<std::string, DType>> told;
  std::lock_guard<std::mutex> lock(mu);
  if (!told.insert({name, dtype}).second) return;
  std::fprintf(stderr, "cohort: autocast %s on %s: %s; %s and the other listed ops run in f32\n",
               dtype_name(dtype), name.c_str(), why, op);
}

}  // namespace cohort
