// The shm collectives as step machines over the segment (see engine.hpp for steps and flags).
// Each returns an op ready for Engine::submit.
#pragma once

#include "shm/engine.hpp"

namespace cohort::comm::shm {

// Up to Params::direct_bytes: one step, every rank copies its input to its slot and reduces all
// slots in rank order (one flag exchange: latency). Above: reduce-scatter + all-gather, pipelined
// over steps of slot_bytes: per step, each rank copies to its slot the slices the others reduce,
// reduces its own slice straight from its input and the others' slots into its output and its slot,
// then copies the others' reduced slices out (bandwidth: per rank, about 2 reads and 2 writes of
// the buffer in all, the minimum for processes that cannot read each other's private memory).
std::shared_ptr<CollOp> make_allreduce(std::shared_ptr<Engine> e, const void* send, void* recv,
                                       std::size_t count, DType dtype, ReduceOp op, Timeout t);
// Root copies step by step into its slots; the others copy out (root completes once its data is
// in the segment).
std::shared_ptr<CollOp> make_broadcast(std::shared_ptr<Engine> e, void* buf, std::size_t count,
                                       DType dtype, int root, Timeout t);
std::shared_ptr<CollOp> make_allgather(std::shared_ptr<Engine> e, const void* send, void* recv,
                                       std::size_t count, DType dtype, Timeout t);
std::shared_ptr<CollOp> make_reduce_scatter(std::shared_ptr<Engine> e, const void* send,
                                            void* recv, std::size_t count, DType dtype,
                                            ReduceOp op, Timeout t);
std::shared_ptr<CollOp> make_barrier(std::shared_ptr<Engine> e, Timeout t);

}  // namespace cohort::comm::shm
