// The checks and timeout resolution in front of every backend's ops (communicator_base.hpp). The
// order is the same for every op: usable, arguments, the run-status note (the launcher reports
// the last collective of a rank that died), timeout, then the backend.
#include "detail/communicator_base.hpp"

#include "detail/env.hpp"
#include "detail/reduce.hpp"
#include "detail/validate.hpp"

#include "cohort/core/run_status.hpp"

namespace cohort::comm::detail {

Timeout CommunicatorBase::resolve(Timeout timeout) const {
  return resolve_timeout(timeout, default_timeout());
}

Capabilities CommunicatorBase::host_capabilities() {
  Capabilities c;
  c.host_memory = true;
  c.device_memory = false;
  c.dtypes = reducible_dtypes();
  return c;
}

WorkHandle CommunicatorBase::allreduce(const void* send, void* recv, std::size_t count,
                                       DType dtype, ReduceOp op, Timeout timeout) {
  check_usable();
  check_allreduce(name_, send, recv, count, dtype);
  run_status::note_collective("allreduce", count, dtype);
  return start_allreduce(send, recv, count, dtype, op, resolve(timeout));
}

WorkHandle CommunicatorBase::broadcast(void* buf, std::size_t count, DType dtype, int root,
                                       Timeout timeout) {
  check_usable();
  check_broadcast(name_, buf, count, dtype, root, size());
  run_status::note_collective("broadcast", count, dtype);
  return start_broadcast(buf, count, dtype, root, resolve(timeout));
}

WorkHandle CommunicatorBase::allgather(const void* send, void* recv, std::size_t count,
                                       DType dtype, Timeout timeout) {
  check_usable();
  check_allgather(name_, send, recv, count, dtype, rank(), size());
  run_status::note_collective("allgather", count, dtype);
  return start_allgather(send, recv, count, dtype, resolve(timeout));
}

WorkHandle CommunicatorBase::reduce_scatter(const void* send, void* recv, std::size_t count,
                                            DType dtype, ReduceOp op, Timeout timeout) {
  check_usable();
  check_reduce_scatter(name_, send, recv, count, dtype, rank(), size());
  run_status::note_collective("reduce_scatter", count, dtype);
  return start_reduce_scatter(send, recv, count, dtype, op, resolve(timeout));
}

WorkHandle CommunicatorBase::barrier(Timeout timeout) {
  check_usable();
  run_status::note_collective("barrier", 0, DType::u8);
  return start_barrier(resolve(timeout));
}

WorkHandle CommunicatorBase::send(const void* buf, std::size_t count, DType dtype, int peer,
                                  int tag, Timeout timeout) {
  check_usable();
  check_p2p(name_, "send", buf, count, dtype, peer, size());
  return start_send(buf, count, dtype, peer, tag, resolve(timeout));
}

WorkHandle CommunicatorBase::recv(void* buf, std::size_t count, DType dtype, int peer, int tag,
                                  Timeout timeout) {
  check_usable();
  check_p2p(name_, "recv", buf, count, dtype, peer, size());
  return start_recv(buf, count, dtype, peer, tag, resolve(timeout));
}

}  // namespace cohort::comm::detail
