// What every shm collective that moves data keeps of its arguments: its input and output, element
// count, type and reduction, read once from the op's OpDesc. A base of each algorithm's op class
// (next to CollOp or PipelinedOp), so that the algorithms share one constructor for this state
// and one rule for when an output is written with non-temporal stores; an algorithm file then
// declares only what is its own.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cohort/core/dtype.hpp"
#include "detail/op_desc.hpp"
#include "shm/segment.hpp"

namespace cohort::comm::shm {

struct OpBuffers {
  // `send` and `recv` as the caller gave them (broadcast: its one buffer as both).
  OpBuffers(const detail::OpDesc& desc, const void* send, void* recv)
      : in_(static_cast<const char*>(send)),
        out_(static_cast<char*>(recv)),
        count_(desc.count),
        dtype_(desc.dtype),
        op_(desc.op),
        esz_(dtype_size(desc.dtype)) {}

  // Whether an output of `elems` elements is large enough to be written with non-temporal stores
  // (Params::nontemporal_bytes): it would not fit the caches anyway.
  bool nontemporal_output(const Params& p, std::uint64_t elems) const {
    return elems * esz_ >= p.nontemporal_bytes;
  }

  const char* const in_;
  char* const out_;
  const std::uint64_t count_;
  const DType dtype_;
  const ReduceOp op_;  // allreduce, reduce_scatter; sum otherwise
  const std::size_t esz_;
};

}  // namespace cohort::comm::shm
