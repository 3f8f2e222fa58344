// Ring allreduce: a reduce-scatter around the ring (n-1 steps; after it rank r holds the full
// reduction of segment r+1) followed by an allgather (n-1 steps), run as one pipelined schedule of
// 2 (n-1) steps (ring.hpp). With segments s = 0..n-1:
//   step t <  n-1 (reduce-scatter): send segment r-t,          receive r-t-1 and reduce it;
//   step t >= n-1 (allgather):      send segment r+1-(t-n+1),  receive r-(t-n+1) as is.
// Out of place, a partial sum arrives straight in recv and this rank's contribution (send) is
// added into it, so no temporary is needed; in place, it arrives in a scratch segment and is added
// into recv. avg divides the one fully reduced segment before the allgather spreads it.
#include <cstring>

#include "detail/reduce.hpp"
#include "ucx/algorithms.hpp"
#include "ucx/ring.hpp"

namespace cohort::comm::ucx::detail {

void allreduce_ring(Channel& ch, std::size_t chunk_bytes, const void* send, void* recv,
                    std::size_t count, DType dtype, ReduceOp op) {
  const int n = ch.size();
  const int r = ch.rank();
  const std::size_t es = dtype_size(dtype);
  const bool in_place = send == recv;

  RingPlan p = RingPlan::even(n, count, es, chunk_bytes, 2 * (n - 1));
  const std::size_t max_seg = p.seg_count[0];  // the largest

  char* const out = static_cast<char*>(recv);
  const char* const mine = static_cast<const char*>(send);
  char* const tmp = in_place ? static_cast<char*>(ch.scratch(0, max_seg * es)) : nullptr;
  auto at = [&](int seg) { return p.seg_offset[static_cast<std::size_t>(seg)] * es; };

  p.send_seg = [&](int t) {
    return t < n - 1 ? ring_mod(r - t, n) : ring_mod(r + 1 - (t - n + 1), n);
  };
  p.recv_seg = [&](int t) {
    return t < n - 1 ? ring_mod(r - t - 1, n) : ring_mod(r - (t - n + 1), n);
  };
  p.send_base = [&](int t, int seg) -> const char* {
    return t == 0 ? mine + at(seg) : out + at(seg);  // step 0 sends this rank's own data
  };
  p.recv_base = [&](int t, int seg) -> char* {
    return t < n - 1 && in_place ? tmp : out + at(seg);
  };
  p.on_arrival = [&](int t, int seg, std::size_t first, std::size_t len) {
    if (t >= n - 1) return;  // allgather: the data is final
    char* acc = out + at(seg) + first * es;
    const char* other = in_place ? tmp + first * es : mine + at(seg) + first * es;
    common::reduce_into(acc, other, len, dtype, op);
    if (op == ReduceOp::avg && t == n - 2) common::finish_avg(acc, len, dtype, n);
  };
  run_ring(ch, p);
}

}  // namespace cohort::comm::ucx::detail
