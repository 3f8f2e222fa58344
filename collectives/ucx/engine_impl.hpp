// The state of one UCX engine (Engine::Impl) and what the engine's files share. Internal to
// collectives/ucx/: the only header that names UCP types besides coll_channel.hpp.
//
// Who calls UCP: one thread at a time, whoever holds `drive_mu` (the worker is created in
// UCS_THREAD_MODE_SERIALIZED: no locks inside UCX, the caller serialises). The progress thread
// creates the context, worker and endpoints, and destroys them. In between, ops handed over
// through the mutex-protected queue run in issue order on whichever thread drives: a caller
// waiting in Work::wait() drives itself (no thread hand-off on the path of a small blocking
// collective); otherwise the progress thread does, so ops issued and not waited for still run in
// the background (DDP's bucket all-reduces during backward).
//
// The engine's members are defined by job, one file each:
//   context.cpp      UCP context, worker and endpoints: setup, address exchange, teardown
//   progress.cpp     the progress thread and its queue: start, run, fail ops; Engine's own API
//   coll_channel.hpp the Channel of one collective over UCP tagged messages
//   p2p.cpp          point-to-point ops: posted, then tracked to completion one by one
//   control.cpp      control messages: status queries and replies, aborts
//   timeouts.cpp     the reports of ops whose deadline passed
//   liveness.cpp     the keep-alive that notices dead peers within seconds
//   tags.hpp         the tag scheme that keeps all their messages apart
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "detail/backoff.hpp"
#include "detail/env.hpp"
#include "ucx/control.hpp"
#include "ucx/engine.hpp"

namespace cohort::comm::ucx::detail {

using Clock = std::chrono::steady_clock;

// A cohort::Error of backend "ucx" naming this communicator's rank and the source file (relative
// to the repository, from collectives/ on).
cohort::Error make_error(const char* file, int line, int rank, const std::string& why);

// "host vm, pid 4242": this process, as the keep-alive names a peer (liveness.cpp).
std::string whoami();

#define UCX_ERROR_PTR(rank, why) \
  std::make_exception_ptr(make_error(__FILE__, __LINE__, (rank), (why)))

// Thrown by CollChannel::wait when the op's deadline passes, or when a peer reports that its
// communicator failed; caught in Impl::start.
struct DeadlinePassed {};
struct PeerFailed {};
// Thrown by CollChannel::wait when a peer it waits for stopped answering keep-alives
// (liveness.cpp); caught in Impl::start.
struct PeerDead {
  int peer;
};

inline ucp_request_param_t host_param() {
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  prm.memory_type = UCS_MEMORY_TYPE_HOST;
  return prm;
}

// Receives always return a request: UCX 1.13.1 does not fill recv_info.tag_info when a receive
// completes immediately (measured: the length stays unset), and the received length is how a
// count mismatch between ranks is caught. ucp_tag_recv_request_test() reports it reliably.
inline ucp_request_param_t recv_param() {
  ucp_request_param_t prm = host_param();
  prm.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  return prm;
}

class CollChannel;

struct Engine::Impl final : Driver {
  Impl(const ProcessGroupInfo& info, std::shared_ptr<Store> s, Timeout timeout, const Tuning& t)
      : rank(info.rank),
        size(info.world_size),
        local_size(info.local_world_size),
        store(std::move(s)),
        default_timeout(timeout),
        tuning(t),
        oversubscribed(common::yield_when_idle(info.local_world_size)),
        check_fingerprints(common::collective_checks_from_env()) {}
  ~Impl() {
    for (auto& s : scratch) std::free(s.p);
  }

  // ---- fixed at creation ----
  const int rank, size, local_size;
  const std::shared_ptr<Store> store;
  const Timeout default_timeout;
  const Tuning tuning;
  // More ranks on this host than cores: waits yield the core almost at once (detail/backoff.hpp).
  const bool oversubscribed;
  // Every collective checks that all ranks issued the same one (COHORT_COLLECTIVE_CHECKS).
  const bool check_fingerprints;
  std::string prefix;  // "ucx/<n>/"

  // ---- shared with calling threads, under mu ----
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<OpState>> queue;
  bool stop = false;
  bool ready = false;
  std::exception_ptr setup_error;
  bool failed = false;  // written only by the driver (under mu)
  std::string failure;  // why, for errors of later ops
  std::thread thread;

  // ---- the driver: whoever holds drive_mu (the progress thread, or a caller in drive_until) ----
  // Lock order: drive_mu before mu. Everything from here down to `scratch` is the driver's.
  std::mutex drive_mu;
  // Callers inside drive_until: while there are any, the progress thread stays out of their way
  // (it sleeps instead of taking drive_mu), so a waiting caller gets the worker at once.
  std::atomic<int> callers_driving{0};
  // Whether submit() wakes the progress thread (detail/backoff.hpp).
  common::LazyWake wake{oversubscribed};
  bool torn_down = false;  // the worker is gone: callers no longer drive
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  std::vector<ucp_ep_h> eps;
  // Control messages' own endpoints (none to itself): a pong must not queue behind data
  // (liveness.cpp).
  std::vector<ucp_ep_h> ctl_eps;

  // Point-to-point ops posted to UCP and not completed yet. Each completes when its own message
  // is through, not in issue order: a rank may post sends with tags 0, 1, 2 and then receive the
  // peer's tag 2 first, and that receive must not wait for the sends (which wait for the peer's
  // later receives).
  struct Inflight {
    std::shared_ptr<OpState> op;
    void* req = nullptr;
    std::size_t bytes = 0;
    Clock::time_point deadline{};
  };
  std::vector<Inflight> inflight;
  std::unordered_map<std::uint64_t, std::uint32_t> sent_to, received_from;  // (peer, tag) -> n

  std::uint64_t started = 0;  // collectives started (the sequence number of the last one)
  bool busy = false;
  OpDesc last{};

  ControlMsg control_in{};
  void* control_req = nullptr;
  std::deque<std::pair<std::unique_ptr<ControlMsg>, void*>> control_out;
  std::uint64_t query_id = 0;
  std::vector<std::optional<ControlMsg>> replies;
  int peer_failure_rank = -1;  // set when a peer's kAbort arrives
  std::string peer_failure;
  std::string peer_failure_text() const {
    return "rank " + std::to_string(peer_failure_rank) + "'s communicator failed: " + peer_failure;
  }

  // ---- liveness.cpp: the keep-alive that notices dead peers within seconds ----
  // Each peer's "host pid", published in the store at setup (a dead rank cannot say it later).
  std::vector<std::string> whois;
  std::vector<Clock::time_point> heard;   // last control message from each peer
  std::vector<Clock::time_point> pinged;  // first unanswered ping to each peer (or epoch)
  std::vector<Clock::time_point> last_ping;  // the latest ping to each peer
  std::vector<std::optional<ControlMsg>> last_status;  // each peer's last pong
  Clock::duration dead_after{};  // COHORT_PEER_TIMEOUT_MS (0: never presume a peer dead)
  // Peers declared dead from outside (Communicator::declare_dead), with why; any thread writes.
  mutable std::mutex declared_mu;
  std::map<int, std::string> declared;
  std::atomic<bool> any_declared{false};
  bool is_declared_dead(int peer) const {
    if (!any_declared.load(std::memory_order_acquire)) return false;
    std::lock_guard<std::mutex> lock(declared_mu);
    return declared.count(peer) != 0;
  }
  Clock::time_point next_liveness_check{};
  void setup_liveness();
  void heard_from(int peer) {
    heard[static_cast<std::size_t>(peer)] = Clock::now();
    pinged[static_cast<std::size_t>(peer)] = Clock::time_point{};
  }
  // Pings the peers in `waiting_for` that have been silent for a while; returns the first one
  // whose ping has gone unanswered for dead_after, or -1. Cheap when called often: it looks at
  // the clock at most every few milliseconds.
  int check_liveness(const std::vector<int>& waiting_for);
  bool liveness_due() const {
    return dead_after != Clock::duration::zero() && Clock::now() >= next_liveness_check;
  }
  // "rank 1 (host vm, pid 4242) stopped answering: no reply to keep-alives for 3000 ms (presumed
  // dead); its last status, 3.4 s ago: ..."
  std::string dead_peer_text(int peer) const;

  struct Scratch {
    char* p = nullptr;
    std::size_t n = 0;
  } scratch[2];

  void main();
  void setup();
  void loop();
  void teardown();
  // At teardown: the "closed/<rank>" keys of the peers worth waiting for (alive).
  std::vector<std::string> live_peers_closed_keys();

  // Runs ops on the caller's thread until `op` is complete (Driver, op.hpp).
  void drive_until(OpState& op) override;
  void polled() override;
  // One turn of the driver (drive_mu held): starts the next queued op, if any, and runs progress
  // on the worker, the posted point-to-point ops and a peer's abort. `had_op`: an op was started;
  // `idle`: nothing queued or posted before the turn; `posted`: point-to-point ops still in flight
  // after it, or ops still queued behind the one started. Returns the number of events seen.
  unsigned drive_round(bool& had_op, bool& idle, bool& posted);
  void start(std::shared_ptr<OpState> op);
  void run_collective(CollChannel& ch, const OpArgs& d);
  void post_p2p(std::shared_ptr<OpState> op);
  unsigned poll_inflight();
  // Fails `culprit` (may be null) with `error` and every other unfinished or queued op as
  // aborted; the communicator refuses new ops from then on, and the other ranks are told
  // (kAbort). `culprit` by value: it may point into `inflight`.
  // Callers iterating `inflight` must stop: it is emptied.
  void fail(std::shared_ptr<OpState> culprit, std::exception_ptr error, const std::string& why);
  std::exception_ptr aborted(const OpDesc& d) const;

  // How long a failed op's requests are given to finish before they are let go (release()), and
  // how long a transport error waits for the peer's own verdict (coll_channel.hpp).
  static constexpr auto kDrainGrace = std::chrono::milliseconds(500);

  // A request of a failed op, to be let go by release().
  struct Letgo {
    void* req = nullptr;
    int peer = -1;
    bool recv = false;
  };
  // Lets go of a failed op's requests before the op's failure reaches its caller (who then frees
  // the buffers): cancels the receives, drives the worker for up to kDrainGrace until every
  // request is complete, and frees them. A receive cancelled before it matched completes at
  // once; a matched one, and a send the peer matched, complete within milliseconds while the
  // peer runs. One still in flight after the grace (its peer stopped mid-message: SIGSTOP, a
  // stalled host) would go on writing into, or reading from, a buffer that is no longer the
  // caller's: then the worker is quarantined. Sends to a peer declared dead are not waited for
  // (their buffers' owner keeps them, as DDP::rebind does).
  void release(const std::vector<Letgo>& reqs);
  // Set by release(): the worker is never progressed again (UCX copies data only inside
  // ucp_worker_progress, so nothing touches the callers' buffers), and teardown destroys it
  // without progressing it (worker_quarantine_teardown). The communicator has failed already.
  bool quarantined = false;
  void worker_quarantine_teardown();

  unsigned progress() { return quarantined ? 0 : ucp_worker_progress(worker) + poll_control(); }
  unsigned poll_control();
  void post_control_recv();
  void handle_control(const ControlMsg& m);
  void send_control(int peer, const ControlMsg& m);
  std::vector<std::optional<ControlMsg>> query(const std::vector<int>& peers,
                                               Clock::duration budget);
  std::string collective_timeout(const CollChannel& ch, const OpArgs& d);
  std::string p2p_timeout(const Inflight& f);
  std::string describe_peer(int peer, const ControlMsg& m) const;

  void* scratch_buffer(int slot, std::size_t bytes);
};

}  // namespace cohort::comm::ucx::detail
