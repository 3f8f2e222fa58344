// The process-wide math modes (allow_tf32, deterministic_algorithms, cudnn_benchmark), read by
// the backends on every call so a change applies to the next op.
#include "cohort/core/math_mode.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "cohort/core/error.hpp"

namespace cohort {

bool math_mode_from_env(const char* name, bool unset) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return unset;
  if (std::strcmp(v, "1") == 0) return true;
  COHORT_CHECK(std::strcmp(v, "0") == 0, name, "='", v,
               "' is not a math-mode setting: use 1 (on) or 0 (off)");
  return false;
}

namespace {

// Function-local statics: the environment is read once, on first use, whatever the order in which
// static initialisers of other libraries run. A bad value throws there, and again at the next use
// (a static whose initialiser threw is initialised again).
std::atomic<bool>& tf32() {
  static std::atomic<bool> v{math_mode_from_env("COHORT_ALLOW_TF32")};
  return v;
}
std::atomic<bool>& deterministic() {
  static std::atomic<bool> v{math_mode_from_env("COHORT_DETERMINISTIC")};
  return v;
}
std::atomic<bool>& benchmark() {
  static std::atomic<bool> v{math_mode_from_env("COHORT_CUDNN_BENCHMARK")};
  return v;
}

}  // namespace

void set_allow_tf32(bool allow) { tf32().store(allow, std::memory_order_relaxed); }
bool allow_tf32() { return tf32().load(std::memory_order_relaxed); }
void set_deterministic_algorithms(bool on) { deterministic().store(on, std::memory_order_relaxed); }
bool deterministic_algorithms() { return deterministic().load(std::memory_order_relaxed); }
void set_cudnn_benchmark(bool on) { benchmark().store(on, std::memory_order_relaxed); }
bool cudnn_benchmark() { return benchmark().load(std::memory_order_relaxed); }

}  // namespace cohort
