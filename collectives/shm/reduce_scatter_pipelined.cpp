// Reduce-scatter through the slots: step k covers elements [k * chunk, ...) of every rank's
// block, chunk sized so that n slices fit one slot, in the two stages of BlockwiseOp
// (pipeline.hpp):
//   post     copy into my slot, at slice q, my part of rank q's block              -> posted
//   consume  reduce my block (rank order) from my input and the others' slots
//            straight into my output                                               -> consumed
#include <cstring>

#include "detail/reduce.hpp"
#include "shm/algorithms.hpp"
#include "shm/pipeline.hpp"

namespace cohort::comm::shm {
namespace {

using std::uint64_t;

class ReduceScatter final : public BlockwiseOp {
 public:
  ReduceScatter(std::shared_ptr<Engine> e, const void* send, void* recv, std::size_t count,
                DType dtype, ReduceOp op, Timeout t, uint64_t chunk)
      : BlockwiseOp(std::move(e), detail::op_desc(OpKind::reduce_scatter, count, dtype, op), t,
                    send, recv, chunk) {}

 private:
  // My slot holds, at slice q, my part of rank q's block for this step.
  void post(uint64_t k) override {
    char* slot = eng.seg().slot(eng.rank, t0 + k);
    for (int q = 0; q < eng.world; ++q) {
      if (q == eng.rank) continue;
      std::memcpy(slot + static_cast<uint64_t>(q) * len(k) * esz_,
                  in_ + (static_cast<uint64_t>(q) * count_ + base(k)) * esz_, len(k) * esz_);
    }
  }
  void consume(uint64_t k) override {
    const int me = eng.rank;
    const void** srcs = eng.srcs();
    for (int q = 0; q < eng.world; ++q)
      srcs[q] = q == me ? static_cast<const void*>(
                              in_ + (static_cast<uint64_t>(me) * count_ + base(k)) * esz_)
                        : eng.seg().slot(q, t0 + k) + static_cast<uint64_t>(me) * len(k) * esz_;
    detail::reduce_sources(out_ + base(k) * esz_, nullptr, srcs, eng.world, len(k), dtype_, op_,
                           eng.world);
  }
};

}  // namespace

std::shared_ptr<CollOp> make_reduce_scatter(std::shared_ptr<Engine> e, const void* send,
                                            void* recv, std::size_t count, DType dtype,
                                            ReduceOp op, Timeout t) {
  // n slices of a step fit one slot.
  const uint64_t chunk = slice_capacity(e->params, e->world, dtype_size(dtype));
  return std::make_shared<ReduceScatter>(std::move(e), send, recv, count, dtype, op, t, chunk);
}

}  // namespace cohort::comm::shm
