// Recursive-doubling allreduce: with p = 2^floor(log2 n) and extra = n - p, the first 2 extra
// ranks fold pairwise (even rank 2i sends its vector to 2i+1 and sits out), leaving p
// participants; in round k participant v exchanges its whole vector with v ^ 2^k and reduces; the
// folded ranks then get the result back from their partner. log2(p) + 2 latencies, each rank
// moving the whole vector per round: the choice for small messages. The folding is shared with
// Rabenseifner's algorithm (fold_in, fold_rank, fold_out; algorithms.hpp).
#include <cstring>

#include "detail/reduce.hpp"
#include "ucx/algorithms.hpp"

namespace cohort::comm::ucx::detail {

void allreduce_recursive_doubling(Channel& ch, const void* send, void* recv, std::size_t count,
                                  DType dtype, ReduceOp op) {
  const int n = ch.size();
  const std::size_t bytes = count * dtype_size(dtype);
  if (send != recv) std::memcpy(recv, send, bytes);

  int p = 1;
  while (p * 2 <= n) p *= 2;
  const int extra = n - p;
  const int v = fold_in(ch, recv, count, dtype, op, extra);
  void* tmp = ch.scratch(0, bytes);  // after fold_in, which uses slot 0 too
  if (v >= 0) {
    std::uint32_t step = 1;
    for (int mask = 1; mask < p; mask <<= 1, ++step) {
      const int peer = fold_rank(v ^ mask, extra);
      const auto in = ch.irecv(peer, tmp, bytes, step);
      const auto out = ch.isend(peer, recv, bytes, step);
      ch.wait(in);
      ch.wait(out);  // recv is overwritten next: the send must be done reading it
      common::reduce_into(recv, tmp, count, dtype, op);
    }
    if (op == ReduceOp::avg) common::finish_avg(recv, count, dtype, n);
  }
  fold_out(ch, recv, bytes, extra);
}

int fold_in(Channel& ch, void* recv, std::size_t count, DType dtype, ReduceOp op, int extra) {
  const int r = ch.rank();
  if (r >= 2 * extra) return r - extra;
  const std::size_t bytes = count * dtype_size(dtype);
  if (r % 2 == 0) {
    ch.wait(ch.isend(r + 1, recv, bytes, 0));
    return -1;
  }
  void* tmp = ch.scratch(0, bytes);
  ch.wait(ch.irecv(r - 1, tmp, bytes, 0));
  common::reduce_into(recv, tmp, count, dtype, op);
  return r / 2;
}

int fold_rank(int participant, int extra) {
  return participant < extra ? 2 * participant + 1 : participant + extra;
}

void fold_out(Channel& ch, void* recv, std::size_t bytes, int extra) {
  const int r = ch.rank();
  if (r >= 2 * extra) return;
  if (r % 2 == 1)
    ch.wait(ch.isend(r - 1, recv, bytes, 63));
  else
    ch.wait(ch.irecv(r + 1, recv, bytes, 63));
}

void allreduce_pair_reduce(const void* send, void* recv, const void* theirs, std::size_t count,
                           DType dtype, ReduceOp op) {
  if (send != recv) std::memcpy(recv, send, count * dtype_size(dtype));
  common::reduce_into(recv, theirs, count, dtype, op);
  if (op == ReduceOp::avg) common::finish_avg(recv, count, dtype, 2);
}

}  // namespace cohort::comm::ucx::detail
