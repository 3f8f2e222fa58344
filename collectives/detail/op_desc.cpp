// OpDesc's wording (op kind names, str()) and the same-collective comparison every backend's
// mismatch check uses, so that one op reads the same in every backend's messages.
#include "detail/op_desc.hpp"

#include <cstdio>
#include <cstring>

namespace cohort::comm::detail {
namespace {
thread_local std::int32_t t_outer_tag = 0;
}  // namespace

// FNV-1a over the outer description's 32 bytes, never 0 (0 means "no outer collective").
OuterCollective::OuterCollective(const OpDesc& outer) : saved_(t_outer_tag) {
  unsigned char bytes[sizeof(OpDesc)];
  std::memcpy(bytes, &outer, sizeof bytes);
  std::uint32_t h = 2166136261u;
  for (unsigned char b : bytes) h = (h ^ b) * 16777619u;
  if (h == 0) h = 1;
  std::int32_t tag;
  std::memcpy(&tag, &h, sizeof tag);
  t_outer_tag = tag;
}

OuterCollective::~OuterCollective() { t_outer_tag = saved_; }

std::int32_t outer_collective_tag() { return t_outer_tag; }

const char* op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::allreduce: return "allreduce";
    case OpKind::broadcast: return "broadcast";
    case OpKind::allgather: return "allgather";
    case OpKind::reduce_scatter: return "reduce_scatter";
    case OpKind::barrier: return "barrier";
    case OpKind::send: return "send";
    case OpKind::recv: return "recv";
  }
  return "?";
}

std::string OpDesc::str() const {
  std::string s = op_kind_name(kind);
  if (seq > 0) s += " #" + std::to_string(seq);
  if (kind == OpKind::barrier) {
    if (tag == 0) return s;
    char fp[40];
    std::snprintf(fp, sizeof fp, " (stage of collective %08x)", static_cast<std::uint32_t>(tag));
    return s + fp;
  }
  s += " (" + std::to_string(count) + " x " + dtype_name(dtype);
  switch (kind) {
    case OpKind::allreduce:
    case OpKind::reduce_scatter:
      s += std::string(", ") + reduce_op_name(op);
      break;
    case OpKind::broadcast:
      s += ", root " + std::to_string(peer);
      break;
    case OpKind::send:
      s += " to rank " + std::to_string(peer) + ", tag " + std::to_string(tag);
      break;
    case OpKind::recv:
      s += " from rank " + std::to_string(peer) + ", tag " + std::to_string(tag);
      break;
    default:
      break;
  }
  if (is_collective(kind) && tag != 0) {
    char fp[32];
    std::snprintf(fp, sizeof fp, ", stage of collective %08x", static_cast<std::uint32_t>(tag));
    s += fp;
  }
  return s + ")";
}

bool same_collective(const OpDesc& a, const OpDesc& b) {
  return std::memcmp(&a, &b, sizeof(OpDesc)) == 0;
}

std::string mismatch_message(int rank_a, const OpDesc& a, int rank_b, const OpDesc& b) {
  if (rank_b < rank_a) return mismatch_message(rank_b, b, rank_a, a);
  return "collective mismatch: rank " + std::to_string(rank_a) + " issued " + a.str() +
         " where rank " + std::to_string(rank_b) + " issued " + b.str() +
         "; every rank must issue the same collectives in the same order, with the same count, "
         "dtype, reduction and root";
}

}  // namespace cohort::comm::detail
