// The shm collective algorithms, one per file, each a step machine over the segment (see
// engine.hpp for steps and flags; pipeline.hpp for the stage driver the pipelined ones share).
// Each make_* returns an op ready for Engine::submit. Contracts: the Communicator contracts of
// cohort/collectives/communicator.hpp (arguments already checked by shm_communicator.cpp).
#pragma once

#include "shm/engine.hpp"

namespace cohort::comm::shm {

// Picks the all-reduce algorithm by size (select_algorithm.cpp): direct up to
// Params::direct_bytes, pipelined above; one rank or count 0 is a copy.
std::shared_ptr<CollOp> make_allreduce(std::shared_ptr<Engine> e, const void* send, void* recv,
                                       std::size_t count, DType dtype, ReduceOp op, Timeout t);
// allreduce_direct.cpp: one step, every rank copies its input to its slot and reduces all slots
// in rank order (one flag exchange: latency). nsteps 0 (one rank, or count 0): a local copy.
std::shared_ptr<CollOp> make_allreduce_direct(std::shared_ptr<Engine> e, const void* send,
                                              void* recv, std::size_t count, DType dtype,
                                              ReduceOp op, Timeout t, std::uint64_t nsteps);
// allreduce_pipelined.cpp: reduce-scatter + all-gather, pipelined over steps of slot_bytes: per
// step, each rank copies to its slot the slices the others reduce, reduces its own slice straight
// from its input and the others' slots into its output and its slot, then copies the others'
// reduced slices out (bandwidth: per rank, about 2 reads and 2 writes of the buffer in all, the
// minimum for processes that cannot read each other's private memory).
std::shared_ptr<CollOp> make_allreduce_pipelined(std::shared_ptr<Engine> e, const void* send,
                                                 void* recv, std::size_t count, DType dtype,
                                                 ReduceOp op, Timeout t);
// broadcast_pipelined.cpp: root copies step by step into its slots; the others copy out (root
// completes once its data is in the segment).
std::shared_ptr<CollOp> make_broadcast(std::shared_ptr<Engine> e, void* buf, std::size_t count,
                                       DType dtype, int root, Timeout t);
// allgather_pipelined.cpp: each rank posts a chunk of its block per step; the others copy it out.
std::shared_ptr<CollOp> make_allgather(std::shared_ptr<Engine> e, const void* send, void* recv,
                                       std::size_t count, DType dtype, Timeout t);
// reduce_scatter_pipelined.cpp: each rank posts, per step, its part of every other rank's block;
// each reduces its own block from its input and the others' slots.
std::shared_ptr<CollOp> make_reduce_scatter(std::shared_ptr<Engine> e, const void* send,
                                            void* recv, std::size_t count, DType dtype,
                                            ReduceOp op, Timeout t);
// barrier_flags.cpp: one step of flags only.
std::shared_ptr<CollOp> make_barrier(std::shared_ptr<Engine> e, Timeout t);

}  // namespace cohort::comm::shm
