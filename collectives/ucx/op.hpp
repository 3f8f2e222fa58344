// One enqueued operation of the UCX communicator: what the caller asked for (OpArgs: the shared
// op description of detail/op_desc.hpp plus this rank's buffers and timeout) and the Work handle
// the caller waits on (OpState). The caller's thread creates an OpState; whichever thread drives
// the engine when the op's turn comes (the progress thread, or a caller waiting in wait(), see
// progress.cpp) runs it and completes it exactly once, with or without an error.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

#include "cohort/collectives/communicator.hpp"
#include "detail/op_desc.hpp"

namespace cohort::comm::ucx::detail {

using ::cohort::comm::detail::OpDesc;
using ::cohort::comm::detail::OpKind;
using ::cohort::comm::detail::op_kind_name;

// The description every rank shares (kind, count, dtype, op, root/peer, tag; seq is set by the
// progress thread when a collective starts) plus what is this rank's own: buffers and timeout.
struct OpArgs : OpDesc {
  const void* send = nullptr;  // allreduce, allgather, reduce_scatter, send
  void* recv = nullptr;        // allreduce, allgather, reduce_scatter, recv; broadcast's buffer
  Timeout timeout{0};          // resolved (never kDefaultTimeout)
};

class OpState;

// What lets a waiting caller run the engine's ops on its own thread (Engine::Impl, progress.cpp).
// drive_until(op) returns once `op` is complete, or at once where the caller cannot drive (the
// engine is torn down); the caller then sleeps on the op.
class Driver {
 public:
  virtual ~Driver() = default;
  virtual void drive_until(OpState& op) = 0;
  // Someone polls an op that has not completed: the driver must be running (submit() may have
  // left the progress thread asleep, expecting a wait; progress.cpp).
  virtual void polled() = 0;
};

// The Work handle. complete() is called once by the engine's driver; test() and wait() may be
// called from any thread, any number of times, and throw the op's error every time: each throw
// builds a new cohort::Error from the stored fields, so no exception object is shared between
// threads (a std::exception_ptr rethrown on several threads would be).
class OpState final : public Work {
 public:
  // `driver`: the engine wait() may drive (empty: wait() only sleeps until another thread
  // completes the op). Weak, so that a Work kept after its communicator is gone owns nothing.
  explicit OpState(const OpArgs& a, std::weak_ptr<Driver> driver = {})
      : args(a), driver_(std::move(driver)) {}

  bool test() override;
  void wait() override;

  // error may be null (success); a non-cohort exception becomes a cohort::Error of backend "ucx".
  void complete(std::exception_ptr error);
  bool completed();

  const OpArgs args;  // args.seq stays 0: the driver numbers a copy

 private:
  const std::weak_ptr<Driver> driver_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool failed_ = false;
  // done_, readable without mu_: the driver checks it after every turn (drive_until).
  std::atomic<bool> done_flag_{false};
  struct {
    std::string file, expr, backend, why;
    int line = 0, rank = -1;
  } error_;
  [[noreturn]] void throw_error() const;
};

}  // namespace cohort::comm::ucx::detail
