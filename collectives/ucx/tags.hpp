// The tag scheme of the UCX backend: every message of every op carries a 64-bit tag that names
// exactly one message, so no receive relies on UCX's matching order whatever the interleaving of
// collectives, point-to-point ops and control messages:
//   [63:62] kind: 0 collective, 1 point-to-point, 2 control
//   [61:46] source rank (UCP's tag_sender_mask)
//   collective: [45:34] op sequence number (mod 2^12)  [33:26] shape: a hash of count, dtype,
//               reduction and root  [25:23] op kind  [22:0] step within the op
//   p2p:        [45:22] user tag (< 2^24)              [21:0] message number for (peer, tag)
// Collectives run one at a time in issue order, so 12 bits of sequence number keep consecutive
// ones apart. Op kind and shape keep ranks that issued different collectives (a user error) from
// taking each other's data (a rendezvous receive would read the sender's buffer after the
// sender gave up on the op and returned it to the caller); the fingerprint each rank sends its
// successor (coll_channel.hpp) names the difference on both sides. The field widths are why
// ucx_communicator.cpp limits ranks to 2^16 and tags to 2^24, and why Channel limits steps to
// 2^23.
#pragma once

#include <cstdint>

#include "cohort/core/hash.hpp"
#include "ucx/op.hpp"

namespace cohort::comm::ucx::detail {

inline constexpr int kKindShift = 62;
inline constexpr int kSrcShift = 46;
inline constexpr int kSeqShift = 34;
inline constexpr int kOpKindShift = 23;
inline constexpr int kUserTagShift = 22;
inline constexpr std::uint64_t kCollective = 0, kPointToPoint = 1, kControl = 2;
inline constexpr std::uint64_t kKindMask = 3ull << kKindShift;
inline constexpr std::uint64_t kSrcMask = 0xffffull << kSrcShift;
inline constexpr std::uint64_t kExact = ~0ull;

inline constexpr int kShapeShift = 26;

// 8 bits of FNV-1a over what, besides the kind, must agree between ranks.
inline std::uint64_t shape_bits(const OpDesc& d) {
  const std::uint64_t fields[4] = {d.count, static_cast<std::uint64_t>(d.dtype),
                                   static_cast<std::uint64_t>(d.op),
                                   static_cast<std::uint64_t>(static_cast<std::uint32_t>(d.peer))};
  const std::uint64_t h = fnv1a(fields, sizeof(fields));
  return (h ^ (h >> 8) ^ (h >> 16) ^ (h >> 24)) & 0xff;
}

// A data message of collective `d` (its seq set) sent by `src`.
inline std::uint64_t collective_tag(const OpDesc& d, int src, std::uint32_t step) {
  return (kCollective << kKindShift) | (static_cast<std::uint64_t>(src) << kSrcShift) |
         ((d.seq & 0xfffull) << kSeqShift) | (shape_bits(d) << kShapeShift) |
         (static_cast<std::uint64_t>(d.kind) << kOpKindShift) | step;
}
// A collective's fingerprint (its OpDesc, sent to the next rank before any data): op kind field
// 7, which no OpKind uses, and no shape, so that ranks in different collectives still match each
// other's fingerprint and can report the difference.
inline constexpr std::uint64_t kFingerprintKind = 7;
inline std::uint64_t fingerprint_tag(std::uint64_t seq, int src) {
  return (kCollective << kKindShift) | (static_cast<std::uint64_t>(src) << kSrcShift) |
         ((seq & 0xfffull) << kSeqShift) | (kFingerprintKind << kOpKindShift);
}
inline std::uint64_t p2p_tag(int src, int tag, std::uint32_t n) {
  return (kPointToPoint << kKindShift) | (static_cast<std::uint64_t>(src) << kSrcShift) |
         (static_cast<std::uint64_t>(tag) << kUserTagShift) | (n & 0x3fffffu);
}
inline std::uint64_t control_tag(int src) {
  return (kControl << kKindShift) | (static_cast<std::uint64_t>(src) << kSrcShift);
}

}  // namespace cohort::comm::ucx::detail
