// The shared-memory segment of one shm communicator: its layout, and how the processes of a group
// come to share it without leaving anything behind in /dev/shm.
//
// Life cycle: local rank 0 creates "/cohort-<job>-<nonce>" (O_EXCL, random nonce, so two
// communicators or two jobs never collide), initialises it and publishes the name in the store;
// the others open and map it and write their pid into their control block; rank 0 waits until
// every rank has attached and unlinks the name at once. From then on the memory lives exactly as
// long as some process maps it, so neither a clean exit nor a crash can leave litter. (If rank 0
// dies in the short window between create and unlink, the name stays; cohortrun removes
// /dev/shm/cohort-<COHORT_JOB_ID>-* when a job ends for that reason.)
//
// Layout (every part cache-line or page aligned):
//   Header | RankCtl[world] | slots: world x nslots x slot_bytes | rings: world x world
// Each rank writes only its own RankCtl lines, its own slots and the rings it sends on (plus the
// tail of rings it receives on): single writer per cache line, readers spin on them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "cohort/collectives/process_group.hpp"
#include "cohort/collectives/store.hpp"

namespace cohort::comm::shm {

static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "shm needs lock-free 64-bit atomics (they live in memory shared between processes)");
static_assert(std::atomic<std::int32_t>::is_always_lock_free, "shm needs lock-free 32-bit atomics");

// Sizes chosen by local rank 0 (defaults below, or COHORT_SHM_* variables for tuning) and copied
// from the header by the others, so all ranks agree even if their environments differ.
struct Params {
  std::uint32_t world = 1;
  std::uint32_t nslots = 4;                // pipeline depth of collectives
  std::uint64_t slot_bytes = 256u << 10;   // one step of a collective, per rank
  std::uint64_t direct_bytes = 16u << 10;  // allreduce at most this large: one-step algorithm
  std::uint64_t nontemporal_bytes = 8u << 20;  // outputs at least this large: non-temporal stores
  // All-reduce inputs at least this large that lie in communicator buffers: peers reduce from
  // them in place (allreduce_pipelined.cpp). Below it, reading a peer's input measured up to 2x
  // slower than its slot copy (64-256 KiB, out of place, 2 ranks; docs/COLLECTIVES.md).
  std::uint64_t peer_read_bytes = 512u << 10;
  std::uint32_t ring_slots = 8;            // point-to-point ring per ordered pair
  std::uint64_t ring_slot_bytes = 32u << 10;

  // Defaults, overridden by COHORT_SHM_SLOT_BYTES, COHORT_SHM_SLOTS, COHORT_SHM_DIRECT_BYTES,
  // COHORT_SHM_NONTEMPORAL_BYTES (its old spelling COHORT_SHM_STREAM_BYTES is still read when it
  // is unset), COHORT_SHM_PEER_READ_BYTES.
  static Params from_env(int world);
};

struct alignas(64) Line {
  std::atomic<std::uint64_t> v{0};
  char pad[64 - sizeof(std::atomic<std::uint64_t>)];
};
static_assert(sizeof(Line) == 64, "one flag per cache line");

// Per-rank progress flags (monotonic step numbers; see shm_engine.hpp) and diagnostics.
struct RankCtl {
  Line posted;    // my slot holds my data of this step
  Line reduced;   // my slot holds my reduced slice of this step (allreduce)
  Line consumed;  // I have finished reading everything of this step
  // Read by peers only to explain a timeout or to notice that I died.
  alignas(64) std::atomic<std::uint64_t> coll_seq{0};  // last collective I entered (1-based)
  std::atomic<std::uint32_t> coll_kind{0};
  std::atomic<std::int32_t> pid{0};                     // set when I attached
  std::atomic<std::uint64_t> pid_ns{0};                 // my pid namespace (inode)
  // Fingerprints: the description (detail::OpDesc, 32 bytes as 4 words) of collective #s that I
  // started sits in fp[s % kFpSlots] once that slot's seq is s, in one cache line with it, so a
  // peer's check moves one line (the 8-byte all-reduce is a handful of line transfers in all).
  // Peers compare it with their own before they let their collective #s complete
  // (Engine::fingerprints_match). Since a rank completes #s only after every peer has published
  // #s, no rank is more than one collective ahead of a peer that reads it, so two slots would
  // do; four leave room. fp_seq: the last s published (for "has not entered" reports).
  static constexpr int kFpSlots = 4;
  struct alignas(64) Fingerprint {
    std::atomic<std::uint64_t> seq{0};
    std::atomic<std::uint64_t> words[4] = {};
  };
  alignas(64) std::atomic<std::uint64_t> fp_seq{0};
  Fingerprint fp[kFpSlots];
  // Small all-reduces (allreduce_direct.cpp, at most kInlineBytes): step t's data and the
  // collective's fingerprint sit in inl[t % kInlineSlots], stamped with t, so a peer gets all of
  // it in one cache-line transfer instead of the posted flag's, the slot's and the fingerprint's
  // (Open MPI's shared-memory "fast box" does the same). Used while nslots <= kInlineSlots: a
  // rank rewrites a line only once every peer consumed the step it held, as with slots.
  static constexpr int kInlineSlots = 8;
  static constexpr std::size_t kInlineBytes = 24;
  struct alignas(64) Inline {
    std::atomic<std::uint64_t> step{0};
    std::atomic<std::uint64_t> fp[4] = {};
    std::atomic<std::uint64_t> data[3] = {};
  };
  static_assert(sizeof(Inline) == 64 && kInlineBytes == 3 * sizeof(std::uint64_t), "one line");
  Inline inl[kInlineSlots];
  // Communicator buffers (buffers.cpp): how many of my alloc_buffer allocations I have created,
  // and for how many I have mapped every peer's buffer (the n-th allocation has id n on every
  // rank).
  alignas(64) std::atomic<std::uint64_t> buf_created{0};
  std::atomic<std::uint64_t> buf_mapped{0};
  // Where my input of all-reduce #s lives (direct[s % kFpSlots], written before I post its
  // first step): buffer id and byte offset when it lies in my communicator buffers, so that peers
  // reduce from it in place; send_id 0: in my slots, as usual (allreduce_pipelined.cpp).
  struct Direct {
    std::atomic<std::uint64_t> seq{0}, send_id{0}, send_off{0};
  };
  Direct direct[kFpSlots];
};

struct RingCtl {
  Line head;  // chunks written by the sender
  Line tail;  // chunks consumed by the receiver
};
struct RingSlotHeader {
  std::int64_t tag;
  std::uint64_t msg_bytes;
  std::uint64_t offset;
  std::uint64_t chunk_bytes;
};
constexpr std::size_t kRingHeaderBytes = 64;

struct Header {
  std::atomic<std::uint64_t> magic{0};  // written last by the creator
  std::uint32_t version = 0;
  Params params;
  std::uint64_t total_bytes = 0;
  std::uint64_t ctl_offset = 0, slots_offset = 0, rings_offset = 0, ring_bytes = 0;
  // First rank whose communicator failed, and why: peers stop waiting for it at once.
  alignas(64) std::atomic<std::int32_t> abort_rank{-1};
  std::atomic<std::uint32_t> abort_ready{0};
  char abort_reason[1024] = {};
};

class Segment {
 public:
  // Creates (local rank 0) or opens (the others) the segment, using `store` to exchange its name.
  // Returns once this rank has mapped it; rank 0 returns once every rank has attached and the name
  // is unlinked. Throws naming the ranks that did not attach within `timeout`.
  static std::unique_ptr<Segment> attach(const ProcessGroupInfo& info, Store& store,
                                         std::chrono::milliseconds timeout);
  // The bytes of /dev/shm a segment with these parameters takes (cohort-doctor checks them).
  static std::uint64_t bytes_for(const Params& params);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  const std::string& name() const { return name_; }
  Header& header() const { return *reinterpret_cast<Header*>(base_); }
  const Params& params() const { return header().params; }
  RankCtl& ctl(int rank) const {
    return reinterpret_cast<RankCtl*>(base_ + header().ctl_offset)[rank];
  }
  // The slot rank `rank` uses for global step `step`.
  char* slot(int rank, std::uint64_t step) const {
    const Params& p = params();
    return base_ + header().slots_offset +
           (static_cast<std::uint64_t>(rank) * p.nslots + step % p.nslots) * p.slot_bytes;
  }
  RingCtl& ring(int from, int to) const {
    return *reinterpret_cast<RingCtl*>(ring_base(from, to));
  }
  char* ring_slot(int from, int to, std::uint64_t index) const {
    const Params& p = params();
    return ring_base(from, to) + sizeof(RingCtl) + (index % p.ring_slots) * p.ring_slot_bytes;
  }

 private:
  Segment() = default;
  char* ring_base(int from, int to) const {
    return base_ + header().rings_offset +
           (static_cast<std::uint64_t>(from) * params().world + to) * header().ring_bytes;
  }

  std::string name_;
  char* base_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace cohort::comm::shm
