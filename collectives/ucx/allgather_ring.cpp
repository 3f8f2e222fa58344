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
  auto mod = [n](int x) { return ((x % n) + n) % n; };

  RingPlan p;
  p.steps = n - 1;
  p.elem_size = es;
  p.seg_offset.resize(static_cast<std::size_t>(n));
  p.seg_count.assign(static_cast<std::size_t>(n), count);
  for (int b = 0; b < n; ++b)
    p.seg_offset[static_cast<std::size_t>(b)] = static_cast<std::size_t>(b) * count;
  p.chunk_elems = ring_chunk_elems(chunk_bytes, es, count, p.steps);
  auto at = [&](int seg) { return out + p.seg_offset[static_cast<std::size_t>(seg)] * es; };
  p.send_seg = [&](int t) { return mod(r - t); };
  p.recv_seg = [&](int t) { return mod(r - t - 1); };
  p.send_base = [&](int, int seg) -> const char* { return at(seg); };
  p.recv_base = [&](int, int seg) -> char* { return at(seg); };
  run_ring(ch, p);
}

}  // namespace cohort::comm::ucx::detail
