#include "shm/collectives.hpp"

#include <algorithm>
#include <cstring>

#include "detail/copy.hpp"
#include "detail/reduce.hpp"

namespace cohort::comm::shm {
namespace {

using std::uint64_t;

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
uint64_t round_up(uint64_t a, uint64_t b) { return ceil_div(a, b) * b; }

// Elements per slice such that `parts` slices fit one slot, a multiple of one cache line.
uint64_t slice_capacity(const Params& p, int parts, std::size_t esz) {
  const uint64_t align = 64 / esz;
  return std::max<uint64_t>(align, p.slot_bytes / (static_cast<uint64_t>(parts) * esz) / align * align);
}

// Copies out of a slot into the caller's buffer; large outputs bypass the caches.
void copy_out(void* dst, const void* src, std::size_t bytes, bool stream) {
  if (stream)
    detail::stream_copy(dst, src, bytes);
  else
    std::memcpy(dst, src, bytes);
}

// -------------------------------------------------------------------------------------------
class Allreduce final : public CollOp {
 public:
  Allreduce(std::shared_ptr<Engine> e, const void* send, void* recv, std::size_t count,
            DType dtype, ReduceOp op, Timeout t, bool direct, uint64_t nsteps, uint64_t slice)
      : CollOp(std::move(e), detail::op_desc(OpKind::allreduce, count, dtype, op), t, nsteps),
        in_(static_cast<const char*>(send)),
        out_(static_cast<char*>(recv)),
        count_(count),
        dtype_(dtype),
        op_(op),
        esz_(dtype_size(dtype)),
        direct_(direct),
        stream_(count * esz_ >= eng.params.stream_bytes),
        slice_max_(slice) {}

  static std::shared_ptr<CollOp> make(std::shared_ptr<Engine> e, const void* send, void* recv,
                                      std::size_t count, DType dtype, ReduceOp op, Timeout t) {
    const Params& p = e->params;
    const int n = e->world;
    const std::size_t esz = dtype_size(dtype);
    if (count == 0 || n == 1)
      return std::make_shared<Allreduce>(std::move(e), send, recv, count, dtype, op, t, true, 0, 0);
    if (count * esz <= p.direct_bytes)
      return std::make_shared<Allreduce>(std::move(e), send, recv, count, dtype, op, t, true, 1, 0);
    // At least kMinSteps steps when the buffer allows (a pipeline of one or two steps leaves the
    // ranks waiting for each other), but slices of at least 16 KiB (each step costs flag traffic).
    constexpr uint64_t kMinSteps = 8;
    const uint64_t align = 64 / esz;
    const uint64_t want = round_up(ceil_div(count, static_cast<uint64_t>(n) * kMinSteps), align);
    const uint64_t slice = std::min(slice_capacity(p, n, esz),
                                    std::max<uint64_t>(want, round_up((16u << 10) / esz, align)));
    const uint64_t steps = ceil_div(count, slice * static_cast<uint64_t>(n));
    return std::make_shared<Allreduce>(std::move(e), send, recv, count, dtype, op, t, false, steps,
                                       slice);
  }

  bool advance() override {
    if (nsteps == 0) {  // one rank, or nothing to do
      if (count_ && in_ != out_) std::memcpy(out_, in_, count_ * esz_);
      return true;
    }
    return direct_ ? advance_direct() : advance_pipelined();
  }

 private:
  bool advance_direct() {
    clear_stall();
    if (a_ == 0) {
      if (!eng.slot_free(t0)) return stalled(Flag::consumed, t0 - eng.params.nslots), false;
      std::memcpy(eng.seg().slot(eng.rank, t0), in_, count_ * esz_);
      eng.publish(Flag::posted, t0);
      a_ = 1;
    }
    if (!eng.reached(Flag::posted, t0)) return stalled(Flag::posted, t0), false;
    const void** srcs = eng.srcs();
    for (int q = 0; q < eng.world; ++q) srcs[q] = q == eng.rank ? in_ : eng.seg().slot(q, t0);
    detail::reduce_sources(out_, nullptr, srcs, eng.world, count_, dtype_, op_, eng.world);
    eng.publish(Flag::consumed, t0);
    return true;
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

  bool advance_pipelined() {
    // Work that peers wait for first (reducing, then posting), my own copy-out last.
    for (bool moved = true; moved;) {
      moved = false;
      clear_stall();
      if (b_ < a_) {
        if (eng.reached(Flag::posted, t0 + b_)) {
          phase_b(b_);
          eng.publish(Flag::reduced, t0 + b_);
          ++b_;
          moved = true;
        } else {
          stalled(Flag::posted, t0 + b_);
        }
      }
      if (a_ < nsteps) {
        if (eng.slot_free(t0 + a_)) {
          phase_a(a_);
          eng.publish(Flag::posted, t0 + a_);
          ++a_;
          moved = true;
        } else {
          stalled(Flag::consumed, t0 + a_ - eng.params.nslots);
        }
      }
      if (c_ < b_) {
        if (eng.reached(Flag::reduced, t0 + c_)) {
          phase_c(c_);
          eng.publish(Flag::consumed, t0 + c_);
          ++c_;
          moved = true;
        } else {
          stalled(Flag::reduced, t0 + c_);
        }
      }
    }
    return c_ == nsteps;
  }

  const char* in_;
  char* out_;
  std::size_t count_;
  DType dtype_;
  ReduceOp op_;
  std::size_t esz_;
  bool direct_;
  bool stream_;  // write the output with non-temporal stores (it is larger than the caches)
  uint64_t slice_max_;
  uint64_t a_ = 0, b_ = 0, c_ = 0;  // steps done in phases A, B, C
};

// -------------------------------------------------------------------------------------------
class Broadcast final : public CollOp {
 public:
  Broadcast(std::shared_ptr<Engine> e, void* buf, std::size_t count, DType dtype, int root,
            Timeout t, uint64_t nsteps, uint64_t chunk)
      : CollOp(std::move(e), detail::op_desc(OpKind::broadcast, count, dtype, ReduceOp::sum, root),
               t, nsteps),
        buf_(static_cast<char*>(buf)),
        count_(count),
        dtype_(dtype),
        root_(root),
        esz_(dtype_size(dtype)),
        chunk_(chunk),
        stream_(count * esz_ >= eng.params.stream_bytes) {}

  bool advance() override {
    clear_stall();
    for (; k_ < nsteps; ++k_) {
      const uint64_t t = t0 + k_;
      const uint64_t base = k_ * chunk_;
      const uint64_t len = std::min<uint64_t>(chunk_, count_ - base) * esz_;
      if (eng.rank == root_) {
        if (!eng.slot_free(t)) return stalled(Flag::consumed, t - eng.params.nslots), false;
        std::memcpy(eng.seg().slot(root_, t), buf_ + base * esz_, len);
        eng.publish(Flag::posted, t);
      } else {
        if (!eng.reached(Flag::posted, t, root_)) return stalled(Flag::posted, t, root_), false;
        copy_out(buf_ + base * esz_, eng.seg().slot(root_, t), len, stream_);
      }
      eng.publish(Flag::consumed, t);
    }
    return true;
  }

 private:
  char* buf_;
  std::size_t count_;
  DType dtype_;
  int root_;
  std::size_t esz_;
  uint64_t chunk_;
  bool stream_;
  uint64_t k_ = 0;
};

// -------------------------------------------------------------------------------------------
// Shared by allgather and reduce_scatter: step k covers elements [k * chunk, ...) of each rank's
// block of `count`; phase A publishes my contribution in my slot, phase B consumes the others'.
class Blockwise : public CollOp {
 public:
  Blockwise(std::shared_ptr<Engine> e, const OpDesc& desc, const void* send, void* recv,
            Timeout t, uint64_t nsteps, uint64_t chunk)
      : CollOp(std::move(e), desc, t, nsteps),
        send_(static_cast<const char*>(send)),
        recv_(static_cast<char*>(recv)),
        count_(desc.count),
        dtype_(desc.dtype),
        esz_(dtype_size(desc.dtype)),
        chunk_(chunk),
        stream_(count_ * esz_ * static_cast<uint64_t>(eng.world) >= eng.params.stream_bytes) {}

  bool advance() override {
    for (bool moved = true; moved;) {
      moved = false;
      clear_stall();
      if (b_ < a_) {
        if (eng.reached(Flag::posted, t0 + b_)) {
          phase_b(b_);
          eng.publish(Flag::consumed, t0 + b_);
          ++b_;
          moved = true;
        } else {
          stalled(Flag::posted, t0 + b_);
        }
      }
      if (a_ < nsteps) {
        if (eng.slot_free(t0 + a_)) {
          phase_a(a_);
          eng.publish(Flag::posted, t0 + a_);
          ++a_;
          moved = true;
        } else {
          stalled(Flag::consumed, t0 + a_ - eng.params.nslots);
        }
      }
    }
    return b_ == nsteps;
  }

 protected:
  virtual void phase_a(uint64_t k) = 0;
  virtual void phase_b(uint64_t k) = 0;
  uint64_t base(uint64_t k) const { return k * chunk_; }
  uint64_t len(uint64_t k) const { return std::min<uint64_t>(chunk_, count_ - k * chunk_); }

  const char* send_;
  char* recv_;
  std::size_t count_;
  DType dtype_;
  std::size_t esz_;
  uint64_t chunk_;
  bool stream_;  // the gathered output is larger than the caches
  uint64_t a_ = 0, b_ = 0;
};

class Allgather final : public Blockwise {
 public:
  using Blockwise::Blockwise;

 private:
  void phase_a(uint64_t k) override {
    const uint64_t bytes = len(k) * esz_;
    const char* src = send_ + base(k) * esz_;
    std::memcpy(eng.seg().slot(eng.rank, t0 + k), src, bytes);
    char* own = recv_ + (static_cast<uint64_t>(eng.rank) * count_ + base(k)) * esz_;
    if (own != src) std::memcpy(own, src, bytes);
  }
  void phase_b(uint64_t k) override {
    for (int q = 0; q < eng.world; ++q) {
      if (q == eng.rank) continue;
      copy_out(recv_ + (static_cast<uint64_t>(q) * count_ + base(k)) * esz_,
               eng.seg().slot(q, t0 + k), len(k) * esz_, stream_);
    }
  }
};

class ReduceScatter final : public Blockwise {
 public:
  ReduceScatter(std::shared_ptr<Engine> e, const void* send, void* recv, std::size_t count,
                DType dtype, ReduceOp op, Timeout t, uint64_t nsteps, uint64_t chunk)
      : Blockwise(std::move(e), detail::op_desc(OpKind::reduce_scatter, count, dtype, op), send,
                  recv, t, nsteps, chunk),
        op_(op) {}

 private:
  // My slot holds, at slice q, my part of rank q's block for this step.
  void phase_a(uint64_t k) override {
    char* slot = eng.seg().slot(eng.rank, t0 + k);
    for (int q = 0; q < eng.world; ++q) {
      if (q == eng.rank) continue;
      std::memcpy(slot + static_cast<uint64_t>(q) * len(k) * esz_,
                  send_ + (static_cast<uint64_t>(q) * count_ + base(k)) * esz_, len(k) * esz_);
    }
  }
  void phase_b(uint64_t k) override {
    const int me = eng.rank;
    const void** srcs = eng.srcs();
    for (int q = 0; q < eng.world; ++q)
      srcs[q] = q == me ? static_cast<const void*>(
                              send_ + (static_cast<uint64_t>(me) * count_ + base(k)) * esz_)
                        : eng.seg().slot(q, t0 + k) + static_cast<uint64_t>(me) * len(k) * esz_;
    detail::reduce_sources(recv_ + base(k) * esz_, nullptr, srcs, eng.world, len(k), dtype_, op_,
                           eng.world);
  }
  ReduceOp op_;
};

// -------------------------------------------------------------------------------------------
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

std::shared_ptr<CollOp> make_allreduce(std::shared_ptr<Engine> e, const void* send, void* recv,
                                       std::size_t count, DType dtype, ReduceOp op, Timeout t) {
  return Allreduce::make(std::move(e), send, recv, count, dtype, op, t);
}

std::shared_ptr<CollOp> make_broadcast(std::shared_ptr<Engine> e, void* buf, std::size_t count,
                                       DType dtype, int root, Timeout t) {
  const uint64_t chunk = e->params.slot_bytes / dtype_size(dtype);
  const uint64_t steps = e->world == 1 ? 0 : ceil_div(count, chunk);
  return std::make_shared<Broadcast>(std::move(e), buf, count, dtype, root, t, steps, chunk);
}

std::shared_ptr<CollOp> make_allgather(std::shared_ptr<Engine> e, const void* send, void* recv,
                                       std::size_t count, DType dtype, Timeout t) {
  const uint64_t chunk = e->params.slot_bytes / dtype_size(dtype);
  const uint64_t steps = ceil_div(count, chunk);
  return std::make_shared<Allgather>(std::move(e), detail::op_desc(OpKind::allgather, count, dtype),
                                     send, recv, t, steps, chunk);
}

std::shared_ptr<CollOp> make_reduce_scatter(std::shared_ptr<Engine> e, const void* send,
                                            void* recv, std::size_t count, DType dtype,
                                            ReduceOp op, Timeout t) {
  const uint64_t chunk = slice_capacity(e->params, e->world, dtype_size(dtype));
  const uint64_t steps = ceil_div(count, chunk);
  return std::make_shared<ReduceScatter>(std::move(e), send, recv, count, dtype, op, t, steps,
                                         chunk);
}

std::shared_ptr<CollOp> make_barrier(std::shared_ptr<Engine> e, Timeout t) {
  return std::make_shared<Barrier>(std::move(e), t);
}

}  // namespace cohort::comm::shm
