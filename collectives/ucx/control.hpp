// The control messages of the UCX backend: a fixed-size struct sent with control tags (tags.hpp)
// between progress threads, which always answer them, even when idle. They exist for the timeout
// report (a status query: which collective has each rank started?), for failure propagation
// (kAbort) and for the keep-alive that notices dead peers (kPing, kPong). Sent as raw bytes between processes of the same build, hence the fixed-width fields.
#pragma once

#include <cstdint>

namespace cohort::comm::ucx::detail {

// kAbort: the sender's communicator failed (text says why); the receiver fails its own at once
// instead of hanging in its next op until that op's own timeout.
// kPing / kPong: the keep-alive of liveness.cpp; a pong carries the same status as a reply.
enum : std::uint32_t { kStatusQuery = 1, kStatusReply = 2, kAbort = 3, kPing = 4, kPong = 5 };
struct ControlMsg {
  std::uint32_t type = 0;
  std::int32_t src = -1;
  std::uint64_t query = 0;      // echoed in the reply
  std::uint64_t started = 0;    // collectives the replier has started
  std::uint32_t busy = 0;       // 1 while a collective runs on its progress thread
  std::uint32_t failed = 0;     // 1 once its communicator failed
  std::uint32_t last_kind = 0;  // its current or last collective: OpKind, count, dtype
  std::uint32_t last_dtype = 0;
  std::uint64_t last_count = 0;
  char text[1024] = {};  // reply: that collective, described; abort: why
};

}  // namespace cohort::comm::ucx::detail
