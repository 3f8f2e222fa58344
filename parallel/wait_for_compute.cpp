// wait_for_compute and order_after_compute: the one place where communication is ordered after
// compute (see reducer.hpp). Every reducer and every broadcast calls one of them before a
// communicator, or a copy for one, reads memory that device ops wrote.
//
// Three cases:
//  - a stream-ordered communicator on device memory (nccl): it makes its own stream wait for an
//    event on the compute stream, so nothing is done here and the host never blocks;
//  - a host-driven communicator (shm, ucx, self): the host records an event on the compute stream
//    and waits for it, i.e. only for the work enqueued so far (the ops that wrote this bucket),
//    not for work enqueued later and not for other streams;
//  - a copy on a stream of its own (HostStage's download): that stream waits for the event; the
//    host does not block.
#include "cohort/core/stream.hpp"
#include "reducer.hpp"

namespace cohort::parallel::detail {

void wait_for_compute(const comm::Communicator& comm, Device& dev) {
  if (!dev.host_accessible() && comm.capabilities().stream_ordered) return;
  Event written(dev);
  written.record();
  written.synchronize();
}

}  // namespace cohort::parallel::detail

namespace cohort::parallel::detail {

void order_after_compute(Device& dev, Stream& stream) {
  Event written(dev);
  written.record();
  stream.wait(written);
}

}  // namespace cohort::parallel::detail
