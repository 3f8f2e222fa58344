// The default collective and store timeout: COHORT_TIMEOUT seconds (300 when unset), read at
// each call so a test may set it; a malformed value is an error naming it.
#include "cohort/core/timeout.hpp"

#include <cmath>
#include <cstdlib>

#include "cohort/core/error.hpp"

namespace cohort {

std::chrono::milliseconds default_timeout() {
  const char* env = std::getenv("COHORT_TIMEOUT");
  if (!env || !*env) return std::chrono::seconds(300);
  char* end = nullptr;
  const double s = std::strtod(env, &end);
  COHORT_CHECK(end && *end == '\0' && std::isfinite(s) && s > 0 && s < 1e9, "COHORT_TIMEOUT='",
               env, "' is not a positive number of seconds (e.g. 300 or 0.5)");
  return std::chrono::milliseconds(std::max<long long>(1, std::llround(s * 1000)));
}

}  // namespace cohort
