// What the shm algorithms share: slot geometry helpers; PipelinedOp, the one stage driver of
// every pipelined collective (allreduce_pipelined.cpp, broadcast_pipelined.cpp,
// allgather_pipelined.cpp, reduce_scatter_pipelined.cpp); BlockwiseOp, the two-stage shape of
// allgather and reduce_scatter.
//
// Why one driver: those collectives all move a buffer through the segment in steps, each step
// passing through a fixed sequence of stages on every rank (post my data into my slot, reduce or
// copy what the peers posted, ...). What differs is only the data movement of a stage; the rules
// for when a stage may run (the flag protocol of engine.hpp) and for recording what a stalled op
// waits for (the timeout report) are the same, so they are written once here and an algorithm
// file holds only its geometry and its copies/reductions. The direct (one-step) all-reduce and the
// barrier are hand-written state machines of their own: they are the latency-bound paths, and a
// two-line sequence reads better without the driver.
#pragma once

#include <algorithm>
#include <array>
#include <cstring>

#include "detail/copy.hpp"
#include "shm/engine.hpp"
#include "shm/op_buffers.hpp"

namespace cohort::comm::shm {

inline std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }
inline std::uint64_t round_up(std::uint64_t a, std::uint64_t b) { return ceil_div(a, b) * b; }

// Elements per slice such that `parts` slices fit one slot, a multiple of one cache line.
// Elements of `esz` bytes in one slot: a step of a collective whose step is one slot of data.
inline std::uint64_t slot_elems(const Params& p, std::size_t esz) { return p.slot_bytes / esz; }

inline std::uint64_t slice_capacity(const Params& p, int parts, std::size_t esz) {
  const std::uint64_t align = 64 / esz;
  return std::max<std::uint64_t>(
      align, p.slot_bytes / (static_cast<std::uint64_t>(parts) * esz) / align * align);
}

// Copies out of a slot into the caller's buffer; large outputs bypass the caches.
inline void copy_out(void* dst, const void* src, std::size_t bytes, bool nontemporal) {
  if (nontemporal)
    detail::nontemporal_copy(dst, src, bytes);
  else
    std::memcpy(dst, src, bytes);
}

// What a pipeline stage waits for before it may run step t (a global step).
enum class Wait {
  slot_free,  // every peer consumed step t - nslots: my slot of step t may be overwritten
  posted,     // the peers (or only Stage::from) posted their data of step t
  reduced,    // the peers published their reduced slices of step t
};
struct Stage {
  Wait wait;
  Flag publish;                // published for step t once the stage ran it
  int from = -1;               // posted: wait for this rank only (-1: every peer)
  bool then_consumed = false;  // after `publish`, also publish consumed (reads no peer's slot)
};

// A collective cut into nsteps steps, each going through the same stages. Stage s of step k may
// run once stage s - 1 of step k has run on this rank (stage 0: once k < nsteps) and the stage's
// cross-rank condition holds for global step t0 + k; after it ran, the driver publishes the
// stage's flag(s) for that step. Each call of drive() runs every stage that can run, as far as
// the peers allow, and never blocks.
class PipelinedOp : public CollOp {
 public:
  using CollOp::CollOp;

 protected:
  // Tries the stages in `order` (indices into `stages`, which are in pipeline order) pass after
  // pass until a pass moves nothing; `done[s]` counts the steps stage s has run. The order is the
  // algorithm's choice: work that peers wait for first, the rank's own copy-out last. run(s, k)
  // moves the data of stage s, step k. True once the last stage has run every step.
  template <std::size_t S, class Run>
  bool drive(const std::array<Stage, S>& stages, const std::array<int, S>& order,
             std::array<std::uint64_t, S>& done, Run&& run) {
    for (bool moved = true; moved;) {
      moved = false;
      clear_stall();
      for (const int s : order) {
        const std::uint64_t k = done[s];
        if (k >= (s == 0 ? nsteps : done[s - 1])) continue;
        const Stage& st = stages[s];
        const std::uint64_t t = t0 + k;
        if (!ready(st, t)) continue;
        run(s, k);
        eng.publish(st.publish, t);
        if (st.then_consumed) eng.publish(Flag::consumed, t);
        ++done[s];
        moved = true;
      }
    }
    return done[S - 1] == nsteps;
  }

 private:
  // Whether stage `st` may run global step t; if not, records what it waits for (blocked()).
  bool ready(const Stage& st, std::uint64_t t) const {
    switch (st.wait) {
      case Wait::slot_free:
        if (eng.slot_free(t)) return true;
        stalled(Flag::consumed, t - eng.params.nslots);
        return false;
      case Wait::posted:
        if (eng.reached(Flag::posted, t, st.from)) return true;
        stalled(Flag::posted, t, st.from);
        return false;
      case Wait::reduced:
        break;
    }
    if (eng.reached(Flag::reduced, t)) return true;
    stalled(Flag::reduced, t);
    return false;
  }
};

// The shape shared by allgather and reduce_scatter: step k covers elements [k * chunk, ...) of
// each rank's block of `count`; stage A (post) puts my contribution into my slot, stage B
// (consume) takes the peers' out of theirs, and B is tried first, as peers wait for it.
class BlockwiseOp : public PipelinedOp, protected OpBuffers {
 public:
  BlockwiseOp(std::shared_ptr<Engine> e, const OpDesc& desc, Timeout t, const void* send,
              void* recv, std::uint64_t chunk)
      : PipelinedOp(std::move(e), desc, t, ceil_div(desc.count, chunk)),
        OpBuffers(desc, send, recv),
        chunk_(chunk) {}

  bool advance() override {
    static constexpr std::array<Stage, 2> kStages = {{
        {Wait::slot_free, Flag::posted},  // A
        {Wait::posted, Flag::consumed},   // B
    }};
    static constexpr std::array<int, 2> kOrder = {1, 0};
    return drive(kStages, kOrder, done_, [this](int stage, std::uint64_t k) {
      if (stage == 0)
        post(k);
      else
        consume(k);
    });
  }

 protected:
  virtual void post(std::uint64_t k) = 0;
  virtual void consume(std::uint64_t k) = 0;
  std::uint64_t base(std::uint64_t k) const { return k * chunk_; }
  std::uint64_t len(std::uint64_t k) const {
    return std::min<std::uint64_t>(chunk_, count_ - k * chunk_);
  }

  const std::uint64_t chunk_;

 private:
  std::array<std::uint64_t, 2> done_{};  // steps done in stages A, B
};

}  // namespace cohort::comm::shm
