// allreduce_host / allgather_host (see cohort/collectives/host_collectives.hpp).
#include "cohort/collectives/host_collectives.hpp"

#include <functional>

#include "cohort/core/error.hpp"
#include "cohort/core/tensor.hpp"

namespace cohort::comm {
namespace {

// Runs `op(in, out)` on `comm` with `in` holding `send`'s `in_bytes` and `out` of `out_bytes`,
// whose contents end in `recv`: on the host memory itself where `comm` takes it, else through two
// buffers on `dev` (which must be a device `comm` can take; the error names `call`).
void staged(Communicator& comm, Device* dev, const char* call, const void* send,
            std::size_t in_bytes, void* recv, std::size_t out_bytes,
            const std::function<void(const void* in, void* out)>& op) {
  if (comm.capabilities().host_memory) {
    op(send, recv);
    return;
  }
  COHORT_CHECK(dev != nullptr && !dev->host_accessible() && comm.capabilities().device_memory,
               call, ": communicator '", comm.backend(), "' takes only device memory, and ",
               dev ? "'" + dev->name() + "' is not a device it can take"
                   : std::string("no device was given to stage through"),
               " (keep the model on the communicator's GPU, or use another backend)");
  Tensor in = Tensor::empty(Shape{static_cast<std::int64_t>(in_bytes)}, DType::u8, *dev);
  Tensor out = Tensor::empty(Shape{static_cast<std::int64_t>(out_bytes)}, DType::u8, *dev);
  dev->copy_from_host(in.raw(), send, in_bytes);
  op(in.raw(), out.raw());
  dev->copy_to_host(recv, out.raw(), out_bytes);
}

}  // namespace

void allreduce_host(Communicator& comm, Device* dev, void* values, std::size_t count, DType dtype,
                    ReduceOp op, Timeout timeout) {
  const std::size_t bytes = count * dtype_size(dtype);
  staged(comm, dev, "allreduce of host values", values, bytes, values, bytes,
         [&](const void* in, void* out) {
           comm.allreduce(in, out, count, dtype, op, timeout)->wait();
         });
}

void allgather_host(Communicator& comm, Device* dev, const void* send, void* recv,
                    std::size_t count, DType dtype, Timeout timeout) {
  const std::size_t bytes = count * dtype_size(dtype);
  staged(comm, dev, "all-gather of host values", send, bytes, recv,
         bytes * static_cast<std::size_t>(comm.size()), [&](const void* in, void* out) {
           comm.allgather(in, out, count, dtype, timeout)->wait();
         });
}

}  // namespace cohort::comm
