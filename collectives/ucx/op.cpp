// OpState, the Work handle of one ucx op (op.hpp): test() and wait() on the caller's side, and its
// completion (with or without an error) by whichever thread drives the engine.
#include "ucx/op.hpp"

#include "cohort/core/error.hpp"

namespace cohort::comm::ucx::detail {

bool OpState::test() {
  if (!done_flag_.load(std::memory_order_acquire)) {
    if (auto d = driver_.lock()) d->polled();
    return false;
  }
  std::lock_guard<std::mutex> lk(mu_);
  if (failed_) throw_error();
  return done_;
}

void OpState::wait() {
  // The waiting caller runs the engine itself (its op and any queued before it): handing an op to
  // the progress thread and its completion back costs two thread wake-ups, several microseconds
  // against the ~1 us a small all-reduce takes (docs/UCX.md, "Who runs the ops"). No spinning
  // on the op: while the caller drives, the progress thread sleeps, so the two never compete for
  // a core. No timer either: the driver enforces the op's deadline and completes the op with a
  // timeout error when it passes, so this wait always ends (docs/UCX.md, "Timeouts").
  if (!completed())
    if (auto d = driver_.lock()) d->drive_until(*this);
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [&] { return done_; });
  if (failed_) throw_error();
}

void OpState::throw_error() const {
  throw cohort::Error(error_.file, error_.line, error_.expr, error_.backend, error_.rank,
                      error_.why);
}

void OpState::complete(std::exception_ptr error) {
  decltype(error_) info;
  if (error) {
    try {
      std::rethrow_exception(error);
    } catch (const cohort::Error& e) {
      info = {e.file(), e.expression(), e.backend(), e.why(), e.line(), e.rank()};
    } catch (const std::exception& e) {
      info = {"collectives/ucx", "", "ucx", e.what(), 0, -1};
    } catch (...) {
      info = {"collectives/ucx", "", "ucx", "unknown exception", 0, -1};
    }
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (done_) return;
    done_ = true;
    failed_ = error != nullptr;
    error_ = std::move(info);
    done_flag_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

bool OpState::completed() { return done_flag_.load(std::memory_order_acquire); }

}  // namespace cohort::comm::ucx::detail
