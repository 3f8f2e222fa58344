// Broadcast through the root's slots, one slot per step, run by PipelinedOp with a single stage
// whose shape depends on the role: the root copies step k into its slot once the slot is free
// (publishing posted, and consumed: it reads no peer's slot); every other rank waits for the
// root's step k and copies it out (consumed). The root completes once its data is in the segment,
// without waiting for the others to read it.
#include <cstring>

#include "shm/algorithms.hpp"
#include "shm/pipeline.hpp"

namespace cohort::comm::shm {
namespace {

using std::uint64_t;

class Broadcast final : public PipelinedOp, private OpBuffers {
 public:
  Broadcast(std::shared_ptr<Engine> e, void* buf, std::size_t count, DType dtype, int root,
            Timeout t, uint64_t nsteps, uint64_t chunk)
      : PipelinedOp(std::move(e),
                    detail::op_desc(OpKind::broadcast, count, dtype, ReduceOp::sum, root), t,
                    nsteps),
        OpBuffers(desc, buf, buf),
        root_(root),
        chunk_(chunk),
        nontemporal_(nontemporal_output(eng.params, count)) {}

  bool advance() override {
    static constexpr std::array<int, 1> kOrder = {0};
    const std::array<Stage, 1> stage = {
        eng.rank == root_ ? Stage{Wait::slot_free, Flag::posted, -1, true}
                          : Stage{Wait::posted, Flag::consumed, root_}};
    return drive(stage, kOrder, done_, [this](int, uint64_t k) {
      const uint64_t t = t0 + k;
      const uint64_t base = k * chunk_;
      const uint64_t len = std::min<uint64_t>(chunk_, count_ - base) * esz_;
      if (eng.rank == root_)
        std::memcpy(eng.seg().slot(root_, t), in_ + base * esz_, len);
      else
        copy_out(out_ + base * esz_, eng.seg().slot(root_, t), len, nontemporal_);
    });
  }

 private:
  int root_;
  uint64_t chunk_;
  bool nontemporal_;
  std::array<uint64_t, 1> done_{};
};

}  // namespace

std::shared_ptr<CollOp> make_broadcast(std::shared_ptr<Engine> e, void* buf, std::size_t count,
                                       DType dtype, int root, Timeout t) {
  const uint64_t chunk = slot_elems(e->params, dtype_size(dtype));  // one slot per step
  const uint64_t steps = e->world == 1 ? 0 : ceil_div(count, chunk);
  return std::make_shared<Broadcast>(std::move(e), buf, count, dtype, root, t, steps, chunk);
}

}  // namespace cohort::comm::shm
