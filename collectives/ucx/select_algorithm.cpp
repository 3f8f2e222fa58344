// Algorithm selection for the ops that have more than one algorithm, and the measured defaults.
// The crossovers were measured with `test_collectives_ucx --bench` (2 processes on the 2-core
// reference machine, docs/UCX.md); each can be overridden through COHORT_UCX_* variables.
#include <cstring>

#include "ucx/algorithms.hpp"

namespace cohort::comm::ucx::detail {

Tuning default_tuning() {
  Tuning t;
  t.allreduce = Tuning::Allreduce::automatic;
  // 2 processes, float32 sum, median of 5 runs: recursive doubling 4.4 us at 8 KiB, 7.4-9.6 us
  // at 10 KiB (its whole-vector messages cross UCX's eager/rendezvous threshold there); ring
  // 5.0 us at 8 KiB, 5.4 us at 10 KiB. So: recursive doubling up to 8 KiB, ring above.
  t.ring_min_bytes = (8 << 10) + 1;
  // 128 KiB .. 1 MiB chunks were within noise of each other at 1-64 MiB; 512 KiB was at or near
  // the best at every size (fewer messages; still several per segment from ~4 MiB up).
  t.chunk_bytes = 512 << 10;
  // Not measured (2 ranks cannot tell a chain from a tree): the chain pays off once a buffer is
  // several chunks long, the tree below that.
  t.chain_min_bytes = 256 << 10;
  return t;
}

bool allreduce_uses_ring(const Tuning& t, std::size_t bytes) {
  if (t.allreduce == Tuning::Allreduce::ring) return true;
  if (t.allreduce != Tuning::Allreduce::automatic) return false;
  return bytes >= t.ring_min_bytes;
}

bool allreduce_is_one_exchange(const Tuning& t, int size, std::size_t bytes) {
  return size == 2 && bytes > 0 && !allreduce_uses_ring(t, bytes) &&
         t.allreduce != Tuning::Allreduce::rabenseifner;
}

void allreduce(Channel& ch, const Tuning& t, const void* send, void* recv, std::size_t count,
               DType dtype, ReduceOp op) {
  if (ch.size() == 1) {
    if (send != recv) std::memcpy(recv, send, count * dtype_size(dtype));
    return;  // avg over one rank is the value itself
  }
  if (t.allreduce == Tuning::Allreduce::rabenseifner)
    allreduce_rabenseifner(ch, send, recv, count, dtype, op);
  else if (allreduce_uses_ring(t, count * dtype_size(dtype)))
    allreduce_ring(ch, t.chunk_bytes, send, recv, count, dtype, op);
  else
    allreduce_recursive_doubling(ch, send, recv, count, dtype, op);
}

void broadcast(Channel& ch, const Tuning& t, void* buf, std::size_t count, DType dtype, int root) {
  if (ch.size() == 1) return;
  const std::size_t bytes = count * dtype_size(dtype);
  if (bytes >= t.chain_min_bytes)
    broadcast_chain(ch, t.chunk_bytes, buf, bytes, root);
  else
    broadcast_binomial(ch, buf, bytes, root);
}

}  // namespace cohort::comm::ucx::detail
