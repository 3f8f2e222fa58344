// The TCP store's frame encoding and blocking-with-grace sends (the format is in tcp_wire.hpp).
// Byte order is spelled out byte by byte so that the encoding does not depend on the host's.
#include "store/tcp_wire.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

namespace cohort::comm::detail::wire {

namespace {
// The low `k` bytes of `v`, least significant first.
void put_le(Bytes& b, std::uint64_t v, int k) {
  for (int i = 0; i < k; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
}  // namespace

void put_u32(Bytes& b, std::uint32_t v) { put_le(b, v, 4); }
void put_i64(Bytes& b, std::int64_t v) { put_le(b, static_cast<std::uint64_t>(v), 8); }
void put_bytes(Bytes& b, const std::uint8_t* p, std::size_t n) {
  put_u32(b, static_cast<std::uint32_t>(n));
  b.insert(b.end(), p, p + n);
}
void put_str(Bytes& b, const std::string& s) {
  put_bytes(b, reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
}

std::uint8_t Reader::u8() {
  if (!need(1)) return 0;
  --n;
  return *p++;
}
std::uint64_t Reader::le(std::size_t k) {
  if (!need(k)) return 0;
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < k; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  p += k;
  n -= k;
  return v;
}
std::uint32_t Reader::u32() { return static_cast<std::uint32_t>(le(4)); }
std::int64_t Reader::i64() { return static_cast<std::int64_t>(le(8)); }
Bytes Reader::bytes() {
  const std::uint32_t k = u32();
  if (!need(k)) return {};
  Bytes v(p, p + k);
  p += k;
  n -= k;
  return v;
}
std::string Reader::str() {
  const Bytes b = bytes();
  return std::string(b.begin(), b.end());
}
std::vector<std::string> Reader::strs() {
  const std::uint32_t k = u32();
  std::vector<std::string> v;
  for (std::uint32_t i = 0; i < k && ok; ++i) v.push_back(str());
  return v;
}

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

bool send_all(int fd, const std::uint8_t* p, std::size_t n, std::chrono::milliseconds grace) {
  const auto deadline = Clock::now() + grace;
  while (n) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (Clock::now() >= deadline) return false;
      pollfd pfd{fd, POLLOUT, 0};
      ::poll(&pfd, 1, 100);
      continue;
    }
    if (k <= 0) return false;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

bool send_frame(int fd, const Bytes& payload, std::chrono::milliseconds grace) {
  Bytes frame;
  frame.reserve(payload.size() + 4);
  put_u32(frame, static_cast<std::uint32_t>(payload.size()));
  frame.insert(frame.end(), payload.begin(), payload.end());
  return send_all(fd, frame.data(), frame.size(), grace);
}

}  // namespace cohort::comm::detail::wire
