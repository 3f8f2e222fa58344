// allreduce_host / allgather_host (see cohort/collectives/host_values.hpp).
#include "cohort/collectives/host_values.hpp"


#include "cohort/core/error.hpp"

namespace cohort::comm {
namespace {

// `bytes` of scratch memory on a device, freed when it goes.
class Scratch {
 public:
  Scratch(Device& dev, std::size_t bytes) : dev_(dev), bytes_(bytes), p_(dev.allocate(bytes)) {}
  ~Scratch() { dev_.deallocate(p_, bytes_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* get() const { return p_; }

 private:
  Device& dev_;
  std::size_t bytes_;
  void* p_;
};

// The device to stage through, checked: one `comm` can take.
Device& staging_device(Communicator& comm, Device* dev, const char* call) {
  COHORT_CHECK(dev != nullptr && !dev->host_accessible() && comm.capabilities().device_memory,
               call, ": communicator '", comm.backend(), "' takes only device memory, and ",
               dev ? "'" + dev->name() + "' is not a device it can take"
                   : std::string("no device was given to stage through"),
               " (keep the model on the communicator's GPU, or use another backend)");
  return *dev;
}

}  // namespace

void allreduce_host(Communicator& comm, Device* dev, void* values, std::size_t count, DType dtype,
                    ReduceOp op, Timeout timeout) {
  if (comm.capabilities().host_memory) {
    comm.allreduce(values, values, count, dtype, op, timeout)->wait();
    return;
  }
  Device& d = staging_device(comm, dev, "allreduce of host values");
  const std::size_t bytes = count * dtype_size(dtype);
  if (bytes == 0) {
    comm.allreduce(values, values, 0, dtype, op, timeout)->wait();  // still one collective each
    return;
  }
  Scratch s(d, bytes);
  d.copy_from_host(s.get(), values, bytes);
  comm.allreduce(s.get(), s.get(), count, dtype, op, timeout)->wait();
  d.copy_to_host(values, s.get(), bytes);
}

void allgather_host(Communicator& comm, Device* dev, const void* send, void* recv,
                    std::size_t count, DType dtype, Timeout timeout) {
  if (comm.capabilities().host_memory) {
    comm.allgather(send, recv, count, dtype, timeout)->wait();
    return;
  }
  Device& d = staging_device(comm, dev, "all-gather of host values");
  const std::size_t bytes = count * dtype_size(dtype);
  if (bytes == 0) {
    comm.allgather(send, recv, 0, dtype, timeout)->wait();
    return;
  }
  const std::size_t all = bytes * static_cast<std::size_t>(comm.size());
  Scratch mine(d, bytes), gathered(d, all);
  d.copy_from_host(mine.get(), send, bytes);
  comm.allgather(mine.get(), gathered.get(), count, dtype, timeout)->wait();
  d.copy_to_host(recv, gathered.get(), all);
}

}  // namespace cohort::comm
