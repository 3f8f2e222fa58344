// All-reduce above Params::direct_bytes: reduce-scatter + all-gather, pipelined over steps of at
// most one slot. Three stages per step, run by PipelinedOp:
//   A  copy the slices the others reduce into my slot                  -> posted
//   B  reduce my slice (rank order) from my input and the others' slots
//      into my output and my slot                                      -> reduced
//   C  copy the others' reduced slices out of their slots               -> consumed
// Tried in the order B, A, C: the work peers wait for first (my reduced slice, then my posted
// data), my own copy-out last. Per rank that is about 2 reads and 2 writes of the buffer in all,
// the minimum for processes that cannot read each other's private memory.
//
// Direct ranks: a rank whose input (at least Params::peer_read_bytes of it) lies in its
// communicator buffers (buffers.cpp), which every peer maps, says so before its first step
// (RankCtl::direct) and skips stage A: the peers reduce straight from its input. Each rank
// decides for itself and each reader looks at each peer's choice, so direct and slotted ranks
// mix. A direct rank's input is read by peers only in their stage B, and its own stage C of a
// step waits for every peer's B of that step, so once it has run C for the last step no peer
// reads its input any more: completion needs no extra wait.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "detail/copy.hpp"
#include "detail/reduce.hpp"
#include "shm/algorithms.hpp"
#include "shm/op_buffers.hpp"
#include "shm/pipeline.hpp"

namespace cohort::comm::shm {
namespace {

using std::uint64_t;

class AllreducePipelined final : public PipelinedOp, private OpBuffers {
 public:
  AllreducePipelined(std::shared_ptr<Engine> e, const void* send, void* recv, std::size_t count,
                     DType dtype, ReduceOp op, Timeout t, uint64_t nsteps, uint64_t slice)
      : PipelinedOp(std::move(e), detail::op_desc(OpKind::allreduce, count, dtype, op), t, nsteps),
        OpBuffers(desc, send, recv),
        // In place, the output's lines were just read (they are in the caches): there plain
        // stores measured faster (16 MiB, 2 ranks: 2.1 against 3.4 ms), out of place the
        // non-temporal ones (2.0 against 2.4 ms; docs/COLLECTIVES.md).
        nontemporal_(send != recv && nontemporal_output(eng.params, count)),
        slice_max_(slice) {}

  bool advance() override {
    if (!announced_) announce_direct();
    return move();
  }

 private:
  bool move() {
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

  // Publishes where my input lives for this collective, before my first step is posted (the
  // posted flag's release store publishes it): buffer id and offset when it lies in my
  // communicator buffers, else id 0 (my slots).
  void announce_direct() {
    announced_ = true;
    std::uint64_t id = 0, off = 0;
    direct_self_ = eng.world > 1 && count_ * esz_ >= eng.params.peer_read_bytes &&
                   eng.find_buffer(in_, count_ * esz_, &id, &off);
    RankCtl::Direct& d = eng.seg().ctl(eng.rank).direct[desc.seq % RankCtl::kFpSlots];
    d.send_id.store(direct_self_ ? id : 0, std::memory_order_relaxed);
    d.send_off.store(off, std::memory_order_relaxed);
    d.seq.store(desc.seq, std::memory_order_relaxed);
  }

  // Where rank q's input of this op is in this process: in its buffer when q is direct, nullptr
  // when it goes through q's slots. Called once q has posted a step of this op (the posted flag's
  // acquire load makes q's announcement visible).
  void resolve_peers() {
    resolved_ = true;
    peer_in_.assign(static_cast<std::size_t>(eng.world), nullptr);
    for (int q = 0; q < eng.world; ++q) {
      if (q == eng.rank) continue;
      const RankCtl::Direct& d = eng.seg().ctl(q).direct[desc.seq % RankCtl::kFpSlots];
      // A peer that posted this step without announcing this collective is in another one (a
      // user's mismatch): read its slots, and let the fingerprint check, which runs before the
      // op may complete, report the mismatch (engine.cpp).
      if (d.seq.load(std::memory_order_relaxed) != desc.seq) continue;
      const std::uint64_t id = d.send_id.load(std::memory_order_relaxed);
      if (id == 0) continue;
      std::uint64_t size = 0;
      const char* base = eng.buffer_of(q, id, &size);
      const std::uint64_t off = d.send_off.load(std::memory_order_relaxed);
      if (base == nullptr)
        eng.fail("shm " + desc.str() + ": rank " + std::to_string(q) +
                 " reduces from communicator buffer #" + std::to_string(id) + ", which rank " +
                 std::to_string(eng.rank) +
                 " has already freed (free a buffer on every rank only after the last op that "
                 "uses it on any rank)");
      // Past its buffer's end with this rank's count: the ranks disagree on the count; the slots
      // are read instead and the fingerprint check reports the mismatch, as above.
      if (off + count_ * esz_ > size) continue;
      peer_in_[static_cast<std::size_t>(q)] = base + off;
    }
  }

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

  // Copy the slices the others reduce into my slot (a direct rank's peers read its input).
  void phase_a(uint64_t k) {
    if (direct_self_) return;
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
    if (!resolved_) resolve_peers();
    const void** srcs = eng.srcs();
    for (int q = 0; q < eng.world; ++q) {
      const char* direct = peer_in_[static_cast<std::size_t>(q)];
      srcs[q] = q == me       ? static_cast<const void*>(in_ + g.base * esz_ + off)
                : direct      ? static_cast<const void*>(direct + g.base * esz_ + off)
                              : eng.seg().slot(q, t0 + k) + off;
    }
    char* out = out_ + g.base * esz_ + off;
    char* slot = eng.seg().slot(me, t0 + k) + off;
    if (nontemporal_) {
      // Reduce into the (cache-resident) slot, then copy it to the output with non-temporal
      // stores.
      detail::reduce_sources(slot, nullptr, srcs, eng.world, len, dtype_, op_, eng.world);
      detail::nontemporal_copy(out, slot, len * esz_);
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
               g.len(q) * esz_, nontemporal_);
    }
  }

  // Write the output with non-temporal stores (out of place, larger than the caches).
  bool nontemporal_;
  uint64_t slice_max_;
  std::array<uint64_t, 3> done_{};  // steps done in stages A, B, C
  bool announced_ = false;           // announce_direct() ran
  bool direct_self_ = false;         // my input is in a communicator buffer: peers read it there
  bool resolved_ = false;            // resolve_peers() ran
  std::vector<const char*> peer_in_;  // per rank: its input in its buffer, or nullptr (slots)
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
