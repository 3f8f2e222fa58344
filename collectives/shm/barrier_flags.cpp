// Barrier: one step of flags and no data. Every rank publishes posted, waits until every peer
// has, and publishes consumed (so the step's slot accounting stays the same as for any other
// collective). No slot is written, so it does not wait for a free slot.
#include "shm/algorithms.hpp"

namespace cohort::comm::shm {
namespace {

class Barrier final : public CollOp {
 public:
  Barrier(std::shared_ptr<Engine> e, Timeout t)
      : CollOp(std::move(e), detail::op_desc(OpKind::barrier, 0, DType::u8), t, 1) {}

  bool advance() override {
    clear_stall();
    if (!posted_) {
      eng.publish(Flag::posted, t0);
      posted_ = true;
    }
    if (!eng.reached(Flag::posted, t0)) return stalled(Flag::posted, t0), false;
    eng.publish(Flag::consumed, t0);
    return true;
  }

 private:
  bool posted_ = false;
};

}  // namespace

std::shared_ptr<CollOp> make_barrier(std::shared_ptr<Engine> e, Timeout t) {
  return std::make_shared<Barrier>(std::move(e), t);
}

}  // namespace cohort::comm::shm
