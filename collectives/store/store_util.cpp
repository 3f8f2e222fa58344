// The Store helpers every store shares (store_util.hpp): the timeout message and the decimal
// encoding of add() counters.
#include "store/store_util.hpp"

#include <cstdlib>

#include "cohort/core/error.hpp"

namespace cohort::comm::detail {

void throw_store_timeout(const std::string& address, const std::vector<std::string>& missing,
                         std::chrono::milliseconds timeout) {
  std::string keys;
  for (const auto& k : missing) keys += (keys.empty() ? "'" : ", '") + k + "'";
  COHORT_FAIL("store ", address, ": timed out after ", timeout.count(), " ms waiting for key",
              missing.size() == 1 ? " " : "s ", keys);
}

std::int64_t decode_counter(const std::string& address, const std::string& key,
                            const std::vector<std::uint8_t>& value) {
  const std::string s(value.begin(), value.end());
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  COHORT_CHECK(!s.empty() && end && *end == '\0', "store ", address, ": add() on key '", key,
               "' whose value '", s.substr(0, 40), "' is not an integer");
  return v;
}

std::vector<std::uint8_t> encode_counter(std::int64_t v) {
  const std::string s = std::to_string(v);
  return std::vector<std::uint8_t>(s.begin(), s.end());
}

}  // namespace cohort::comm::detail
