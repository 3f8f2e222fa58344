// cohort::Error: how every failure is reported (file, line, expression, backend, rank and the
// values at fault), and the path shortening that keeps messages readable.
#include "cohort/core/error.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace cohort {
namespace {
std::atomic<int> g_rank{-1};

std::string format_message(const std::string& file, int line, const std::string& expr,
                           const std::string& backend, int rank, const std::string& why) {
  std::ostringstream os;
  os << "cohort";
  if (!backend.empty()) os << " [" << backend << "]";
  if (rank >= 0) os << " (rank " << rank << ")";
  os << ": " << why;
  // Where in the library and which check: for whoever debugs cohort itself, not for its users.
  if (debug_errors()) {
    os << " [at " << file << ":" << line;
    if (!expr.empty()) os << ", check `" << expr << "` failed";
    os << "]";
  }
  return os.str();
}
}  // namespace

Error::Error(std::string file, int line, std::string expr, std::string backend, int rank,
             std::string why)
    : std::runtime_error(format_message(file, line, expr, backend, rank, why)),
      file_(std::move(file)),
      expr_(std::move(expr)),
      backend_(std::move(backend)),
      why_(std::move(why)),
      line_(line),
      rank_(rank) {}

bool debug_errors() noexcept {
  const char* v = std::getenv("COHORT_DEBUG");
  return v && *v && std::strcmp(v, "0") != 0;
}

void set_error_rank(int rank) noexcept { g_rank.store(rank); }
int error_rank() noexcept { return g_rank.load(); }

namespace detail {
void throw_error(const char* file, int line, const char* expr, const char* backend,
                 const std::string& why) {
  // Keep only the path below the repository's top folders so messages stay short. The folders
  // that mirror the library's (tests/core/, tests/data/, ...) come first, so a test's file keeps
  // its tests/ prefix.
  std::string f = file;
  for (const char* top : {"/tests/", "/examples/", "/bench/", "/tools/", "/core/", "/backends/",
                          "/layers/", "/models/", "/collectives/", "/parallel/", "/optim/",
                          "/data/", "/train/"}) {
    const auto pos = f.rfind(top);
    if (pos != std::string::npos) {
      f = f.substr(pos + 1);
      break;
    }
  }
  throw Error(f, line, expr, backend, g_rank.load(), why);
}
}  // namespace detail
}  // namespace cohort
