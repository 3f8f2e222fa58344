// The process-wide math modes (allow_tf32, deterministic_algorithms), read by the backends on
// every call so a change applies to the next op.
#include "cohort/core/math_mode.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace cohort {
namespace {

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, "1") == 0;
}

// Function-local statics: the environment is read once, on first use, whatever the order in which
// static initialisers of other libraries run.
std::atomic<bool>& tf32() {
  static std::atomic<bool> v{env_on("COHORT_ALLOW_TF32")};
  return v;
}
std::atomic<bool>& deterministic() {
  static std::atomic<bool> v{env_on("COHORT_DETERMINISTIC")};
  return v;
}

}  // namespace

void set_allow_tf32(bool allow) { tf32().store(allow, std::memory_order_relaxed); }
bool allow_tf32() { return tf32().load(std::memory_order_relaxed); }
void set_deterministic_algorithms(bool on) { deterministic().store(on, std::memory_order_relaxed); }
bool deterministic_algorithms() { return deterministic().load(std::memory_order_relaxed); }

}  // namespace cohort
