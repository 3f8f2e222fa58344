// Numbers as checkpoint metadata text (internal to train/): %.17g round-trips every double, and
// the parse refuses anything that is not wholly a number, naming the file and the key. Shared by
// the training-state file (checkpoint.cpp) and the Trainer's run.* entries (trainer_checkpoint.cpp).
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cohort/core/error.hpp"

namespace cohort::train::detail {

inline std::string exact_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

inline double parse_exact(const std::string& path, const std::string& key, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  COHORT_CHECK(end && *end == '\0' && !text.empty() && errno == 0, "checkpoint '", path,
               "': metadata '", key, "' = '", text, "' is not a number");
  return v;
}

}  // namespace cohort::train::detail
