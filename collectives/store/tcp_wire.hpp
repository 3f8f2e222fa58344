// The TCP store's wire encoding, shared by its server (tcp_store_server.cpp) and its client
// (tcp_store_client.cpp), so that both read one definition of every frame and constant.
//
// Wire format: every message is a frame `u32 length | payload` (little endian). Requests start
// with a command byte; strings are `u32 length | bytes`, integers 8 bytes. The server answers each
// request with one frame whose first byte is a status. A connection opens with a hello frame
// (kHello, kMagic, kProtocol, job token) before anything else.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cohort::comm::detail::wire {

using Clock = std::chrono::steady_clock;
using Bytes = std::vector<std::uint8_t>;

enum Cmd : std::uint8_t { kSet = 1, kGet = 2, kAdd = 3, kCheck = 4, kWait = 5, kHello = 6 };
enum Status : std::uint8_t { kOk = 0, kMissing = 1, kBadValue = 2, kDenied = 3 };
constexpr std::uint32_t kMagic = 0x53484f43;  // "COHS"
constexpr std::uint32_t kProtocol = 2;        // 2: hello with job token
constexpr std::uint32_t kMaxFrame = 64u << 20;     // keys and values are addresses and counters
constexpr std::uint32_t kMaxHelloFrame = 4096;     // before the hello: magic, version, token

void put_u32(Bytes& b, std::uint32_t v);
void put_i64(Bytes& b, std::int64_t v);
void put_bytes(Bytes& b, const std::uint8_t* p, std::size_t n);  // u32 length, then the bytes
void put_str(Bytes& b, const std::string& s);

// Reads fields from a payload; `ok` turns false on a short or malformed payload (and every later
// read then returns an empty value), so a caller checks `ok` once after reading a whole request.
struct Reader {
  const std::uint8_t* p;
  std::size_t n;
  bool ok = true;
  bool need(std::size_t k) {
    if (n < k) ok = false;
    return ok;
  }
  std::uint8_t u8();
  std::uint32_t u32();
  std::int64_t i64();
  Bytes bytes();
  std::string str();
  std::vector<std::string> strs();  // u32 count, then that many strings

 private:
  std::uint64_t le(std::size_t k);  // k bytes, least significant first
};

void set_nodelay(int fd);

// Sends a whole buffer. False when the peer is gone, or when it has not taken the bytes within
// `grace` (a client that does not read must not block the server).
bool send_all(int fd, const std::uint8_t* p, std::size_t n,
              std::chrono::milliseconds grace = std::chrono::hours(24));

// Sends `payload` as one frame (its length first); false as send_all.
bool send_frame(int fd, const Bytes& payload,
                std::chrono::milliseconds grace = std::chrono::hours(24));

}  // namespace cohort::comm::detail::wire
