// What one op is, as every rank should see it: kind, element type, count, reduction, root or
// peer, tag and its sequence number. One description shared by every backend (shm, ucx, self),
// so that their error messages name ops alike and so that a rank can compare its view of an op
// with a peer's.
//
// Why a plain struct of fixed-width fields with explicit padding: the description is meant to
// travel between ranks as raw bytes (a fingerprint of the collective each rank is in, to catch
// ranks that issued different collectives). It is trivially copyable, has no pointers and no
// implicit padding, and a value-initialized or default-constructed one has every byte defined,
// so memcpy/memcmp of two descriptions compare what they describe. Buffers and timeouts are not
// part of it: they are each rank's own business (backends keep them next to it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "cohort/collectives/communicator.hpp"

namespace cohort::comm::detail {

// The values are part of the wire: the ucx backend puts the kind in its collective tags (3 bits)
// and in its status replies. Append only.
enum class OpKind : std::uint8_t {
  allreduce, broadcast, allgather, reduce_scatter, barrier, send, recv
};

const char* op_kind_name(OpKind kind);  // "allreduce", "reduce_scatter", ...
inline bool is_collective(OpKind kind) { return kind != OpKind::send && kind != OpKind::recv; }

struct OpDesc {
  std::uint64_t seq = 0;    // the collective's number in issue order (1, 2, ...); 0: none yet/p2p
  std::uint64_t count = 0;  // elements, as the caller gave it
  std::int32_t peer = -1;   // broadcast: the root; send/recv: the other rank; else -1
  std::int32_t tag = 0;     // send/recv: the message's; a collective: OuterCollective's, or 0
  ReduceOp op = ReduceOp::sum;  // allreduce, reduce_scatter
  OpKind kind = OpKind::barrier;
  DType dtype = DType::f32;
  std::uint8_t reserved[2] = {};  // explicit padding, always zero

  bool collective() const { return is_collective(kind); }

  // "allreduce #2 (1000 x f32, sum)", "broadcast #3 (16 x u8, root 1)", "barrier #4",
  // "recv (16 x u8 from rank 1, tag 3)"; " #seq" only when seq > 0.
  std::string str() const;
};

// Whether two ranks' descriptions of their collective #seq agree (every byte: kind, count,
// dtype, reduction, root and seq).
bool same_collective(const OpDesc& a, const OpDesc& b);

// The error every backend raises when they do not, worded the same on both ranks (lower rank
// first): "collective mismatch: rank 0 issued allreduce #2 (1000 x f32, sum) where rank 1
// issued broadcast #2 (1000 x f32, root 0); every rank must issue the same collectives in the
// same order, with the same count, dtype, reduction and root".
std::string mismatch_message(int rank_a, const OpDesc& a, int rank_b, const OpDesc& b);

// A communicator built of others (hier) runs each of its collectives as stages: collectives on
// inner communicators, issued by the thread that runs the outer one. While an OuterCollective is
// alive on a thread, every collective that thread issues carries a 32-bit fingerprint of the
// outer collective's description in its `tag` (op_desc, and ucx's own descriptions, read it), so
// the stages' own mismatch checks, which compare every byte of the description, also catch ranks
// whose outer collectives differ where their stages agree: avg against sum (both stages sum),
// reduce_scatter against an all-reduce of the whole, two roots on one host. This replaces a
// separate all-gather of descriptions before every collective, which cost hier's small
// all-reduce 3.6x its time. A fingerprint can only say that two outer collectives differ, not
// what the other one was: the composing communicator names both sides itself. Scopes nest (the
// innermost wins) and are per thread. Point-to-point ops keep their own tag.
class OuterCollective {
 public:
  explicit OuterCollective(const OpDesc& outer);
  ~OuterCollective();
  OuterCollective(const OuterCollective&) = delete;
  OuterCollective& operator=(const OuterCollective&) = delete;

 private:
  std::int32_t saved_;
};

// The fingerprint of the innermost OuterCollective on this thread; 0 outside any.
std::int32_t outer_collective_tag();

// A description with the fields an op has; the others keep their defaults. A collective's tag is
// outer_collective_tag() (0 outside a composing communicator's stage).
inline OpDesc op_desc(OpKind kind, std::uint64_t count, DType dtype, ReduceOp op = ReduceOp::sum,
                      int peer = -1, int tag = 0) {
  OpDesc d;
  d.kind = kind;
  d.count = count;
  d.dtype = dtype;
  d.op = op;
  d.peer = peer;
  d.tag = is_collective(kind) ? outer_collective_tag() : tag;
  return d;
}

static_assert(std::is_trivially_copyable_v<OpDesc>, "OpDesc is sent as bytes");
static_assert(std::is_standard_layout_v<OpDesc>, "OpDesc is sent as bytes");
static_assert(sizeof(ReduceOp) == 4 && sizeof(DType) == 1, "OpDesc's fixed layout");
static_assert(sizeof(OpDesc) == 32, "OpDesc has a fixed 32-byte layout with no implicit padding");

}  // namespace cohort::comm::detail
