// Ring reduce-scatter: in step t (0..n-2) rank r sends the partial sum of segment r-t-1 to the
// right and receives the partial sum of segment r-t-2 from the left, adding its own contribution;
// the last step receives segment r, which is then complete. Partial sums live in a scratch copy
// of the segment layout (each segment visited once, so no slot is reused while a send may still
// read it); the final segment arrives straight in recv unless recv overlaps send (in place), in
// which case it is finished in scratch and copied once every send is done.
#include <cstdint>
#include <cstring>

#include "detail/reduce.hpp"
#include "ucx/algorithms.hpp"
#include "ucx/ring.hpp"

namespace cohort::comm::ucx::detail {

void reduce_scatter_ring(Channel& ch, std::size_t chunk_bytes, const void* send, void* recv,
                         std::size_t count, DType dtype, ReduceOp op) {
  const int n = ch.size();
  const int r = ch.rank();
  const std::size_t es = dtype_size(dtype);
  const std::size_t seg_bytes = count * es;
  const char* const in = static_cast<const char*>(send);
  char* const out = static_cast<char*>(recv);
  if (n == 1) {
    std::memmove(out, in, seg_bytes);
    return;
  }
  const auto a = reinterpret_cast<std::uintptr_t>(in), b = reinterpret_cast<std::uintptr_t>(out);
  const bool overlap = b < a + static_cast<std::size_t>(n) * seg_bytes && a < b + seg_bytes;
  char* const partial = static_cast<char*>(ch.scratch(0, static_cast<std::size_t>(n) * seg_bytes));
  auto at = [&](int seg) { return static_cast<std::size_t>(seg) * seg_bytes; };

  RingPlan p = RingPlan::uniform(n, count, es, chunk_bytes);
  p.send_seg = [&](int t) { return ring_mod(r - t - 1, n); };
  p.recv_seg = [&](int t) { return ring_mod(r - t - 2, n); };
  p.send_base = [&](int t, int seg) -> const char* {
    return t == 0 ? in + at(seg) : partial + at(seg);
  };
  p.recv_base = [&](int t, int seg) -> char* {
    return t == n - 2 && !overlap ? out : partial + at(seg);
  };
  p.on_arrival = [&](int t, int seg, std::size_t first, std::size_t len) {
    char* acc = p.recv_base(t, seg) + first * es;
    common::reduce_into(acc, in + at(seg) + first * es, len, dtype, op);
    if (op == ReduceOp::avg && t == n - 2) common::finish_avg(acc, len, dtype, n);
  };
  run_ring(ch, p);  // returns once every send is done, so send may now be overwritten
  if (overlap) std::memcpy(out, partial + at(r), seg_bytes);
}

}  // namespace cohort::comm::ucx::detail
