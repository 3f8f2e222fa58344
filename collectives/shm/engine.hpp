// The shm engine: the queue of enqueued ops of one communicator and the code that moves them
// forward over the shared segment.
//
// Who makes progress: the calling thread, not a progress thread. Ops are non-blocking state
// machines; issuing an op, Work::test() and Work::wait() each advance every pending op as far as
// the peers allow. Reasons: (1) a hand-off to a progress thread costs a futex wake-up (several
// microseconds) per op, or a core spinning for ever; the 8-byte all-reduce target is ~1.4 us and
// with one rank per core (the normal shm deployment) there is no spare core to spin on. (2) Moving
// the data *is* the CPU's work in a shared-memory collective: a second thread would compete with
// the caller for the same core and memory bandwidth rather than overlap anything. The price: a
// rank that enqueues ops and then computes for a long time without calling into the communicator
// delays its peers, as with MPI's progress rules. DDP-style users issue bucket after bucket, and
// every issue advances the earlier ones.
//
// Steps and flags: collectives are cut into steps numbered globally per communicator (1, 2, ...;
// all ranks issue the same collectives with the same counts, so they agree on the numbers). Step t
// uses slot t % nslots of each rank. A rank publishes, in its own RankCtl, monotonic counters:
// posted = t (its data of step t is in its slot), reduced = t (its reduced slice of step t is in its
// slot) and consumed = t (it has read everything it needs of step t from others' slots). A rank may
// overwrite its slot for step t only when every peer has consumed step t - nslots: that is the whole
// flow control. Each flag is one cache line written by one rank; the fast path makes no system call.
//
// Ordering: collectives run strictly in issue order. Point-to-point ops progress concurrently with
// them (a large send must not wait behind a collective its receiver is stuck in), and Work handles
// report completion in issue order (an op is reported complete once it and every op issued before
// it are).
#pragma once

#include <algorithm>
#include <chrono>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cohort/collectives/communicator.hpp"
#include "cohort/collectives/store.hpp"
#include "detail/op_desc.hpp"
#include "shm/segment.hpp"

namespace cohort::comm::shm {

enum class Flag : std::uint8_t { posted, reduced, consumed };
using detail::OpDesc;
using detail::OpKind;

class Engine;

// One enqueued op; also the Work handle given to the caller.
class Op : public Work {
 public:
  Op(std::shared_ptr<Engine> engine, const OpDesc& desc, Timeout timeout);
  bool test() override;
  void wait() override;

  // Moves the op forward without blocking, as far as the peers allow; true once complete.
  virtual bool advance() = 0;
  // For a timeout message: the ranks this op is waiting for and what for ("did not arrive").
  virtual void blocked(std::vector<int>* ranks, std::string* what) const = 0;
  // For error messages: "shm allreduce #17 (1024 x f32, sum)".
  virtual std::string describe() const = 0;

  OpDesc desc;  // desc.seq: a collective's number, set by Engine::submit
  const Timeout timeout;
  // Set at the engine's first look at the clock after the op was issued (check_time_locked: the
  // 32nd poll of a wait, or a test()), not at issue: a clock read per op was 8% of a blocking
  // 8-byte all-reduce. The timeout therefore counts from the first wait or test that finds the op
  // pending, never from a moment before it was issued.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  std::uint64_t id = 0;    // issue order, set by Engine::submit
  bool done = false;

 protected:
  Engine& eng;
  std::shared_ptr<Engine> keep_;  // the engine (and the mapping) outlive every handle
};

// A collective cut into `nsteps` steps starting at global step `t0`.
class CollOp : public Op {
 public:
  CollOp(std::shared_ptr<Engine> engine, const OpDesc& desc, Timeout timeout,
         std::uint64_t nsteps);
  void blocked(std::vector<int>* ranks, std::string* what) const override;
  std::string describe() const override { return "shm " + desc.str(); }

  const std::uint64_t nsteps;
  std::uint64_t t0 = 0;  // set by submit
  bool moved = false;    // advance() has returned true: this rank's data part is done
  int matched = 0;       // ranks below this one have been checked by fingerprints_match()
  // The op reads the peers' fingerprints from its own lines (allreduce_direct.cpp's inline path):
  // while it waits, the engine's check (for a peer stuck in another collective) runs every 64th
  // poll instead of every poll, which kept pulling the peers' fingerprint lines over.
  bool inline_fp = false;
  unsigned fp_polls = 0;

 protected:
  // Records the earliest unmet condition of this pass, for blocked().
  void stalled(Flag flag, std::uint64_t step, int only_rank = -1) const;
  void clear_stall() const { stall_step_ = 0; }

 private:
  mutable Flag stall_flag_ = Flag::posted;
  mutable std::uint64_t stall_step_ = 0;
  mutable int stall_rank_ = -1;
};

class SendOp;
class RecvOp;

// A message that arrived before any matching recv was posted, buffered by the receiver.
struct Unexpected {
  std::int64_t tag;
  std::vector<std::uint8_t> data;
  bool complete = false;  // every chunk has arrived
  bool claimed = false;   // a recv has been matched with it
};

class Engine : public std::enable_shared_from_this<Engine> {
 public:
  Engine(int rank, int world, std::unique_ptr<Segment> segment, std::shared_ptr<Store> store,
         Timeout default_timeout);
  ~Engine();

  const int rank;
  const int world;
  const Params params;
  Segment& seg() const { return *seg_; }
  Timeout resolve(Timeout t) const;
  Timeout default_timeout() const { return default_timeout_; }

  // Throws if an earlier op failed (the communicator is then unusable).
  void check_usable();
  // Enqueues an op (collective: consumes op->nsteps global steps) and advances everything once.
  WorkHandle submit(std::shared_ptr<Op> op);

  bool test(Op& op);
  void wait(Op& op);
  // Finishes (or, while an exception unwinds, abandons) pending ops; called by the communicator's
  // destructor. Handles still held by the caller then report the op as failed or done.
  void shutdown(bool abandon);

  // --- for ops ---
  // True when every rank other than me (or only `only_rank`) has flag >= step.
  bool reached(Flag flag, std::uint64_t step, int only_rank = -1) const;
  void publish(Flag flag, std::uint64_t step);
  void count_move() { ++moves_; }
  // True when my slot for `step` may be overwritten (every peer consumed step - nslots).
  // Every peer's consumed flag is read only when the lowest value seen last time does not already
  // free the slot: with nslots of slack a blocking loop of small collectives reads the peers'
  // lines about once per nslots steps, instead of moving them every step. (The acquire load that
  // saw a value ordered the peer's reads of my slot before my later writes to it.)
  bool slot_free(std::uint64_t step) const {
    if (step <= params.nslots || consumed_seen_ >= step - params.nslots) return true;
    std::uint64_t low = ~std::uint64_t{0};
    for (int q = 0; q < world; ++q)
      if (q != rank) low = std::min(low, flag(q, Flag::consumed).load(std::memory_order_acquire));
    consumed_seen_ = low;
    return low >= step - params.nslots;
  }
  std::atomic<std::uint64_t>& flag(int r, Flag f) const;
  // The ranks other than me (or `only_rank`) whose flag is below step.
  std::vector<int> behind(Flag flag, std::uint64_t step, int only_rank = -1) const;
  // The peers that have not yet started collective #seq (published its fingerprint).
  std::vector<int> not_entered(std::uint64_t seq) const;
  // "rank 2 last entered collective #16 (barrier)" for each rank in `ranks`.
  std::string whereabouts(const std::vector<int>& ranks) const;

  // Scratch for the source pointers of a reduction (world entries); ops run under the engine lock.
  const void** srcs() { return srcs_.data(); }
  // Scratch for the peers' inline data (3 words per rank; allreduce_direct.cpp): only the
  // front collective advances, so one op uses it at a time.
  std::uint64_t* inline_words() { return inline_words_.data(); }
  // Whether collectives compare fingerprints before they complete (COHORT_COLLECTIVE_CHECKS).
  bool checks() const { return check_fingerprints_; }
  // For ops (engine lock held): fails the communicator with `why` and throws.
  [[noreturn]] void fail(const std::string& why) { fail_locked(why); }

  // Communicator buffers (buffers.cpp): a collective allocation that every rank maps from every
  // other rank, so that ops read the peers' data in place.
  std::unique_ptr<CommBuffer> alloc_buffer(std::size_t bytes, Timeout timeout);
  // Engine lock held. Whether [p, p + bytes) lies in one of my live buffers: its id and offset.
  bool find_buffer(const void* p, std::size_t bytes, std::uint64_t* id, std::uint64_t* off) const;
  // Engine lock held. This process's mapping of rank q's buffer of allocation `id` (q == rank:
  // mine), or nullptr when this rank has freed that allocation; *bytes its size.
  const char* buffer_of(int q, std::uint64_t id, std::uint64_t* bytes) const;

  // Point-to-point plumbing (shm/p2p.cpp).
  void post_recv(const std::shared_ptr<RecvOp>& op);
  bool claim_unexpected(RecvOp& op);
  void take_unexpected(RecvOp& op);  // completes op once its claimed message is whole
  bool drain_incoming();

 private:
  friend class SendOp;
  friend class RecvOp;
  // The message being received from one source: into a posted recv or an unexpected buffer.
  struct Incoming {
    bool active = false;
    RecvOp* recv = nullptr;
    std::list<Unexpected>::iterator unexpected;
    std::uint8_t* target = nullptr;
    std::uint64_t received = 0, total = 0;
  };

  void progress_locked();
  // Publishes the fingerprint of the collective this rank now runs (RankCtl::fp).
  void announce_locked(const CollOp& op);
  // True once every peer has published its fingerprint of op's collective and each equals
  // op.desc; a difference fails the communicator with detail::mismatch_message.
  bool fingerprints_match(CollOp& op);
  void retire_locked();
  void check_time_locked();
  [[noreturn]] void fail_locked(const std::string& why);
  [[noreturn]] void throw_failure() const;
  void check_peer_abort_locked();
  // The first of `ranks` whose process has exited (same pid namespace only), or -1.
  int exited_peer(const std::vector<int>& ranks) const;
  std::string timeout_message(const Op& op) const;

  std::unique_ptr<Segment> seg_;
  std::shared_ptr<Store> store_;  // kept alive: rank 0 may serve it to peers still starting
  const Timeout default_timeout_;
  const bool oversubscribed_;
  const bool check_fingerprints_;  // COHORT_COLLECTIVE_CHECKS

  std::mutex mu_;
  bool failed_ = false;
  std::string failure_;
  std::uint64_t next_id_ = 1;
  std::uint64_t first_pending_ = 1;  // every op with a smaller id is complete
  mutable std::uint64_t consumed_seen_ = 0;  // slot_free: the lowest peer consumed flag last read
  std::uint64_t next_step_ = 1;
  std::uint64_t next_seq_ = 1;
  std::deque<std::shared_ptr<Op>> inflight_;    // all pending ops, issue order
  // Pending collectives, issue order. Not owning: a pending op is in inflight_ too, which owns
  // it (one reference-count update fewer each way per op, on the small-message path).
  std::deque<CollOp*> coll_;
  std::vector<std::deque<std::shared_ptr<SendOp>>> sends_;  // per destination
  std::vector<std::list<std::shared_ptr<RecvOp>>> recvs_;   // per source, posting order
  std::vector<std::list<Unexpected>> unexpected_;           // per source, arrival order
  std::vector<Incoming> incoming_;                          // per source
  std::size_t p2p_pending_ = 0;
  std::chrono::steady_clock::time_point last_liveness_check_{};
  // Ops issued since the last check_time_locked have no deadline yet (Op::deadline).
  bool undated_ = false;
  // No op in flight has an earlier deadline (check_time_locked).
  std::chrono::steady_clock::time_point earliest_deadline_ =
      std::chrono::steady_clock::time_point::max();
  std::uint64_t announced_seq_ = 0;
  // Bumped whenever this rank moves data or publishes a flag: a waiter that sees it change has
  // made progress and goes back to spinning (its backoff restarts).
  std::uint64_t moves_ = 0;
  std::vector<const void*> srcs_;
  std::vector<std::uint64_t> inline_words_;
  // Live communicator buffers (buffers.cpp), by allocation id: every rank's mapping.
  struct Mapped {
    std::uint64_t id = 0;
    std::vector<char*> base;         // per rank
    std::vector<std::size_t> bytes;  // per rank
  };
  friend class ShmBuffer;
  std::vector<Mapped> buffers_;
  std::uint64_t buffers_made_ = 0;  // allocations so far (ids 1, 2, ...)
};

}  // namespace cohort::comm::shm
