// The collective algorithms of the UCX backend, one per file, each written against Channel
// (tagged send/recv). All run on the progress thread, block until done, and throw on failure.
//
// Shared contracts (the Communicator contracts of cohort/collectives/communicator.hpp, plus):
//  - count > 0 (the engine completes count == 0 ops without calling an algorithm);
//  - send and recv are either the same buffer (in place) or disjoint, except where an op says
//    otherwise (allgather: send == recv + rank * count; reduce_scatter: any overlap);
//  - every rank ends with bit-identical results: each partial sum is computed by one rank and
//    forwarded, or by two ranks from the same two operands (the ops are commutative).
#pragma once

#include <cstddef>

#include "cohort/collectives/communicator.hpp"
#include "ucx/channel.hpp"

namespace cohort::comm::ucx::detail {

// Picks recursive doubling or ring by size (Tuning::ring_min_bytes), or the algorithm the tuning
// forces, and handles size() == 1.
void allreduce(Channel& ch, const Tuning& t, const void* send, void* recv, std::size_t count,
               DType dtype, ReduceOp op);
// Whether allreduce() picks the ring for a vector of `bytes` bytes.
bool allreduce_uses_ring(const Tuning& t, std::size_t bytes);
// Whether allreduce() on `size` ranks is one exchange of whole vectors between the two ranks
// (recursive doubling at 2 ranks): the engine then sends the vector inside the op's fingerprint
// message (progress.cpp) and finishes with allreduce_pair_reduce().
bool allreduce_is_one_exchange(const Tuning& t, int size, std::size_t bytes);
// recv = send (op) theirs, and / 2 for avg: what recursive doubling computes at 2 ranks, so both
// ranks' results are bit-identical to it and to each other.
void allreduce_pair_reduce(const void* send, void* recv, const void* theirs, std::size_t count,
                           DType dtype, ReduceOp op);
// Reduce-scatter then allgather around the ring, pipelined in chunks: each rank sends and
// receives 2 (n-1)/n of the data; bandwidth-optimal, latency 2 (n-1) steps.
void allreduce_ring(Channel& ch, std::size_t chunk_bytes, const void* send, void* recv,
                    std::size_t count, DType dtype, ReduceOp op);
// log2(n) exchanges of the whole vector with partner rank ^ 2^k; non-powers of two fold the
// first 2 (n - 2^floor(log2 n)) ranks pairwise before and after. Latency-optimal for small sizes.
void allreduce_recursive_doubling(Channel& ch, const void* send, void* recv, std::size_t count,
                                  DType dtype, ReduceOp op);
// The folding both recursive algorithms share for non-powers of two. With p = 2^floor(log2 n)
// and extra = n - p, fold_in() has even rank 2i (i < extra) send its vector to 2i+1, which
// reduces it into recv (step 0), and returns this rank's index among the p participants (-1 for
// a rank folded away); fold_rank() maps an index back to its rank; fold_out() sends the result
// back to the folded ranks (step 63). Algorithms use steps 1..62 in between.
int fold_in(Channel& ch, void* recv, std::size_t count, DType dtype, ReduceOp op, int extra);
int fold_rank(int participant, int extra);
void fold_out(Channel& ch, void* recv, std::size_t bytes, int extra);
// Reduce-scatter by recursive halving, then all-gather by recursive doubling, with the same
// folding as recursive doubling: ring's 2 (p-1)/p of the bytes in 2 log2(p) steps.
void allreduce_rabenseifner(Channel& ch, const void* send, void* recv, std::size_t count,
                            DType dtype, ReduceOp op);

// Picks binomial tree or pipelined chain by size (Tuning::chain_min_bytes).
void broadcast(Channel& ch, const Tuning& t, void* buf, std::size_t count, DType dtype, int root);
void broadcast_binomial(Channel& ch, void* buf, std::size_t bytes, int root);
void broadcast_chain(Channel& ch, std::size_t chunk_bytes, void* buf, std::size_t bytes, int root);

// Ring: n-1 steps, each forwarding the block received in the previous step.
void allgather_ring(Channel& ch, std::size_t chunk_bytes, const void* send, void* recv,
                    std::size_t count, DType dtype);
// Ring: n-1 steps; partial sums travel to the right and end at their owner.
void reduce_scatter_ring(Channel& ch, std::size_t chunk_bytes, const void* send, void* recv,
                         std::size_t count, DType dtype, ReduceOp op);
// Dissemination: ceil(log2 n) rounds of zero-byte messages to rank + 2^k.
void barrier_dissemination(Channel& ch);

}  // namespace cohort::comm::ucx::detail
