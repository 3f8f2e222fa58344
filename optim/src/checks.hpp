// Hyper-parameter checks shared by the optimizers and schedulers: each names the class, the
// argument and the value at fault ("Adam: invalid betas.0 = 1 (must be in [0, 1))").
// Internal header of optim/.
#pragma once

#include <cmath>
#include <string>

#include "cohort/core/error.hpp"

namespace cohort::optim::detail {

inline void check_nonnegative(const std::string& who, const char* arg, double v) {
  COHORT_CHECK(std::isfinite(v) && v >= 0.0, who, ": invalid ", arg, " = ", v,
               " (must be finite and >= 0)");
}

inline void check_finite(const std::string& who, const char* arg, double v) {
  COHORT_CHECK(std::isfinite(v), who, ": invalid ", arg, " = ", v, " (must be finite)");
}

// 0 <= v < 1 (Adam's betas).
inline void check_unit_open(const std::string& who, const char* arg, double v) {
  COHORT_CHECK(v >= 0.0 && v < 1.0, who, ": invalid ", arg, " = ", v, " (must be in [0, 1))");
}

// 0 <= v <= 1 (Adadelta's rho).
inline void check_unit_closed(const std::string& who, const char* arg, double v) {
  COHORT_CHECK(v >= 0.0 && v <= 1.0, who, ": invalid ", arg, " = ", v, " (must be in [0, 1])");
}

}  // namespace cohort::optim::detail
