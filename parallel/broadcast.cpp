// broadcast_from_rank0 (see broadcast.hpp): pack, one broadcast, unpack. One collective however
// many tensors there are: N batch norms' 3N buffers cost one latency, not 3N.
#include "broadcast.hpp"

#include <cstddef>

#include "reducer.hpp"

namespace cohort::parallel::detail {

bool broadcast_from_rank0(const std::vector<Tensor>& tensors, comm::Communicator& comm) {
  if (comm.size() == 1) return false;
  std::size_t bytes = 0;
  Device* dev = nullptr;
  bool one_device = true;
  std::vector<const Tensor*> live;
  for (const Tensor& t : tensors) {
    if (!t.defined() || t.numel() == 0) continue;
    live.push_back(&t);
    bytes += t.nbytes();
    if (dev == nullptr) dev = &t.device();
    one_device = one_device && dev == &t.device();
  }
  if (bytes == 0) return false;  // same on every rank: the same model on each
  const bool root = comm.rank() == 0;

  if (one_device && comm_can_use(comm, *dev)) {  // packed on the device itself
    Tensor flat = Tensor::empty(Shape{static_cast<std::int64_t>(bytes)}, DType::u8, *dev);
    auto* base = static_cast<unsigned char*>(flat.raw());
    std::size_t off = 0;
    if (root)
      for (const Tensor* t : live) {
        dev->copy(base + off, t->raw(), t->nbytes());
        off += t->nbytes();
      }
    wait_for_compute(*dev);
    comm.broadcast(base, bytes, DType::u8, 0)->wait();
    if (root) return false;
    off = 0;
    for (const Tensor* t : live) {
      dev->copy(t->raw(), base + off, t->nbytes());
      off += t->nbytes();
    }
    return true;
  }

  std::vector<unsigned char> staged(bytes);
  std::size_t off = 0;
  if (root)
    for (const Tensor* t : live) {
      wait_for_compute(t->device());
      t->device().copy_to_host(staged.data() + off, t->raw(), t->nbytes());
      off += t->nbytes();
    }
  comm.broadcast(staged.data(), bytes, DType::u8, 0)->wait();
  if (root) return false;
  off = 0;
  for (const Tensor* t : live) {
    t->device().copy_from_host(t->raw(), staged.data() + off, t->nbytes());
    off += t->nbytes();
  }
  return true;
}

}  // namespace cohort::parallel::detail
