// A pipelined ring schedule, shared by the ring allreduce, allgather and reduce-scatter.
//
// The data is cut into segments; in step t every rank sends segment send_seg(t) to its right
// neighbour and receives segment recv_seg(t) from its left one. Each segment is further cut into
// chunks of at most chunk_elems elements, each its own message, so that a chunk that arrived in
// step t is reduced (on_arrival) and forwarded in step t+1 while later chunks of step t are still
// on the wire. Every schedule we build forwards what it just received:
// send_seg(t + 1) == recv_seg(t), and send_base(t + 1, s) points at what recv_base(t, s) (after
// on_arrival) left there. A chunk's receive for step t+1 is posted right after its step-t chunk
// was handled, so recv_base may reuse one temporary buffer for every step.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "ucx/channel.hpp"

namespace cohort::comm::ucx::detail {

struct RingPlan {
  int steps = 0;
  std::size_t elem_size = 0;
  std::size_t chunk_elems = 0;                     // > 0
  std::vector<std::size_t> seg_offset, seg_count;  // per segment, in elements
  std::function<int(int step)> send_seg, recv_seg;
  // Address of element 0 of segment `seg` as sent / received in `step`.
  std::function<const char*(int step, int seg)> send_base;
  std::function<char*(int step, int seg)> recv_base;
  // Called once per received chunk: elements [first, first + n) of segment `seg` arrived at
  // recv_base(step, seg) + first * elem_size. May be empty.
  std::function<void(int step, int seg, std::size_t first, std::size_t n)> on_arrival;

  // The layouts the ring algorithms start from; the caller then sets the schedule (send_seg,
  // recv_seg, send_base, recv_base, on_arrival). chunk_elems comes from `chunk_bytes` through
  // ring_chunk_elems, so steps x chunks always fits the tag.
  //  uniform: n segments of `count` elements each, back to back (segment b at b * count), over
  //           n - 1 steps (allgather and reduce-scatter: one block per rank).
  //  even:    `count` elements split into n segments whose sizes differ by at most one
  //           (split_even), over `steps` steps (allreduce: 2 (n - 1)).
  static RingPlan uniform(int n, std::size_t count, std::size_t elem_size,
                          std::size_t chunk_bytes);
  static RingPlan even(int n, std::size_t count, std::size_t elem_size, std::size_t chunk_bytes,
                       int steps);
};

// x modulo n in [0, n), for ring positions such as rank - step.
inline int ring_mod(int x, int n) { return ((x % n) + n) % n; }

// Splits `count` elements into `parts` segments whose sizes differ by at most one.
void split_even(std::size_t count, int parts, std::vector<std::size_t>* offset,
                std::vector<std::size_t>* length);

// Elements per chunk for `chunk_bytes`, enlarged if needed so that steps * chunks fits the tag
// (Channel::kStepLimit).
std::size_t ring_chunk_elems(std::size_t chunk_bytes, std::size_t elem_size,
                             std::size_t max_seg_elems, int steps);

// Runs the plan to completion (every send done). Throws what Channel::wait throws.
void run_ring(Channel& ch, const RingPlan& plan);

}  // namespace cohort::comm::ucx::detail
