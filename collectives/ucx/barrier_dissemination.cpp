// Dissemination barrier: in round k rank r signals r + 2^k and waits for r - 2^k. After
// ceil(log2 n) rounds every rank has (transitively) heard from every other, so none leaves before
// all have entered. Works for any n, no fold needed.
#include "ucx/algorithms.hpp"

namespace cohort::comm::ucx::detail {

void barrier_dissemination(Channel& ch) {
  const int n = ch.size();
  const int r = ch.rank();
  static const char token = 0;  // zero-byte messages still need a valid address
  char sink = 0;
  std::uint32_t step = 0;
  for (int k = 1; k < n; k <<= 1, ++step) {
    const auto in = ch.irecv((r - k + n) % n, &sink, 0, step);
    const auto out = ch.isend((r + k) % n, &token, 0, step);
    ch.wait(in);
    ch.wait(out);
  }
}

}  // namespace cohort::comm::ucx::detail
