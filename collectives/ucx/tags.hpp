// The tag scheme of the UCX backend: every message of every op carries a 64-bit tag that names
// exactly one message, so no receive relies on UCX's matching order whatever the interleaving of
// collectives, point-to-point ops and control messages:
//   [63:62] kind: 0 collective, 1 point-to-point, 2 control
//   [61:46] source rank (UCP's tag_sender_mask)
//   collective: [45:26] op sequence number (mod 2^20)  [25:23] op kind  [22:0] step within the op
//   p2p:        [45:22] user tag (< 2^24)              [21:0] message number for (peer, tag)
// The op kind keeps ranks that issued different collectives (a user error) from taking each
// other's messages: they wait, time out, and the report says which rank is in which op. The field
// widths are why ucx_communicator.cpp limits ranks to 2^16 and tags to 2^24, and why Channel
// limits steps to 2^23.
#pragma once

#include <cstdint>

#include "ucx/op.hpp"

namespace cohort::comm::ucx::detail {

inline constexpr int kKindShift = 62;
inline constexpr int kSrcShift = 46;
inline constexpr int kSeqShift = 26;
inline constexpr int kOpKindShift = 23;
inline constexpr int kUserTagShift = 22;
inline constexpr std::uint64_t kCollective = 0, kPointToPoint = 1, kControl = 2;
inline constexpr std::uint64_t kKindMask = 3ull << kKindShift;
inline constexpr std::uint64_t kSrcMask = 0xffffull << kSrcShift;
inline constexpr std::uint64_t kExact = ~0ull;

inline std::uint64_t collective_tag(std::uint64_t seq, OpKind op, int src, std::uint32_t step) {
  return (kCollective << kKindShift) | (static_cast<std::uint64_t>(src) << kSrcShift) |
         ((seq & 0xfffffull) << kSeqShift) | (static_cast<std::uint64_t>(op) << kOpKindShift) |
         step;
}
inline std::uint64_t p2p_tag(int src, int tag, std::uint32_t n) {
  return (kPointToPoint << kKindShift) | (static_cast<std::uint64_t>(src) << kSrcShift) |
         (static_cast<std::uint64_t>(tag) << kUserTagShift) | (n & 0x3fffffu);
}
inline std::uint64_t control_tag(int src) {
  return (kControl << kKindShift) | (static_cast<std::uint64_t>(src) << kSrcShift);
}

}  // namespace cohort::comm::ucx::detail
