// All-reduce algorithm selection: the one shm op with more than one algorithm. The crossover
// (Params::direct_bytes, segment.hpp) is where one flag exchange over whole buffers stops beating
// the pipeline; one rank, or nothing to reduce, needs no step at all.
#include "shm/algorithms.hpp"

namespace cohort::comm::shm {

std::shared_ptr<CollOp> make_allreduce(std::shared_ptr<Engine> e, const void* send, void* recv,
                                       std::size_t count, DType dtype, ReduceOp op, Timeout t) {
  if (count == 0 || e->world == 1)
    return make_allreduce_direct(std::move(e), send, recv, count, dtype, op, t, 0);
  if (count * dtype_size(dtype) <= e->params.direct_bytes)
    return make_allreduce_direct(std::move(e), send, recv, count, dtype, op, t, 1);
  return make_allreduce_pipelined(std::move(e), send, recv, count, dtype, op, t);
}

}  // namespace cohort::comm::shm
