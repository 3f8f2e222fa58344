// Errors at the C++ API: every failure is a cohort::Error that says why, with the values at fault,
// in which backend and on which rank: what() reads "cohort [shm] (rank 1): <why>". Where in the
// library it was raised (file, line, the check that failed) is kept in the object and appended
// to what() only when COHORT_DEBUG is set (not "0"): " [at core/src/tensor.cpp:88, check `...`
// failed]" -- noise for users, useful to whoever debugs cohort.
// Check macros live here; backend-specific ones (COHORT_CHECK_CUDA, ...) live at each backend's edge
// and build a cohort::Error the same way.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace cohort {

class Error : public std::runtime_error {
 public:
  Error(std::string file, int line, std::string expr, std::string backend, int rank,
        std::string why);

  const std::string& file() const noexcept { return file_; }
  int line() const noexcept { return line_; }
  const std::string& expression() const noexcept { return expr_; }
  const std::string& backend() const noexcept { return backend_; }
  int rank() const noexcept { return rank_; }  // -1 when not known or not distributed
  const std::string& why() const noexcept { return why_; }

 private:
  std::string file_, expr_, backend_, why_;
  int line_;
  int rank_;
};

// The rank stamped on errors raised in this process; collectives set it once the process group is
// known. -1 (the default) leaves it out of messages.
void set_error_rank(int rank) noexcept;
// Whether COHORT_DEBUG asks for source locations in messages (read at each error).
bool debug_errors() noexcept;
int error_rank() noexcept;

// Runs f() and returns its result; a cohort::Error it throws is rethrown with `api` before its
// reason, so an error from deep inside a collective names the call that issued it:
// "DistributedDataParallel::weights_identical_across_ranks (all-gather of the weights digests):
// collective mismatch: ...". The rank, backend and source location are kept.
template <class F>
decltype(auto) with_context(const std::string& api, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error(e.file(), e.line(), e.expression(), e.backend(), e.rank(), api + ": " + e.why());
  }
}

namespace detail {
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
[[noreturn]] void throw_error(const char* file, int line, const char* expr, const char* backend,
                              const std::string& why);
}  // namespace detail

}  // namespace cohort

// Throws cohort::Error unless `cond` holds; the remaining arguments are streamed into the message,
// so callers report the values at fault: COHORT_CHECK(x.dim() == 4, "expected 4-D input, got ", s).
#define COHORT_CHECK(cond, ...)                                                          \
  do {                                                                                   \
    if (!(cond))                                                                         \
      ::cohort::detail::throw_error(__FILE__, __LINE__, #cond, "",                       \
                                    ::cohort::detail::concat(__VA_ARGS__));              \
  } while (0)

// Same, attributed to a backend ("host", "cuda", "shm", ...).
#define COHORT_CHECK_IN(backend, cond, ...)                                              \
  do {                                                                                   \
    if (!(cond))                                                                         \
      ::cohort::detail::throw_error(__FILE__, __LINE__, #cond, backend,                  \
                                    ::cohort::detail::concat(__VA_ARGS__));              \
  } while (0)

#define COHORT_FAIL(...) \
  ::cohort::detail::throw_error(__FILE__, __LINE__, "", "", ::cohort::detail::concat(__VA_ARGS__))
