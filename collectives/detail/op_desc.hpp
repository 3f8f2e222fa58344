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
  std::int32_t tag = 0;     // send/recv only
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

// A description with the fields an op has; the others keep their defaults.
inline OpDesc op_desc(OpKind kind, std::uint64_t count, DType dtype, ReduceOp op = ReduceOp::sum,
                      int peer = -1, int tag = 0) {
  OpDesc d;
  d.kind = kind;
  d.count = count;
  d.dtype = dtype;
  d.op = op;
  d.peer = peer;
  d.tag = tag;
  return d;
}

static_assert(std::is_trivially_copyable_v<OpDesc>, "OpDesc is sent as bytes");
static_assert(std::is_standard_layout_v<OpDesc>, "OpDesc is sent as bytes");
static_assert(sizeof(ReduceOp) == 4 && sizeof(DType) == 1, "OpDesc's fixed layout");
static_assert(sizeof(OpDesc) == 32, "OpDesc has a fixed 32-byte layout with no implicit padding");

}  // namespace cohort::comm::detail
