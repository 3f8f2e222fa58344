// One enqueued operation of the UCX communicator: what the caller asked for (OpDesc) and the Work
// handle the caller waits on (OpState). The caller's thread creates an OpState, the progress
// thread (engine.cpp) runs it and completes it exactly once, with or without an error.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>

#include "cohort/collectives/communicator.hpp"

namespace cohort::comm::ucx::detail {

enum class OpKind { allreduce, broadcast, allgather, reduce_scatter, barrier, send, recv };

struct OpDesc {
  OpKind kind = OpKind::barrier;
  const void* send = nullptr;  // allreduce, allgather, reduce_scatter, send
  void* recv = nullptr;        // allreduce, allgather, reduce_scatter, recv; broadcast's buffer
  std::size_t count = 0;       // elements, as the caller gave it
  DType dtype = DType::f32;
  ReduceOp op = ReduceOp::sum;
  int peer = -1;       // broadcast: root; send/recv: the other rank
  int tag = 0;         // send/recv only
  Timeout timeout{0};  // resolved (never kDefaultTimeout)

  bool collective() const { return kind != OpKind::send && kind != OpKind::recv; }
};

const char* op_kind_name(OpKind kind);
// "allreduce (1048576 x f32, sum)", "recv (16 x u8 from rank 1, tag 3)". seq > 0 adds " #seq".
std::string describe(const OpDesc& d, std::uint64_t seq = 0);

// The Work handle. complete() is called once by the progress thread; test() and wait() may be
// called from any thread, any number of times, and throw the op's error every time: each throw
// builds a new cohort::Error from the stored fields, so no exception object is shared between
// threads (a std::exception_ptr rethrown on several threads would be).
class OpState final : public Work {
 public:
  explicit OpState(const OpDesc& d) : desc(d) {}

  bool test() override;
  void wait() override;

  // error may be null (success); a non-cohort exception becomes a cohort::Error of backend "ucx".
  void complete(std::exception_ptr error);
  bool completed();

  const OpDesc desc;

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
