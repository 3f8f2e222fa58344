// wait_for_compute: the one place where communication is ordered after compute (see
// reducer.hpp). Every reducer and every broadcast calls it before a communicator reads memory
// that device ops wrote.
//
// It records an event on the device's compute stream and waits for that event: the host blocks
// only until the work enqueued so far (the ops that wrote this bucket) has run, not for work
// enqueued later and not for other streams. The communicators built here (shm, ucx, self) are
// driven from the host thread, so the host must wait; a communicator with a stream of its own
// (nccl) would instead make that stream wait on the event (Stream::wait) and not block at all.
#include "cohort/core/stream.hpp"
#include "reducer.hpp"

namespace cohort::parallel::detail {

void wait_for_compute(Device& dev) {
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
