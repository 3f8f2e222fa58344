// Binomial-tree broadcast: with ranks renumbered so that the root is 0, rank v receives from
// v - 2^k (2^k its lowest set bit) and then sends to v + 2^j for every 2^j < 2^k. ceil(log2 n)
// latencies, the whole buffer per message: the choice for small messages.
#include "ucx/algorithms.hpp"

namespace cohort::comm::ucx::detail {

void broadcast_binomial(Channel& ch, void* buf, std::size_t bytes, int root) {
  const int n = ch.size();
  const int v = (ch.rank() - root + n) % n;
  auto real = [&](int virt) { return (virt + root) % n; };
  int mask = 1;
  while (mask < n) {
    if (v & mask) {
      ch.wait(ch.irecv(real(v - mask), buf, bytes, 0));
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (v + mask < n) ch.isend(real(v + mask), buf, bytes, 0);
  ch.wait_all();
}

}  // namespace cohort::comm::ucx::detail
