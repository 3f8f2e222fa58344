// Ring allgather: this rank's block goes into its place in recv, then in step t (0..n-2) rank r
// sends block r-t to the right and receives block r-t-1 from the left straight into its place.
#include <cstring>

#include "ucx/algorithms.hpp"
#include "ucx/ring.hpp"

namespace cohort::comm::ucx::detail {

void allgather_ring(Channel& ch, std::size_t chunk_bytes, const void* send, void* recv,
                    std::size_t count, DType dtype) {
  const int n = ch.size();
  const int r = ch.rank();
  const std::size_t es = dtype_size(dtype);
  char* const out = static_cast<char*>(recv);
  char* const own = out + static_cast<std::size_t>(r) * count * es;
  if (send != own) std::memmove(own, send, count * es);
  if (n == 1) return;

  RingPlan p = RingPlan::uniform(n, count, es, chunk_bytes);
  auto at = [&](int seg) { return out + p.seg_offset[static_cast<std::size_t>(seg)] * es; };
  p.send_seg = [&](int t) { return ring_mod(r - t, n); };
  p.recv_seg = [&](int t) { return ring_mod(r - t - 1, n); };
  p.send_base = [&](int, int seg) -> const char* { return at(seg); };
  p.recv_base = [&](int, int seg) -> char* { return at(seg); };
  run_ring(ch, p);
}

}  // namespace cohort::comm::ucx::detail
