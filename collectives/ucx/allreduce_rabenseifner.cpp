// Rabenseifner's allreduce: a reduce-scatter by recursive halving, then an all-gather by recursive
// doubling (Thakur, Rabenseifner and Gropp, IJHPCA 2005). With p = 2^floor(log2 n), the first
// 2 (n - p) ranks fold pairwise first and get the result back last (fold_in, fold_out: the
// folding recursive doubling uses).
// In halving round k a participant exchanges half of its current range with partner v ^ (p/2^k)
// and keeps the other half, reduced; after log2(p) rounds it owns 1/p of the vector, fully
// reduced (and divided, for avg), and the doubling rounds send the owned ranges back out. Each
// rank moves 2 (p-1)/p of the vector in 2 log2(p) latencies: ring's bytes with doubling's step
// count. Every element is reduced by its owner alone and then copied, so all ranks end
// bit-identical.
#include <cstring>
#include <utility>
#include <vector>

#include "detail/reduce.hpp"
#include "ucx/algorithms.hpp"

namespace cohort::comm::ucx::detail {

void allreduce_rabenseifner(Channel& ch, const void* send, void* recv, std::size_t count,
                            DType dtype, ReduceOp op) {
  const int n = ch.size();
  const std::size_t es = dtype_size(dtype);
  const std::size_t bytes = count * es;
  if (send != recv) std::memcpy(recv, send, bytes);
  char* out = static_cast<char*>(recv);

  int p = 1;
  while (p * 2 <= n) p *= 2;
  const int extra = n - p;
  // Steps: 0 and 63 the folding, 1..log2(p) halving, then the doubling rounds.
  const int v = fold_in(ch, recv, count, dtype, op, extra);
  if (v >= 0) {
    // ranges[k]: the element range this rank owned before halving round k.
    std::vector<std::pair<std::size_t, std::size_t>> ranges;
    std::size_t lo = 0, hi = count;
    std::uint32_t step = 1;
    for (int mask = p / 2; mask >= 1; mask /= 2, ++step) {
      ranges.emplace_back(lo, hi);
      const int peer = fold_rank(v ^ mask, extra);
      const std::size_t mid = lo + (hi - lo) / 2;
      const bool lower = (v & mask) == 0;  // keep [lo, mid), give [mid, hi) away; or the reverse
      const std::size_t keep_lo = lower ? lo : mid, keep_hi = lower ? mid : hi;
      const std::size_t give_lo = lower ? mid : lo, give_hi = lower ? hi : mid;
      void* tmp = ch.scratch(0, (keep_hi - keep_lo) * es);
      const auto in = ch.irecv(peer, tmp, (keep_hi - keep_lo) * es, step);
      const auto gone = ch.isend(peer, out + give_lo * es, (give_hi - give_lo) * es, step);
      ch.wait(in);
      ch.wait(gone);
      common::reduce_into(out + keep_lo * es, tmp, keep_hi - keep_lo, dtype, op);
      lo = keep_lo, hi = keep_hi;
    }
    if (op == ReduceOp::avg) common::finish_avg(out + lo * es, hi - lo, dtype, n);
    // Doubling: the halving rounds in reverse; the partner's range is the other half of the
    // range both owned before that round.
    for (int mask = 1; mask < p; mask *= 2, ++step) {
      const auto [was_lo, was_hi] = ranges.back();
      ranges.pop_back();
      const int peer = fold_rank(v ^ mask, extra);
      const std::size_t their_lo = lo == was_lo ? hi : was_lo;
      const std::size_t their_hi = lo == was_lo ? was_hi : lo;
      const auto in = ch.irecv(peer, out + their_lo * es, (their_hi - their_lo) * es, step);
      const auto mine = ch.isend(peer, out + lo * es, (hi - lo) * es, step);
      ch.wait(in);
      ch.wait(mine);
      lo = was_lo, hi = was_hi;
    }
  }

  fold_out(ch, recv, bytes, extra);
}

}  // namespace cohort::comm::ucx::detail
