// Rank and timeout wording for the backends' error messages (format.hpp).
#include "detail/format.hpp"

namespace cohort::comm::detail {

std::string format_ranks(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(ranks[i]);
  }
  return s;
}

std::string format_timeout(Timeout t) { return std::to_string(t.count()) + " ms"; }

}  // namespace cohort::comm::detail
