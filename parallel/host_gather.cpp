// allgather_host (see host_gather.hpp).
#include "host_gather.hpp"

#include "cohort/core/error.hpp"
#include "cohort/core/tensor.hpp"

namespace cohort::parallel::detail {

void allgather_host(comm::Communicator& comm, Device* dev, const void* send, void* recv,
                    std::size_t bytes, const char* what) {
  if (comm.capabilities().host_memory) {
    comm.allgather(send, recv, bytes, DType::u8)->wait();
    return;
  }
  COHORT_CHECK(dev != nullptr && !dev->host_accessible(), what, ": communicator '",
               comm.backend(), "' takes only device memory, and the model has no parameters on a "
               "device to stage through (put the model on the communicator's device)");
  const auto n = static_cast<std::int64_t>(bytes);
  Tensor mine = Tensor::empty(Shape{n}, DType::u8, *dev);
  Tensor all = Tensor::empty(Shape{n * comm.size()}, DType::u8, *dev);
  dev->copy_from_host(mine.raw(), send, bytes);
  comm.allgather(mine.raw(), all.raw(), bytes, DType::u8)->wait();
  dev->copy_to_host(recv, all.raw(), all.nbytes());
}

Device* model_device(const nn::Module& model) {
  const auto ps = model.named_parameters();
  return ps.empty() ? nullptr : &ps.front().param->value.device();
}

}  // namespace cohort::parallel::detail
