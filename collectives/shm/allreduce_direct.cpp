// All-reduce in one step, for buffers up to Params::direct_bytes: every rank copies its input to
// its slot, waits for every peer's, and reduces all slots in rank order into its output (so every
// rank computes bit-identical results). Up to RankCtl::kInlineBytes the input goes into the rank's
// inline line with its fingerprint instead (segment.hpp): one cache line per peer to read. One flag
// exchange in all: this is the latency path (the 8-byte all-reduce is ~1.4 us), so it is a
// two-state machine written out by hand rather than run by PipelinedOp. With nsteps 0 (one rank, or
// count 0) it is a local copy.
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
        OpBuffers(desc, send, recv),
        inline_(count_ * esz_ <= RankCtl::kInlineBytes &&
                eng.params.nslots <= static_cast<std::uint32_t>(RankCtl::kInlineSlots)) {
    inline_fp = inline_;
  }

  bool advance() override {
    if (nsteps == 0) {  // one rank, or nothing to do
      if (count_ && in_ != out_) std::memcpy(out_, in_, count_ * esz_);
      return true;
    }
    clear_stall();
    if (!posted_) {
      if (!eng.slot_free(t0)) return stalled(Flag::consumed, t0 - eng.params.nslots), false;
      if (inline_)
        post_inline();
      else
        std::memcpy(eng.seg().slot(eng.rank, t0), in_, count_ * esz_);
      eng.publish(Flag::posted, t0);  // also inline: timeout reports read it
      posted_ = true;
    }
    const void** srcs = eng.srcs();
    if (inline_) {
      if (!read_inline()) return false;
      for (int q = 0; q < eng.world; ++q)
        srcs[q] = q == eng.rank ? static_cast<const void*>(in_) : eng.inline_words() + q * 3;
    } else {
      if (!eng.reached(Flag::posted, t0)) return stalled(Flag::posted, t0), false;
      for (int q = 0; q < eng.world; ++q) srcs[q] = q == eng.rank ? in_ : eng.seg().slot(q, t0);
    }
    detail::reduce_sources(out_, nullptr, srcs, eng.world, count_, dtype_, op_, eng.world);
    eng.publish(Flag::consumed, t0);
    return true;
  }

 private:
  RankCtl::Inline& line(int q) const { return eng.seg().ctl(q).inl[t0 % RankCtl::kInlineSlots]; }

  // My data and fingerprint into my line of step t0, then its stamp (release: a peer that sees
  // the stamp sees the rest).
  void post_inline() {
    RankCtl::Inline& l = line(eng.rank);
    std::uint64_t w[3] = {};
    std::memcpy(w, in_, count_ * esz_);
    for (int i = 0; i < 3; ++i) l.data[i].store(w[i], std::memory_order_relaxed);
    std::uint64_t f[4];
    static_assert(sizeof(f) == sizeof(OpDesc), "a fingerprint is 4 words");
    std::memcpy(f, &desc, sizeof(f));
    for (int i = 0; i < 4; ++i) l.fp[i].store(f[i], std::memory_order_relaxed);
    l.step.store(t0, std::memory_order_release);
  }

  // Each peer's line of step t0, in rank order: its data copied out, its fingerprint compared
  // with mine (a difference fails the communicator, as Engine::fingerprints_match would). False
  // while a peer has not posted.
  bool read_inline() {
    std::uint64_t* words = eng.inline_words();
    for (; read_ < eng.world; ++read_) {
      const int q = read_;
      if (q == eng.rank) continue;
      const RankCtl::Inline& l = line(q);
      if (l.step.load(std::memory_order_acquire) < t0) return stalled(Flag::posted, t0, q), false;
      for (int i = 0; i < 3; ++i) words[q * 3 + i] = l.data[i].load(std::memory_order_relaxed);
      if (eng.checks()) {
        std::uint64_t f[4];
        for (int i = 0; i < 4; ++i) f[i] = l.fp[i].load(std::memory_order_relaxed);
        OpDesc theirs;
        std::memcpy(&theirs, f, sizeof(theirs));
        if (!detail::same_collective(theirs, desc))
          eng.fail(detail::mismatch_message(eng.rank, desc, q, theirs));
      }
    }
    matched = eng.world;  // the fingerprints were in the lines: nothing left for the engine
    return true;
  }

  const bool inline_;    // the data fits a line (and nslots the lines)
  bool posted_ = false;  // my input is in my slot (or line)
  int read_ = 0;         // inline: peers below this rank have been read (into inline_words)
};

}  // namespace

std::shared_ptr<CollOp> make_allreduce_direct(std::shared_ptr<Engine> e, const void* send,
                                              void* recv, std::size_t count, DType dtype,
                                              ReduceOp op, Timeout t, std::uint64_t nsteps) {
  return std::make_shared<AllreduceDirect>(std::move(e), send, recv, count, dtype, op, t, nsteps);
}

}  // namespace cohort::comm::shm
