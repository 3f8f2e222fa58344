// The front half every backend's Communicator shares: each op's arguments checked the same way
// (validate.hpp, errors attributed to the backend), its timeout resolved against the
// communicator's default (env.hpp: kDefaultTimeout means the default, other negative values
// throw), and only then the backend's start_<op>() called. A backend implements the start_*
// functions (its op path), default_timeout(), and check_usable() where an earlier failure makes it
// unusable; the public ops are final here, so no backend can skip a check or spell one
// differently. Ops whose checks are the backend's own (nccl: that every buffer is GPU memory; ucx:
// the tag range) run them at the top of start_<op>().
#pragma once

#include <cstddef>

#include "cohort/collectives/communicator.hpp"

namespace cohort::comm::detail {

class CommunicatorBase : public Communicator {
 public:
  WorkHandle allreduce(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op,
                       Timeout timeout) final;
  WorkHandle broadcast(void* buf, std::size_t count, DType dtype, int root,
                       Timeout timeout) final;
  WorkHandle allgather(const void* send, void* recv, std::size_t count, DType dtype,
                       Timeout timeout) final;
  WorkHandle reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype,
                            ReduceOp op, Timeout timeout) final;
  WorkHandle barrier(Timeout timeout) final;
  WorkHandle send(const void* buf, std::size_t count, DType dtype, int peer, int tag,
                  Timeout timeout) final;
  WorkHandle recv(void* buf, std::size_t count, DType dtype, int peer, int tag,
                  Timeout timeout) final;

 protected:
  // `name`: the backend's name in error messages (a string literal: it is kept, not copied).
  explicit CommunicatorBase(const char* name) : name_(name) {}

  // What a call's kDefaultTimeout stands for.
  virtual Timeout default_timeout() const = 0;
  // Called first by every op; throws when the communicator can no longer be used (self: after a
  // failed receive). Does nothing by default.
  virtual void check_usable() {}

  // The backend's op path. Arguments are checked and `timeout` is resolved (>= 0).
  virtual WorkHandle start_allreduce(const void* send, void* recv, std::size_t count, DType dtype,
                                     ReduceOp op, Timeout timeout) = 0;
  virtual WorkHandle start_broadcast(void* buf, std::size_t count, DType dtype, int root,
                                     Timeout timeout) = 0;
  virtual WorkHandle start_allgather(const void* send, void* recv, std::size_t count, DType dtype,
                                     Timeout timeout) = 0;
  virtual WorkHandle start_reduce_scatter(const void* send, void* recv, std::size_t count,
                                          DType dtype, ReduceOp op, Timeout timeout) = 0;
  virtual WorkHandle start_barrier(Timeout timeout) = 0;
  virtual WorkHandle start_send(const void* buf, std::size_t count, DType dtype, int peer, int tag,
                                Timeout timeout) = 0;
  virtual WorkHandle start_recv(void* buf, std::size_t count, DType dtype, int peer, int tag,
                                Timeout timeout) = 0;

  // Host memory only, every reducible dtype: the capabilities of self, shm and ucx.
  static Capabilities host_capabilities();

 private:
  Timeout resolve(Timeout timeout) const;

  const char* const name_;
};

}  // namespace cohort::comm::detail
