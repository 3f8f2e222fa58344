// All-reduce above Params::direct_bytes: reduce-scatter + all-gather, pipelined over steps of at
// most one slot. Three stages per step, run by PipelinedOp:
//   A  copy the slices the others reduce into my slot                  -> posted
//   B  reduce my slice (rank order) from my input and the others' slots
//      into my output and my slot                                      -> reduced
//   C  copy the others' reduced slices out of their slots               -> consumed
// Tried in the order B, A, C: the work peers wait for first (my reduced slice, then my posted
// data), my own copy-out last. Per rank that is about 2 reads and 2 writes of the buffer in all,
// the minimum for processes that cannot read each other's private memory.
#include <algorithm>
#include <cstring>

#include "detail/copy.hpp"
#include "detail/reduce.hpp"
#include "shm/algorithms.hpp"
#include "shm/pipeline.hpp"

namespace cohort::comm::shm {
namespace {

using std::uint64_t;

class AllreducePipelined final : public PipelinedOp {
 public:
  AllreducePipelined(std::shared_ptr<Engine> e, const void* send, void* recv, std::size_t count,
                     DType dtype, ReduceOp op, Timeout t, uint64_t nsteps, uint64_t slice)
      : PipelinedOp(std::move(e), detail::op_desc(OpKind::allreduce, count, dtype, op), t, nsteps),
        in_(static_cast<const char*>(send)),
        out_(static_cast<char*>(recv)),
        count_(count),
        dtype_(dtype),
        op_(op),
        esz_(dtype_size(dtype)),
        stream_(count * esz_ >= eng.params.stream_bytes),
        slice_max_(slice) {}

  bool advance() override {
    static constexpr std::array<Stage, 3> kStages = {{
        {Wait::slot_free, Flag::posted},  // A
        {Wait::posted, Flag::reduced},    // B
        {Wait::reduced, Flag::consumed},  // C
    }};
    static constexpr std::array<int, 3> kOrder = {1, 0, 2};
    return drive(kStages, kOrder, done_, [this](int stage, uint64_t k) {
      switch (stage) {
        case 0: return phase_a(k);
        case 1: return phase_b(k);
        default: return phase_c(k);
      }
    });
  }

 private:
  // Step k covers elements [k * n * slice_max, ...); within it, slice q (reduced by rank q) is
  // [q * L, min(m, (q + 1) * L)) with L = ceil(m / n) rounded to a cache line, m the step's size.
  struct Geometry {
    uint64_t base, len_step, L;
    uint64_t off(int q) const { return std::min<uint64_t>(len_step, q * L); }
    uint64_t len(int q) const { return std::min<uint64_t>(len_step, (q + 1) * L) - off(q); }
  };
  Geometry geometry(uint64_t k) const {
    const uint64_t n = static_cast<uint64_t>(eng.world);
    Geometry g;
    g.base = k * slice_max_ * n;
    g.len_step = std::min<uint64_t>(slice_max_ * n, count_ - g.base);
    g.L = std::min(slice_max_, round_up(ceil_div(g.len_step, n), 64 / esz_));
    return g;
  }

  // Copy the slices the others reduce into my slot.
  void phase_a(uint64_t k) {
    const Geometry g = geometry(k);
    char* slot = eng.seg().slot(eng.rank, t0 + k);
    for (int q = 0; q < eng.world; ++q) {
      if (q == eng.rank || g.len(q) == 0) continue;
      std::memcpy(slot + g.off(q) * esz_, in_ + (g.base + g.off(q)) * esz_, g.len(q) * esz_);
    }
  }
  // Reduce my slice (rank order) into my output and my slot.
  void phase_b(uint64_t k) {
    const Geometry g = geometry(k);
    const int me = eng.rank;
    const uint64_t len = g.len(me);
    if (len == 0) return;
    const uint64_t off = g.off(me) * esz_;
    const void** srcs = eng.srcs();
    for (int q = 0; q < eng.world; ++q)
      srcs[q] = q == me ? static_cast<const void*>(in_ + g.base * esz_ + off)
                        : eng.seg().slot(q, t0 + k) + off;
    char* out = out_ + g.base * esz_ + off;
    char* slot = eng.seg().slot(me, t0 + k) + off;
    if (stream_) {
      // Reduce into the (cache-resident) slot, then stream it to the output.
      detail::reduce_sources(slot, nullptr, srcs, eng.world, len, dtype_, op_, eng.world);
      detail::stream_copy(out, slot, len * esz_);
    } else {
      detail::reduce_sources(out, slot, srcs, eng.world, len, dtype_, op_, eng.world);
    }
  }
  // Copy the others' reduced slices out.
  void phase_c(uint64_t k) {
    const Geometry g = geometry(k);
    for (int q = 0; q < eng.world; ++q) {
      if (q == eng.rank || g.len(q) == 0) continue;
      copy_out(out_ + (g.base + g.off(q)) * esz_, eng.seg().slot(q, t0 + k) + g.off(q) * esz_,
               g.len(q) * esz_, stream_);
    }
  }

  const char* in_;
  char* out_;
  std::size_t count_;
  DType dtype_;
  ReduceOp op_;
  std::size_t esz_;
  bool stream_;  // write the output with non-temporal stores (it is larger than the caches)
  uint64_t slice_max_;
  std::array<uint64_t, 3> done_{};  // steps done in stages A, B, C
};

}  // namespace

std::shared_ptr<CollOp> make_allreduce_pipelined(std::shared_ptr<Engine> e, const void* send,
                                                 void* recv, std::size_t count, DType dtype,
                                                 ReduceOp op, Timeout t) {
  const Params& p = e->params;
  const int n = e->world;
  const std::size_t esz = dtype_size(dtype);
  // At least kMinSteps steps when the buffer allows (a pipeline of one or two steps leaves the
  // ranks waiting for each other), but slices of at least 16 KiB (each step costs flag traffic).
  constexpr uint64_t kMinSteps = 8;
  const uint64_t align = 64 / esz;
  const uint64_t want = round_up(ceil_div(count, static_cast<uint64_t>(n) * kMinSteps), align);
  const uint64_t slice = std::min(slice_capacity(p, n, esz),
                                  std::max<uint64_t>(want, round_up((16u << 10) / esz, align)));
  const uint64_t steps = ceil_div(count, slice * static_cast<uint64_t>(n));
  return std::make_shared<AllreducePipelined>(std::move(e), send, recv, count, dtype, op, t, steps,
                                              slice);
}

}  // namespace cohort::comm::shm
