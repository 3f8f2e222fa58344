// One enqueued operation of the UCX communicator: what the caller asked for (OpArgs: the shared
// op description of detail/op_desc.hpp plus this rank's buffers and timeout) and the Work handle
// the caller waits on (OpState). The caller's thread creates an OpState, the progress
// thread (progress.cpp) runs it and completes it exactly once, with or without an error.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
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

// The Work handle. complete() is called once by the progress thread; test() and wait() may be
// called from any thread, any number of times, and throw the op's error every time: each throw
// builds a new cohort::Error from the stored fields, so no exception object is shared between
// threads (a std::exception_ptr rethrown on several threads would be).
class OpState final : public Work {
 public:
  explicit OpState(const OpArgs& a) : args(a) {}

  bool test() override;
  void wait() override;

  // error may be null (success); a non-cohort exception becomes a cohort::Error of backend "ucx".
  void complete(std::exception_ptr error);
  bool completed();

  const OpArgs args;  // args.seq stays 0: the progress thread numbers a copy

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool failed_ = false;
  struct {
    std::string file, expr, backend, why;
    int line = 0, rank = -1;
  } error_;
  [[noreturn]] void throw_error() const;
};

}  // namespace cohort::comm::ucx::detail
