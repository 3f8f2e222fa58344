// All-gather through the slots, one slot-sized chunk of every rank's block per step, in the two
// stages of BlockwiseOp (pipeline.hpp):
//   post     copy my chunk into my slot (and into my own block of the output)   -> posted
//   consume  copy the others' chunks out of their slots                          -> consumed
#include <cstring>

#include "shm/algorithms.hpp"
#include "shm/pipeline.hpp"

namespace cohort::comm::shm {
namespace {

using std::uint64_t;

class Allgather final : public BlockwiseOp {
 public:
  Allgather(std::shared_ptr<Engine> e, const void* send, void* recv, std::size_t count,
            DType dtype, Timeout t, uint64_t chunk)
      : BlockwiseOp(std::move(e), detail::op_desc(OpKind::allgather, count, dtype), t, send, recv,
                    chunk),
        nontemporal_(nontemporal_output(eng.params, count * static_cast<uint64_t>(eng.world))) {}

 private:
  void post(uint64_t k) override {
    const uint64_t bytes = len(k) * esz_;
    const char* src = in_ + base(k) * esz_;
    std::memcpy(eng.seg().slot(eng.rank, t0 + k), src, bytes);
    char* own = out_ + (static_cast<uint64_t>(eng.rank) * count_ + base(k)) * esz_;
    if (own != src) std::memcpy(own, src, bytes);
  }
  void consume(uint64_t k) override {
    for (int q = 0; q < eng.world; ++q) {
      if (q == eng.rank) continue;
      copy_out(out_ + (static_cast<uint64_t>(q) * count_ + base(k)) * esz_,
               eng.seg().slot(q, t0 + k), len(k) * esz_, nontemporal_);
    }
  }

  bool nontemporal_;  // the gathered output is larger than the caches
};

}  // namespace

std::shared_ptr<CollOp> make_allgather(std::shared_ptr<Engine> e, const void* send, void* recv,
                                       std::size_t count, DType dtype, Timeout t) {
  const uint64_t chunk = slot_elems(e->params, dtype_size(dtype));  // one slot per step
  return std::make_shared<Allgather>(std::move(e), send, recv, count, dtype, t, chunk);
}

}  // namespace cohort::comm::shm
