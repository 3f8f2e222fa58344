// The backends' environment readers and timeout resolution (contracts in env.hpp).
#include "detail/env.hpp"

#include <cstdlib>
#include <string>

#include "cohort/core/error.hpp"
#include "cohort/core/timeout.hpp"
#include "detail/backoff.hpp"

namespace cohort::comm::detail {

Timeout default_timeout_from_env() {
  const char* env = std::getenv("COHORT_COMM_TIMEOUT_MS");
  if (!env || !*env) return Timeout(cohort::default_timeout().count());
  char* end = nullptr;
  const long long v = std::strtoll(env, &end, 10);
  COHORT_CHECK(end && *end == '\0' && v > 0, "COHORT_COMM_TIMEOUT_MS='", env,
               "' is not a positive number of milliseconds");
  return Timeout(v);
}

std::uint64_t bytes_from_env(const char* name, std::uint64_t fallback, std::uint64_t lo,
                             std::uint64_t hi, const char* backend) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  unsigned long long x = std::strtoull(v, &end, 10);
  const bool digits = end != v;
  if (digits && (*end == 'k' || *end == 'K'))
    x <<= 10, ++end;
  else if (digits && (*end == 'm' || *end == 'M'))
    x <<= 20, ++end;
  else if (digits && (*end == 'g' || *end == 'G'))
    x <<= 30, ++end;
  COHORT_CHECK_IN(backend, digits && *end == '\0' && x >= lo && x <= hi, name, "='", v,
                  "' is not a size between ", lo, " and ", hi, " bytes");
  return x;
}

bool collective_checks_from_env() {
  const char* env = std::getenv("COHORT_COLLECTIVE_CHECKS");
  if (!env || !*env) return true;
  const std::string v = env;
  COHORT_CHECK(v == "0" || v == "1", "COHORT_COLLECTIVE_CHECKS='", v,
               "' must be 1 (check that every rank issued the same collective, the default) or 0");
  return v == "1";
}

bool collective_checks_requested() {
  const char* env = std::getenv("COHORT_COLLECTIVE_CHECKS");
  return env && *env && collective_checks_from_env();
}

bool yield_when_idle(int local_ranks) {
  const char* env = std::getenv("COHORT_YIELD_WHEN_IDLE");
  if (!env || !*env) return local_ranks > usable_cpus();
  const std::string v = env;
  COHORT_CHECK(v == "0" || v == "1", "COHORT_YIELD_WHEN_IDLE='", v,
               "' must be 1 (a waiting rank yields its core at once), 0 (it spins first) or unset "
               "(it yields when the host has more ranks than cores)");
  return v == "1";
}

Timeout resolve_timeout(Timeout t, Timeout fallback) {
  if (t == kDefaultTimeout) return fallback;
  COHORT_CHECK(t.count() >= 0, "timeout of ", t.count(),
               " ms is negative (use kDefaultTimeout for the communicator's default)");
  return t;
}

}  // namespace cohort::comm::detail
