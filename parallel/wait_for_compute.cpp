// wait_for_compute: the one place where communication is ordered after compute (see
// reducer.hpp). Every reducer and every broadcast calls it before a communicator reads memory
// that device ops wrote. Today it drains the whole device; with streams and events it becomes
// "record an event on the compute stream, make the communication wait for it", here and only here.
#include "reducer.hpp"

namespace cohort::parallel::detail {

void wait_for_compute(Device& dev) { dev.synchronize(); }

}  // namespace cohort::parallel::detail
