// All-reduce in one step, for buffers up to Params::direct_bytes: every rank copies its input to
// its slot, waits for every peer's, and reduces all slots in rank order into its output (so every
// rank computes bit-identical results). One flag exchange in all: this is the latency path (the
// 8-byte all-reduce is ~1.4 us), so it is a two-state machine written out by hand rather than
// run by PipelinedOp. With nsteps 0 (one rank, or count 0) it is a local copy.
#include <cstring>

#include "detail/reduce.hpp"
#include "shm/algorithms.hpp"
#include "shm/op_buffers.hpp"

namespace cohort::comm::shm {
namespace {

class AllreduceDirect final : public CollOp, private OpBuffers {
 public:
  AllreduceDirect(std::shared_ptr<Engine> e, const void* send, void* recv, std::size_t count,
                  DType dtype, ReduceOp op, Timeout t, std::uint64_t nsteps)
      : CollOp(std::move(e), detail::op_desc(OpKind::allreduce, count, dtype, op), t, nsteps),
        OpBuffers(desc, send, recv) {}

  bool advance() override {
    if (nsteps == 0) {  // one rank, or nothing to do
      if (count_ && in_ != out_) std::memcpy(out_, in_, count_ * esz_);
      return true;
    }
    clear_stall();
    if (!posted_) {
      if (!eng.slot_free(t0)) return stalled(Flag::consumed, t0 - eng.params.nslots), false;
      std::memcpy(eng.seg().slot(eng.rank, t0), in_, count_ * esz_);
      eng.publish(Flag::posted, t0);
      posted_ = true;
    }
    if (!eng.reached(Flag::posted, t0)) return stalled(Flag::posted, t0), false;
    const void** srcs = eng.srcs();
    for (int q = 0; q < eng.world; ++q) srcs[q] = q == eng.rank ? in_ : eng.seg().slot(q, t0);
    detail::reduce_sources(out_, nullptr, srcs, eng.world, count_, dtype_, op_, eng.world);
    eng.publish(Flag::consumed, t0);
    return true;
  }

 private:
  bool posted_ = false;  // my input is in my slot
};

}  // namespace

std::shared_ptr<CollOp> make_allreduce_direct(std::shared_ptr<Engine> e, const void* send,
                                              void* recv, std::size_t count, DType dtype,
                                              ReduceOp op, Timeout t, std::uint64_t nsteps) {
  return std::make_shared<AllreduceDirect>(std::move(e), send, recv, count, dtype, op, t, nsteps);
}

}  // namespace cohort::comm::shm
