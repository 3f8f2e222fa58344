// Pipelined chain broadcast: root -> root+1 -> ... -> root-1, the buffer cut into chunks that
// each rank forwards as soon as they arrive. Time ~ bytes / bandwidth + (n - 2) chunk times,
// independent of n for large buffers: the choice for large messages.
#include <algorithm>
#include <vector>

#include "ucx/algorithms.hpp"

namespace cohort::comm::ucx::detail {

void broadcast_chain(Channel& ch, std::size_t chunk_bytes, void* buf, std::size_t bytes, int root) {
  const int n = ch.size();
  const int v = (ch.rank() - root + n) % n;
  const int prev = (ch.rank() + n - 1) % n;
  const int next = (ch.rank() + 1) % n;
  std::size_t chunk = std::max<std::size_t>(1, chunk_bytes);
  if ((bytes + chunk - 1) / chunk >= Channel::kStepLimit)
    chunk = (bytes + Channel::kStepLimit - 2) / (Channel::kStepLimit - 1);
  const std::size_t chunks = (bytes + chunk - 1) / chunk;
  char* const p = static_cast<char*>(buf);
  auto len = [&](std::size_t c) { return std::min(chunk, bytes - c * chunk); };

  // Every chunk lands in its own place, so all receives can be posted at once.
  std::vector<Channel::Handle> in;
  if (v > 0) {
    in.reserve(chunks);
    for (std::size_t c = 0; c < chunks; ++c)
      in.push_back(ch.irecv(prev, p + c * chunk, len(c), static_cast<std::uint32_t>(c)));
  }
  for (std::size_t c = 0; c < chunks; ++c) {
    if (v > 0) ch.wait(in[c]);
    if (v < n - 1) ch.isend(next, p + c * chunk, len(c), static_cast<std::uint32_t>(c));
  }
  ch.wait_all();
}

}  // namespace cohort::comm::ucx::detail
