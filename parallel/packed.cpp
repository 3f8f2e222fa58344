// Packed collectives (see packed.hpp): pack, one collective, unpack.
#include "packed.hpp"

#include <cstddef>
#include <functional>

#include "cohort/core/error.hpp"
#include "reducer.hpp"

namespace cohort::parallel::detail {
namespace {

// Runs `run(buffer, bytes)` once over the defined, non-empty `tensors` packed back to back: on
// their device when they share one the communicator can use, else in a host buffer. `load`:
// this rank's values are packed in first; `store`: the buffer is unpacked into them afterwards.
// Returns whether anything was stored.
bool packed(const std::vector<Tensor>& tensors, comm::Communicator& comm, bool load, bool store,
            const std::function<void(void*, std::size_t)>& run) {
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

  if (one_device && comm_can_use(comm, *dev)) {  // packed on the device itself
    Tensor flat = Tensor::empty(Shape{static_cast<std::int64_t>(bytes)}, DType::u8, *dev);
    auto* base = static_cast<unsigned char*>(flat.raw());
    std::size_t off = 0;
    if (load)
      for (const Tensor* t : live) {
        dev->copy(base + off, t->raw(), t->nbytes());
        off += t->nbytes();
      }
    wait_for_compute(comm, *dev);
    run(base, bytes);
    if (!store) return false;
    off = 0;
    for (const Tensor* t : live) {
      dev->copy(t->raw(), base + off, t->nbytes());
      off += t->nbytes();
    }
    return true;
  }

  std::vector<unsigned char> staged(bytes);
  std::size_t off = 0;
  if (load)
    for (const Tensor* t : live) {
      t->device().copy_to_host(staged.data() + off, t->raw(), t->nbytes());
      off += t->nbytes();
    }
  run(staged.data(), bytes);
  if (!store) return false;
  off = 0;
  for (const Tensor* t : live) {
    t->device().copy_from_host(t->raw(), staged.data() + off, t->nbytes());
    off += t->nbytes();
  }
  return true;
}

}  // namespace

bool broadcast_from(const std::vector<Tensor>& tensors, comm::Communicator& comm, int root) {
  COHORT_CHECK(root >= 0 && root < comm.size(), "broadcast root ", root, " is not a rank of ",
               comm.size());
  if (comm.size() == 1) return false;
  const bool is_root = comm.rank() == root;
  // Packs of at most kBroadcastPackBytes (a tensor larger than that alone): a model's broadcast
  // then needs one pack more than the model, not a second model (PyTorch's DDP broadcasts in
  // 250 MB buckets for the same reason). Every rank cuts the same list at the same places.
  bool written = false;
  std::vector<Tensor> pack;
  std::size_t pack_bytes = 0;
  const auto flush = [&] {
    written |= packed(pack, comm, is_root, !is_root, [&](void* buf, std::size_t bytes) {
      comm.broadcast(buf, bytes, DType::u8, root)->wait();
    });
    pack.clear();
    pack_bytes = 0;
  };
  for (const Tensor& t : tensors) {
    if (!t.defined() || t.numel() == 0) continue;
    if (!pack.empty() && pack_bytes + t.nbytes() > kBroadcastPackBytes) flush();
    pack.push_back(t);
    pack_bytes += t.nbytes();
  }
  if (!pack.empty()) flush();
  return written;
}

void average_across_ranks(const std::vector<Tensor>& tensors, comm::Communicator& comm) {
  for (const Tensor& t : tensors)
    COHORT_CHECK(!t.defined() || t.dtype() == DType::f32, "averaging across ranks takes f32 "
                 "tensors, got ", dtype_name(t.dtype()));
  if (comm.size() == 1) return;
  packed(tensors, comm, true, true, [&](void* buf, std::size_t bytes) {
    comm.allreduce(buf, buf, bytes / sizeof(float), DType::f32, comm::ReduceOp::avg)->wait();
  });
}

}  // namespace cohort::parallel::detail
