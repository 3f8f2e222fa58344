// The pipelined ring schedule (ring.hpp): the plans' layouts (RingPlan::uniform, even), chunk
// sizing within the tag's step limit, and run_ring, which posts, waits and forwards every chunk.
#include "ucx/ring.hpp"

#include <algorithm>

namespace cohort::comm::ucx::detail {

void split_even(std::size_t count, int parts, std::vector<std::size_t>* offset,
                std::vector<std::size_t>* length) {
  const std::size_t p = static_cast<std::size_t>(parts);
  offset->assign(p, 0);
  length->assign(p, 0);
  std::size_t at = 0;
  for (std::size_t i = 0; i < p; ++i) {
    (*offset)[i] = at;
    (*length)[i] = count / p + (i < count % p ? 1 : 0);
    at += (*length)[i];
  }
}

std::size_t ring_chunk_elems(std::size_t chunk_bytes, std::size_t elem_size,
                             std::size_t max_seg_elems, int steps) {
  std::size_t ce = std::max<std::size_t>(1, chunk_bytes / elem_size);
  if (steps <= 0 || max_seg_elems == 0) return ce;
  // The tag carries step * chunks + chunk below Channel::kStepLimit.
  const std::size_t max_chunks = (Channel::kStepLimit - 1) / static_cast<std::size_t>(steps);
  const std::size_t chunks = (max_seg_elems + ce - 1) / ce;
  if (chunks > max_chunks) ce = (max_seg_elems + max_chunks - 1) / max_chunks;
  return ce;
}

RingPlan RingPlan::uniform(int n, std::size_t count, std::size_t elem_size,
                           std::size_t chunk_bytes) {
  RingPlan p;
  p.steps = n - 1;
  p.elem_size = elem_size;
  p.seg_offset.resize(static_cast<std::size_t>(n));
  p.seg_count.assign(static_cast<std::size_t>(n), count);
  for (int b = 0; b < n; ++b)
    p.seg_offset[static_cast<std::size_t>(b)] = static_cast<std::size_t>(b) * count;
  p.chunk_elems = ring_chunk_elems(chunk_bytes, elem_size, count, p.steps);
  return p;
}

RingPlan RingPlan::even(int n, std::size_t count, std::size_t elem_size, std::size_t chunk_bytes,
                        int steps) {
  RingPlan p;
  p.steps = steps;
  p.elem_size = elem_size;
  split_even(count, n, &p.seg_offset, &p.seg_count);
  // The first segment is the largest (split_even gives the remainder to the first ones).
  p.chunk_elems = ring_chunk_elems(chunk_bytes, elem_size, p.seg_count[0], p.steps);
  return p;
}

void run_ring(Channel& ch, const RingPlan& p) {
  if (p.steps <= 0) return;
  const int n = ch.size();
  const int right = (ch.rank() + 1) % n;
  const int left = (ch.rank() + n - 1) % n;
  const std::size_t ce = p.chunk_elems;
  const std::size_t es = p.elem_size;
  const std::size_t max_seg = *std::max_element(p.seg_count.begin(), p.seg_count.end());
  const std::size_t chunks = std::max<std::size_t>(1, (max_seg + ce - 1) / ce);

  // Segments differ in length, so a chunk index may be empty in one segment and not in another;
  // sender and receiver compute the same lengths and both skip empty chunks.
  auto chunk_len = [&](int seg, std::size_t c) -> std::size_t {
    const std::size_t first = c * ce;
    const std::size_t cnt = p.seg_count[static_cast<std::size_t>(seg)];
    return first >= cnt ? 0 : std::min(ce, cnt - first);
  };
  auto step_tag = [&](int t, std::size_t c) {
    return static_cast<std::uint32_t>(static_cast<std::size_t>(t) * chunks + c);
  };
  constexpr Channel::Handle kNone = ~Channel::Handle{0};
  std::vector<Channel::Handle> incoming(chunks, kNone);
  auto post_recv = [&](int t, std::size_t c) {
    const int seg = p.recv_seg(t);
    const std::size_t len = chunk_len(seg, c);
    incoming[c] = len == 0
                      ? kNone
                      : ch.irecv(left, p.recv_base(t, seg) + c * ce * es, len * es, step_tag(t, c));
  };
  auto post_send = [&](int t, std::size_t c) {
    const int seg = p.send_seg(t);
    const std::size_t len = chunk_len(seg, c);
    if (len != 0) ch.isend(right, p.send_base(t, seg) + c * ce * es, len * es, step_tag(t, c));
  };

  for (std::size_t c = 0; c < chunks; ++c) post_recv(0, c);
  for (std::size_t c = 0; c < chunks; ++c) post_send(0, c);
  for (int t = 0; t < p.steps; ++t) {
    for (std::size_t c = 0; c < chunks; ++c) {
      if (incoming[c] != kNone) {
        ch.wait(incoming[c]);
        const int seg = p.recv_seg(t);
        if (p.on_arrival) p.on_arrival(t, seg, c * ce, chunk_len(seg, c));
      }
      if (t + 1 < p.steps) {
        post_recv(t + 1, c);
        post_send(t + 1, c);
      }
    }
  }
  ch.wait_all();
}

}  // namespace cohort::comm::ucx::detail
