// The progress thread of a UCX communicator and everything that touches UCP.
//
// Why one thread per communicator owns everything: UCP workers are cheapest in
// UCS_THREAD_MODE_SINGLE (no locks on the fast path), which requires that a single thread make
// every call on the context, worker and endpoints. That thread creates them, runs the ops handed
// over through a mutex-protected queue in issue order, and destroys them. Callers never touch UCP;
// they wait on their op's condition variable (op.cpp).
//
// How ops run: a collective runs to completion on the progress thread before the next op starts
// (its algorithm blocks in Channel::wait, which drives ucp_worker_progress), so collectives
// complete in issue order. Point-to-point ops are only posted and then tracked, each completing
// when its own message is through: sends followed by receives on both sides cannot deadlock, and
// neither can receives posted in another order than the peer's sends.
//
// Tags (64 bits) keep every message of every op apart, whatever the interleaving:
//   [63:62] kind: 0 collective, 1 point-to-point, 2 control
//   [61:46] source rank (UCP's tag_sender_mask)
//   collective: [45:26] op sequence number (mod 2^20)  [25:23] op kind  [22:0] step within the op
//   p2p:        [45:22] user tag (< 2^24)              [21:0] message number for (peer, tag)
// so a receive names exactly one message; none relies on UCX's matching order. The op kind keeps
// ranks that issued different collectives (a user error) from taking each other's messages: they
// wait, time out, and the report says which rank is in which op.
//
// Timeouts: every op has a deadline (start + its timeout). When it passes, the engine asks every
// other rank, over control messages that progress threads always answer (even when idle), which
// collective it has started, and the error names the op, the timeout, the ranks that have not
// entered it and the peers whose messages did not arrive. The communicator is then failed: queued
// and later ops fail at once, and the other ranks are told (kAbort), so that theirs fail too
// instead of each waiting out its own timeout.
#include "ucx/engine.hpp"

#include <sched.h>
#include <ucp/api/ucp.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "detail/wait.hpp"
#include "detail/work.hpp"
#include "ucx/algorithms.hpp"

namespace cohort::comm::ucx::detail {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

cohort::Error make_error(const char* file, int line, int rank, const std::string& why) {
  std::string f = file;
  const auto pos = f.rfind("/collectives/");
  if (pos != std::string::npos) f = f.substr(pos + 1);
  return cohort::Error(f, line, "", "ucx", rank, why);
}

#define UCX_ERROR_PTR(rank, why) \
  std::make_exception_ptr(make_error(__FILE__, __LINE__, (rank), (why)))

// The one check macro for UCX status codes, used only in this file (the backend's edge).
#define COHORT_CHECK_UCX(rank, call, ...)                                             \
  do {                                                                                \
    const ucs_status_t cohort_ucx_status_ = (call);                                   \
    if (cohort_ucx_status_ != UCS_OK)                                                 \
      COHORT_UCX_FAIL(rank, __VA_ARGS__,                                              \
                      ": " #call " failed: ", ucs_status_string(cohort_ucx_status_)); \
  } while (0)

// ---- tags ----
constexpr int kKindShift = 62;
constexpr int kSrcShift = 46;
constexpr int kSeqShift = 26;
constexpr int kOpKindShift = 23;
constexpr int kUserTagShift = 22;
constexpr std::uint64_t kCollective = 0, kPointToPoint = 1, kControl = 2;
constexpr std::uint64_t kKindMask = 3ull << kKindShift;
constexpr std::uint64_t kSrcMask = 0xffffull << kSrcShift;
constexpr std::uint64_t kExact = ~0ull;

std::uint64_t collective_tag(std::uint64_t seq, OpKind op, int src, std::uint32_t step) {
  return (kCollective << kKindShift) | (static_cast<std::uint64_t>(src) << kSrcShift) |
         ((seq & 0xfffffull) << kSeqShift) | (static_cast<std::uint64_t>(op) << kOpKindShift) |
         step;
}
std::uint64_t p2p_tag(int src, int tag, std::uint32_t n) {
  return (kPointToPoint << kKindShift) | (static_cast<std::uint64_t>(src) << kSrcShift) |
         (static_cast<std::uint64_t>(tag) << kUserTagShift) | (n & 0x3fffffu);
}
std::uint64_t control_tag(int src) {
  return (kControl << kKindShift) | (static_cast<std::uint64_t>(src) << kSrcShift);
}

// ---- control messages: timeout diagnostics and failure propagation ----
// kAbort: the sender's communicator failed (text says why); the receiver fails its own at once
// instead of hanging in its next op until that op's own timeout.
enum : std::uint32_t { kStatusQuery = 1, kStatusReply = 2, kAbort = 3 };
struct ControlMsg {
  std::uint32_t type = 0;
  std::int32_t src = -1;
  std::uint64_t query = 0;      // echoed in the reply
  std::uint64_t started = 0;    // collectives the replier has started
  std::uint32_t busy = 0;       // 1 while a collective runs on its progress thread
  std::uint32_t failed = 0;     // 1 once its communicator failed
  std::uint32_t last_kind = 0;  // its current or last collective: OpKind, count, dtype
  std::uint32_t last_dtype = 0;
  std::uint64_t last_count = 0;
  char text[256] = {};  // reply: that collective, described; abort: why
};

// How long an idle progress thread keeps polling before it sleeps, and how often a sleeping one
// wakes to poll the worker for control messages and wire-up traffic.
constexpr auto kIdleSpin = 100us;
constexpr auto kIdlePoll = 2ms;

// Thrown by CollChannel::wait when the op's deadline passes, or when a peer reports that its
// communicator failed; caught in Impl::start.
struct DeadlinePassed {};
struct PeerFailed {};

ucp_request_param_t host_param() {
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  prm.memory_type = UCS_MEMORY_TYPE_HOST;
  return prm;
}

// Receives always return a request: UCX 1.13.1 does not fill recv_info.tag_info when a receive
// completes immediately (measured: the length stays unset), and the received length is how a
// count mismatch between ranks is caught. ucp_tag_recv_request_test() reports it reliably.
ucp_request_param_t recv_param() {
  ucp_request_param_t prm = host_param();
  prm.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  return prm;
}

}  // namespace

[[noreturn]] void throw_ucx_error(const char* file, int line, int rank, const std::string& why) {
  throw make_error(file, line, rank, why);
}

class CollChannel;

struct Engine::Impl {
  Impl(const ProcessGroupInfo& info, std::shared_ptr<Store> s, Timeout timeout, const Tuning& t)
      : rank(info.rank),
        size(info.world_size),
        local_size(info.local_world_size),
        store(std::move(s)),
        default_timeout(timeout),
        tuning(t),
        oversubscribed(info.local_world_size > common::usable_cpus()) {}
  ~Impl() {
    for (auto& s : scratch) std::free(s.p);
  }

  // ---- fixed at creation ----
  const int rank, size, local_size;
  const std::shared_ptr<Store> store;
  const Timeout default_timeout;
  const Tuning tuning;
  // More ranks on this host than cores: waits yield the core almost at once (detail/wait.hpp).
  const bool oversubscribed;
  std::string prefix;  // "ucx/<n>/"

  // ---- shared with calling threads, under mu ----
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<OpState>> queue;
  bool stop = false;
  bool ready = false;
  std::exception_ptr setup_error;
  bool failed = false;  // written only by the progress thread (under mu)
  std::string failure;  // why, for errors of later ops
  std::thread thread;

  // ---- progress thread only ----
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  std::vector<ucp_ep_h> eps;

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

  unsigned progress() { return ucp_worker_progress(worker) + poll_control(); }
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

// The Channel of one collective: its tags carry the op's sequence number.
class CollChannel final : public Channel {
 public:
  struct Pending {
    void* req = nullptr;
    int peer = -1;
    bool recv = false;
    bool done = false;
    std::size_t bytes = 0;
  };

  // d.seq is the op's sequence number (set by Impl::start).
  CollChannel(Engine::Impl& e, const OpArgs& d, Clock::time_point deadline)
      : e_(e), desc_(d), deadline_(deadline) {}
  ~CollChannel() override { abandon(); }

  int rank() const override { return e_.rank; }
  int size() const override { return e_.size; }

  Handle isend(int peer, const void* buf, std::size_t bytes, std::uint32_t step) override {
    ucp_request_param_t prm = host_param();
    void* r = ucp_tag_send_nbx(e_.eps[static_cast<std::size_t>(peer)], buf, bytes,
                               collective_tag(desc_.seq, desc_.kind, e_.rank, step), &prm);
    if (UCS_PTR_IS_ERR(r)) transport_failure(peer, false, UCS_PTR_STATUS(r));
    pending_.push_back(Pending{r, peer, false, r == nullptr, bytes});
    return pending_.size() - 1;
  }

  Handle irecv(int peer, void* buf, std::size_t bytes, std::uint32_t step) override {
    ucp_request_param_t prm = recv_param();
    void* r = ucp_tag_recv_nbx(e_.worker, buf, bytes, collective_tag(desc_.seq, desc_.kind, peer, step),
                               kExact, &prm);
    if (UCS_PTR_IS_ERR(r)) transport_failure(peer, true, UCS_PTR_STATUS(r));
    pending_.push_back(Pending{r, peer, true, false, bytes});
    return pending_.size() - 1;
  }

  void wait(Handle h) override {
    common::Backoff backoff(e_.oversubscribed);
    for (unsigned polls = 1; !test(pending_[h]); ++polls) {
      if (e_.progress() != 0)
        backoff.reset();
      else
        backoff.pause();
      if (e_.peer_failure_rank >= 0) throw PeerFailed{};
      if (polls % 16 == 0 && Clock::now() > deadline_) throw DeadlinePassed{};
    }
  }

  void wait_all() override {
    for (Handle h = 0; h < pending_.size(); ++h) wait(h);
  }

  void* scratch(int slot, std::size_t bytes) override { return e_.scratch_buffer(slot, bytes); }

  // Cancels the receives still outstanding and lets go of every request (UCP releases a send's
  // request when the send completes). Idempotent.
  void abandon() {
    for (auto& q : pending_) {
      if (q.done || q.req == nullptr) continue;
      if (q.recv) ucp_request_cancel(e_.worker, q.req);
      ucp_request_free(q.req);
      q.req = nullptr;
      q.done = true;
    }
  }

  // Peers whose messages to this rank have not arrived / that have not taken this rank's data.
  std::vector<int> silent_peers(bool recv) const {
    std::vector<int> out;
    for (const auto& q : pending_)
      if (!q.done && q.recv == recv && std::find(out.begin(), out.end(), q.peer) == out.end())
        out.push_back(q.peer);
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  bool test(Pending& q) {
    if (q.done) return true;
    ucs_status_t st;
    ucp_tag_recv_info_t info{};
    if (q.recv)
      st = ucp_tag_recv_request_test(q.req, &info);
    else
      st = ucp_request_check_status(q.req);
    if (st == UCS_INPROGRESS) return false;
    ucp_request_free(q.req);
    q.req = nullptr;
    q.done = true;
    if (st != UCS_OK) transport_failure(q.peer, q.recv, st);
    if (q.recv) check_length(q.peer, info.length, q.bytes);
    return true;
  }

  void check_length(int peer, std::size_t got, std::size_t want) const {
    if (got != want)
      COHORT_UCX_FAIL(e_.rank, desc_.str(), ": rank ", peer, " sent a ", got,
                      "-byte message where ", want,
                      " bytes were expected (do all ranks pass the same count and dtype?)");
  }

  [[noreturn]] void transport_failure(int peer, bool recv, ucs_status_t st) const {
    if (st == UCS_ERR_MESSAGE_TRUNCATED)
      COHORT_UCX_FAIL(e_.rank, desc_.str(), ": rank ", peer,
                      " sent a message longer than the expected bytes (do all ranks pass the same "
                      "count and dtype?)");
    COHORT_UCX_FAIL(e_.rank, desc_.str(), ": ", recv ? "receiving from" : "sending to",
                    " rank ", peer, " failed: ", ucs_status_string(st));
  }

  Engine::Impl& e_;
  const OpArgs& desc_;
  const Clock::time_point deadline_;
  std::vector<Pending> pending_;
};

// ---------------------------------------------------------------------------------------------
// life cycle

void Engine::Impl::main() {
  try {
    setup();
  } catch (...) {
    {
      std::lock_guard<std::mutex> lk(mu);
      failed = true;  // teardown: no flush, no waiting for peers
      failure = "setup failed";
    }
    teardown();
    std::lock_guard<std::mutex> lk(mu);
    setup_error = std::current_exception();
    cv.notify_all();
    return;
  }
  {
    std::lock_guard<std::mutex> lk(mu);
    ready = true;
  }
  cv.notify_all();
  loop();
  teardown();
}

void Engine::Impl::setup() {
  // Each rank counts the UCX communicators it creates on this store; ranks create them in the
  // same order, so the count names the same communicator on every rank.
  if (store)
    prefix = "ucx/" + std::to_string(store->add("ucx/created/" + std::to_string(rank), 1)) + "/";
  else if (size > 1)
    COHORT_UCX_FAIL(rank, "a group of ", size, " ranks needs a Store to exchange worker addresses");

  ucp_config_t* config = nullptr;  // reads UCX_* variables (UCX_TLS, UCX_NET_DEVICES, ...)
  COHORT_CHECK_UCX(rank, ucp_config_read(nullptr, nullptr, &config),
                   "reading the UCX configuration");
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_TAG_SENDER_MASK |
                      UCP_PARAM_FIELD_MT_WORKERS_SHARED | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS |
                      UCP_PARAM_FIELD_ESTIMATED_NUM_PPN;
  params.features = UCP_FEATURE_TAG;
  params.tag_sender_mask = kSrcMask;
  params.mt_workers_shared = 0;
  params.estimated_num_eps = static_cast<std::size_t>(size);
  params.estimated_num_ppn = static_cast<std::size_t>(std::max(1, local_size));
  const ucs_status_t st = ucp_init(&params, config, &context);
  ucp_config_release(config);
  COHORT_CHECK_UCX(rank, st, "creating the UCP context");

  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  COHORT_CHECK_UCX(rank, ucp_worker_create(context, &wp, &worker), "creating the UCP worker");

  ucp_address_t* address = nullptr;
  std::size_t address_len = 0;
  COHORT_CHECK_UCX(rank, ucp_worker_get_address(worker, &address, &address_len),
                   "getting the worker address");
  const auto* a = reinterpret_cast<const std::uint8_t*>(address);
  std::vector<std::uint8_t> mine(a, a + address_len);
  ucp_worker_release_address(worker, address);
  if (store) store->set(prefix + "addr/" + std::to_string(rank), mine);

  eps.assign(static_cast<std::size_t>(size), nullptr);
  for (int p = 0; p < size; ++p) {
    const auto theirs =
        p == rank ? mine : store->get(prefix + "addr/" + std::to_string(p), default_timeout);
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.address = reinterpret_cast<const ucp_address_t*>(theirs.data());
    ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    COHORT_CHECK_UCX(rank, ucp_ep_create(worker, &ep, &eps[static_cast<std::size_t>(p)]),
                     "connecting to rank ", p);
  }
  replies.assign(static_cast<std::size_t>(size), std::nullopt);
  post_control_recv();
}

void Engine::Impl::loop() {
  common::Backoff backoff(oversubscribed);
  auto last_active = Clock::now();
  for (;;) {
    std::shared_ptr<OpState> op;
    bool idle = false;
    {
      std::unique_lock<std::mutex> lk(mu);
      if (queue.empty() && inflight.empty()) {
        if (stop) break;
        idle = true;
        // Nothing to do. The caller's next op usually follows within microseconds, and waking a
        // sleeping thread costs tens of microseconds on a virtual machine, so keep polling
        // (yielding the core) for a moment; then sleep until an op arrives, waking now and then
        // to answer status queries and serve peers' wire-up.
        if (Clock::now() - last_active > kIdleSpin) cv.wait_for(lk, kIdlePoll);
      }
      if (!queue.empty()) {
        op = std::move(queue.front());
        queue.pop_front();
      }
    }
    const bool had_op = op != nullptr;
    if (op) start(std::move(op));
    unsigned events = progress() + poll_inflight();
    if (peer_failure_rank >= 0 && !failed) {
      const std::string why =
          "aborted on rank " + std::to_string(rank) + ": " + peer_failure_text();
      fail(nullptr, UCX_ERROR_PTR(rank, why), why);
      ++events;
    }
    if (events != 0 || had_op) {
      backoff.reset();
      last_active = Clock::now();
    } else if (!inflight.empty()) {
      backoff.pause();
    } else if (idle) {
      sched_yield();
    }
  }
}

void Engine::Impl::teardown() {
  bool healthy;
  {
    std::lock_guard<std::mutex> lk(mu);
    healthy = !failed;
  }
  if (worker != nullptr) {
    // Let control messages already sent (an abort, status replies) leave first: a forced close
    // would drop them.
    const auto out_limit = Clock::now() + 200ms;
    while (!control_out.empty() && Clock::now() < out_limit)
      if (progress() == 0) std::this_thread::sleep_for(20us);
    auto key = [&](const char* what, int p) { return prefix + what + std::to_string(p); };
    std::vector<std::string> closed_keys;  // the peers this rank waits for, below
    if (!prefix.empty()) {
      try {
        store->set(key("closing/", rank), {});
        if (healthy) closed_keys = live_peers_closed_keys();
      } catch (...) {
        // The store may already be gone at exit; closing goes on without it.
      }
    }
    std::vector<void*> closing;
    for (auto& ep : eps) {
      if (ep == nullptr) continue;
      ucp_request_param_t prm{};
      prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      prm.flags = healthy ? 0 : UCP_EP_CLOSE_FLAG_FORCE;  // flush what is in flight when healthy
      void* r = ucp_ep_close_nbx(ep, &prm);
      if (UCS_PTR_IS_PTR(r)) closing.push_back(r);
      ep = nullptr;
    }
    const auto close_limit = Clock::now() + 5s;
    for (void* r : closing) {
      while (ucp_request_check_status(r) == UCS_INPROGRESS && Clock::now() < close_limit) {
        if (ucp_worker_progress(worker) == 0) std::this_thread::sleep_for(20us);
      }
      ucp_request_free(r);
    }
    // Keep serving peers until every live rank has closed its endpoints: a peer may still be
    // flushing towards this worker, and tearing it down under them is a transport error on
    // their side (the same fence Open MPI's UCX layer does after disconnecting).
    if (!prefix.empty()) {
      try {
        store->set(key("closed/", rank), {});
        const auto limit = Clock::now() + std::min<Clock::duration>(default_timeout, 30s);
        while (!closed_keys.empty() && !store->check(closed_keys) && Clock::now() < limit) {
          const auto poll_until = Clock::now() + 2ms;
          while (Clock::now() < poll_until)
            if (progress() == 0) std::this_thread::sleep_for(50us);
        }
      } catch (...) {
      }
    }
    if (control_req != nullptr) {
      ucp_request_cancel(worker, control_req);
      ucp_request_free(control_req);
      control_req = nullptr;
    }
    for (auto& o : control_out) ucp_request_free(o.second);
    control_out.clear();
    ucp_worker_destroy(worker);
    worker = nullptr;
  }
  if (context != nullptr) {
    ucp_cleanup(context);
    context = nullptr;
  }
}

std::vector<std::string> Engine::Impl::live_peers_closed_keys() {
  // A peer that has announced "closing" is alive and about to close; one that has not is either
  // still working (its progress thread answers a status query within milliseconds) or gone (a
  // crashed process never answers, and waiting for it would only delay this exit).
  auto key = [&](const char* what, int p) { return prefix + what + std::to_string(p); };
  std::vector<int> live, unknown;
  for (int p = 0; p < size; ++p)
    if (p != rank) (store->check({key("closing/", p)}) ? live : unknown).push_back(p);
  if (!unknown.empty()) {
    const auto status = query(unknown, 300ms);
    for (int p : unknown)
      if (status[static_cast<std::size_t>(p)] || store->check({key("closing/", p)}))
        live.push_back(p);
  }
  std::vector<std::string> keys;
  for (int p : live) keys.push_back(key("closed/", p));
  return keys;
}

// ---------------------------------------------------------------------------------------------
// running ops

void Engine::Impl::start(std::shared_ptr<OpState> op) {
  if (failed) {  // only this thread writes `failed`
    op->complete(aborted(op->args));
    return;
  }
  if (!op->args.collective()) {
    post_p2p(std::move(op));
    return;
  }
  OpArgs d = op->args;
  d.seq = ++started;
  last = d;
  busy = true;

  CollChannel ch(*this, d, Clock::now() + d.timeout);
  std::string why;
  std::exception_ptr error;
  try {
    run_collective(ch, d);
  } catch (const DeadlinePassed&) {
    why = collective_timeout(ch, d);
  } catch (const PeerFailed&) {
    why =
        d.str() + " aborted on rank " + std::to_string(rank) + ": " + peer_failure_text();
  } catch (const cohort::Error& e) {
    why = e.why();
    error = std::current_exception();
  } catch (const std::exception& e) {
    why = d.str() + ": " + e.what();
  }
  busy = false;
  if (why.empty()) {
    op->complete(nullptr);
    return;
  }
  ch.abandon();
  fail(op, error ? error : UCX_ERROR_PTR(rank, why), why);
}

void Engine::Impl::run_collective(CollChannel& ch, const OpArgs& d) {
  if (d.kind != OpKind::barrier && d.count == 0) return;  // a no-op on every rank alike
  switch (d.kind) {
    case OpKind::allreduce:
      allreduce(ch, tuning, d.send, d.recv, d.count, d.dtype, d.op);
      return;
    case OpKind::broadcast:
      broadcast(ch, tuning, d.recv, d.count, d.dtype, d.peer);
      return;
    case OpKind::allgather:
      allgather_ring(ch, tuning.chunk_bytes, d.send, d.recv, d.count, d.dtype);
      return;
    case OpKind::reduce_scatter:
      reduce_scatter_ring(ch, tuning.chunk_bytes, d.send, d.recv, d.count, d.dtype, d.op);
      return;
    case OpKind::barrier:
      if (size > 1) barrier_dissemination(ch);
      return;
    case OpKind::send:
    case OpKind::recv:
      break;
  }
  COHORT_UCX_FAIL(rank, "internal: ", op_kind_name(d.kind), " is not a collective");
}

void Engine::Impl::post_p2p(std::shared_ptr<OpState> op) {
  const OpArgs& d = op->args;
  Inflight f;
  f.op = op;
  f.bytes = d.count * dtype_size(d.dtype);
  f.deadline = Clock::now() + d.timeout;
  if (f.bytes == 0) {  // both sides skip it, so the message numbers stay in step
    op->complete(nullptr);
    return;
  }
  const std::uint64_t key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(d.peer)) << 32) |
                            static_cast<std::uint32_t>(d.tag);
  void* r;
  if (d.kind == OpKind::send) {
    const std::uint32_t n = sent_to[key]++;
    ucp_request_param_t prm = host_param();
    r = ucp_tag_send_nbx(eps[static_cast<std::size_t>(d.peer)], d.send, f.bytes,
                         p2p_tag(rank, d.tag, n), &prm);
  } else {
    const std::uint32_t n = received_from[key]++;
    ucp_request_param_t prm = recv_param();
    r = ucp_tag_recv_nbx(worker, d.recv, f.bytes, p2p_tag(d.peer, d.tag, n), kExact, &prm);
  }
  if (UCS_PTR_IS_ERR(r)) {
    const std::string why =
        d.str() + ": UCX refused it: " + ucs_status_string(UCS_PTR_STATUS(r));
    fail(op, UCX_ERROR_PTR(rank, why), why);
  } else if (r == nullptr) {
    op->complete(nullptr);  // a send done at once (receives always return a request)
  } else {
    f.req = r;
    inflight.push_back(std::move(f));
  }
}

unsigned Engine::Impl::poll_inflight() {
  unsigned events = 0;
  std::optional<Clock::time_point> now;
  for (std::size_t i = 0; i < inflight.size();) {
    Inflight& f = inflight[i];
    const bool recv = f.op->args.kind == OpKind::recv;
    ucp_tag_recv_info_t info{};
    const ucs_status_t st =
        recv ? ucp_tag_recv_request_test(f.req, &info) : ucp_request_check_status(f.req);
    if (st == UCS_INPROGRESS) {
      if (!now) now = Clock::now();
      if (*now > f.deadline) {
        const std::string why = p2p_timeout(f);
        fail(f.op, UCX_ERROR_PTR(rank, why), why);  // empties `inflight`
        return events + 1;
      }
      ++i;
      continue;
    }
    ucp_request_free(f.req);
    ++events;
    std::string why;
    if (st == UCS_ERR_MESSAGE_TRUNCATED)
      why = f.op->args.str() + ": the message was longer than " + std::to_string(f.bytes) +
            " bytes (do both sides pass the same count and dtype?)";
    else if (st != UCS_OK)
      why = f.op->args.str() + ": " + ucs_status_string(st);
    else if (recv && info.length != f.bytes)
      why = f.op->args.str() + ": the message had " + std::to_string(info.length) +
            " bytes, not " + std::to_string(f.bytes) +
            " (do both sides pass the same count and dtype?)";
    std::shared_ptr<OpState> op = std::move(f.op);
    inflight[i] = std::move(inflight.back());  // `f` is gone from here on
    inflight.pop_back();
    if (!why.empty()) {
      fail(op, UCX_ERROR_PTR(rank, why), why);
      return events;
    }
    op->complete(nullptr);
  }
  return events;
}

std::exception_ptr Engine::Impl::aborted(const OpDesc& d) const {
  return UCX_ERROR_PTR(
      rank, d.str() +
                " was not run: the communicator is unusable after an earlier failure: " + failure);
}

void Engine::Impl::fail(std::shared_ptr<OpState> culprit, std::exception_ptr error,
                        const std::string& why) {
  std::deque<std::shared_ptr<OpState>> queued;
  bool first = false;
  {
    std::lock_guard<std::mutex> lk(mu);
    if (!failed) {
      failed = true;
      failure = why;
      first = true;
    }
    queued.swap(queue);
  }
  std::vector<Inflight> posted;
  posted.swap(inflight);
  for (auto& f : posted) {
    if (f.op->args.kind == OpKind::recv) ucp_request_cancel(worker, f.req);
    ucp_request_free(f.req);  // a send still in flight is released when UCP is done with it
    if (f.op != culprit) f.op->complete(aborted(f.op->args));
  }
  if (culprit) culprit->complete(error);
  for (auto& q : queued) q->complete(aborted(q->args));
  // Tell the others, unless this failure came from one of them (its origin told everybody).
  if (first && peer_failure_rank < 0) {
    ControlMsg m;
    m.type = kAbort;
    m.src = rank;
    std::strncpy(m.text, why.c_str(), sizeof(m.text) - 1);
    for (int p = 0; p < size; ++p)
      if (p != rank) send_control(p, m);
  }
}

// ---------------------------------------------------------------------------------------------
// control messages and timeout reports

void Engine::Impl::post_control_recv() {
  ucp_request_param_t prm = recv_param();
  void* r =
      ucp_tag_recv_nbx(worker, &control_in, sizeof(ControlMsg), control_tag(0), kKindMask, &prm);
  control_req = UCS_PTR_IS_ERR(r) ? nullptr : r;  // diagnostics only: never fatal
}

unsigned Engine::Impl::poll_control() {
  while (!control_out.empty() &&
         ucp_request_check_status(control_out.front().second) != UCS_INPROGRESS) {
    ucp_request_free(control_out.front().second);
    control_out.pop_front();
  }
  if (control_req == nullptr) return 0;
  ucp_tag_recv_info_t info{};
  const ucs_status_t st = ucp_tag_recv_request_test(control_req, &info);
  if (st == UCS_INPROGRESS) return 0;
  ucp_request_free(control_req);
  control_req = nullptr;
  if (st == UCS_OK && info.length == sizeof(ControlMsg)) {
    const ControlMsg m = control_in;
    handle_control(m);
  }
  post_control_recv();
  return 1;
}

void Engine::Impl::handle_control(const ControlMsg& m) {
  if (m.src < 0 || m.src >= size) return;
  if (m.type == kStatusQuery) {
    ControlMsg reply;
    reply.type = kStatusReply;
    reply.src = rank;
    reply.query = m.query;
    reply.started = started;
    reply.busy = busy ? 1 : 0;
    reply.failed = failed ? 1 : 0;
    reply.last_kind = static_cast<std::uint32_t>(last.kind);
    reply.last_dtype = static_cast<std::uint32_t>(last.dtype);
    reply.last_count = last.count;
    const std::string what = started == 0 ? std::string("none") : last.str();
    std::strncpy(reply.text, what.c_str(), sizeof(reply.text) - 1);
    send_control(m.src, reply);
  } else if (m.type == kStatusReply && m.query == query_id) {
    replies[static_cast<std::size_t>(m.src)] = m;
  } else if (m.type == kAbort && !failed && peer_failure_rank < 0) {
    // Acted on by the op waiting now (CollChannel::wait) or by the idle loop.
    peer_failure_rank = m.src;
    peer_failure = std::string(m.text, strnlen(m.text, sizeof(m.text)));
  }
}

void Engine::Impl::send_control(int peer, const ControlMsg& m) {
  ucp_ep_h ep = eps[static_cast<std::size_t>(peer)];
  if (ep == nullptr) return;
  auto msg = std::make_unique<ControlMsg>(m);
  ucp_request_param_t prm = host_param();
  void* r = ucp_tag_send_nbx(ep, msg.get(), sizeof(ControlMsg), control_tag(rank), &prm);
  if (UCS_PTR_IS_PTR(r)) control_out.emplace_back(std::move(msg), r);
}

std::vector<std::optional<ControlMsg>> Engine::Impl::query(const std::vector<int>& peers,
                                                           Clock::duration budget) {
  ++query_id;
  replies.assign(static_cast<std::size_t>(size), std::nullopt);
  ControlMsg q;
  q.type = kStatusQuery;
  q.src = rank;
  q.query = query_id;
  for (int p : peers) send_control(p, q);
  const auto limit = Clock::now() + budget;
  common::Backoff backoff(oversubscribed);
  auto all_in = [&] {
    for (int p : peers)
      if (!replies[static_cast<std::size_t>(p)]) return false;
    return true;
  };
  while (!all_in() && Clock::now() < limit) {
    if (progress() != 0)
      backoff.reset();
    else
      backoff.pause();
  }
  auto out = replies;
  ++query_id;  // late replies to this query are dropped
  return out;
}

std::string Engine::Impl::describe_peer(int peer, const ControlMsg& m) const {
  std::ostringstream os;
  os << "rank " << peer << ": " << m.started << " collective(s) started, the last "
     << (m.started == 0 ? std::string("none") : std::string(m.text))
     << (m.failed ? ", communicator failed" : (m.busy ? ", running" : ", idle"));
  return os.str();
}

std::string Engine::Impl::collective_timeout(const CollChannel& ch, const OpArgs& d) {
  const std::uint64_t seq = d.seq;
  const std::vector<int> silent = ch.silent_peers(true);
  const std::vector<int> not_taken = ch.silent_peers(false);
  std::vector<int> others;
  for (int p = 0; p < size; ++p)
    if (p != rank) others.push_back(p);
  const auto budget = std::clamp<Clock::duration>(d.timeout, 100ms, 1000ms);
  const auto status = query(others, budget);

  std::vector<int> absent, other_op, no_answer;
  std::ostringstream details;
  for (int p : others) {
    const auto& s = status[static_cast<std::size_t>(p)];
    if (!s) {
      no_answer.push_back(p);
      continue;
    }
    if (s->started < seq) {  // it has not entered this one
      absent.push_back(p);
      details << "; " << describe_peer(p, *s);
    } else if (s->started == seq &&
               (s->last_kind != static_cast<std::uint32_t>(d.kind) || s->last_count != d.count ||
                s->last_dtype != static_cast<std::uint32_t>(d.dtype))) {
      other_op.push_back(p);  // its op #seq is a different one
      details << "; " << describe_peer(p, *s);
    }
  }
  std::ostringstream os;
  os << d.str() << " timed out after " << common::format_timeout(d.timeout) << " on rank "
     << rank;
  if (!absent.empty()) os << "; did not arrive: " << common::format_ranks(absent);
  if (!no_answer.empty())
    os << "; did not answer a status query (hung or gone): " << common::format_ranks(no_answer);
  if (!other_op.empty())
    os << "; issued a different collective as #" << seq << " (all ranks must issue the same ops "
       << "in the same order): " << common::format_ranks(other_op);
  if (absent.empty() && no_answer.empty() && other_op.empty()) os << "; every rank entered it";
  if (!silent.empty())
    os << "; messages that did not arrive: from " << common::format_ranks(silent);
  if (!not_taken.empty()) os << "; sends not taken by " << common::format_ranks(not_taken);
  os << details.str();
  return os.str();
}

std::string Engine::Impl::p2p_timeout(const Inflight& f) {
  const OpArgs& d = f.op->args;
  std::ostringstream os;
  os << d.str() << " timed out after " << common::format_timeout(d.timeout) << " on rank "
     << rank << ": ";
  if (d.kind == OpKind::recv)
    os << "no message from rank " << d.peer << " arrived";
  else
    os << "rank " << d.peer << " did not receive it (no matching recv)";
  if (d.peer != rank) {
    const auto status = query({d.peer}, std::clamp<Clock::duration>(d.timeout, 100ms, 1000ms));
    const auto& s = status[static_cast<std::size_t>(d.peer)];
    if (s)
      os << "; " << describe_peer(d.peer, *s);
    else
      os << "; rank " << d.peer << " did not answer a status query (hung or gone)";
  }
  return os.str();
}

void* Engine::Impl::scratch_buffer(int slot, std::size_t bytes) {
  Scratch& s = scratch[slot];
  if (s.p == nullptr || s.n < bytes) {
    std::free(s.p);
    const std::size_t n = std::max<std::size_t>(64, (bytes + 63) / 64 * 64);
    s.p = static_cast<char*>(std::aligned_alloc(64, n));
    if (s.p == nullptr) {
      s.n = 0;
      COHORT_UCX_FAIL(rank, "out of memory allocating ", n, " bytes of scratch");
    }
    s.n = n;
  }
  return s.p;
}

// ---------------------------------------------------------------------------------------------
// Engine

Engine::Engine(const ProcessGroupInfo& info, std::shared_ptr<Store> store, Timeout default_timeout,
               const Tuning& tuning)
    : impl_(std::make_unique<Impl>(info, std::move(store), default_timeout, tuning)) {
  Impl& e = *impl_;
  e.thread = std::thread([&e] { e.main(); });
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lk(e.mu);
    e.cv.wait(lk, [&] { return e.ready || e.setup_error; });
    error = e.setup_error;
  }
  if (error) {
    e.thread.join();
    std::rethrow_exception(error);
  }
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  impl_->thread.join();
}

int Engine::rank() const { return impl_->rank; }
int Engine::size() const { return impl_->size; }
Timeout Engine::default_timeout() const { return impl_->default_timeout; }

void Engine::submit(std::shared_ptr<OpState> op) {
  Impl& e = *impl_;
  {
    std::lock_guard<std::mutex> lk(e.mu);
    if (e.failed)
      COHORT_UCX_FAIL(e.rank, op->args.str(),
                      " refused: the communicator is unusable after an earlier failure (",
                      e.failure, "); create a new communicator");
    e.queue.push_back(std::move(op));
  }
  e.cv.notify_one();
}

bool ucx_usable(std::string* why_not) {
  static const std::string reason = [] {
    ucp_config_t* config = nullptr;
    ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
    if (st != UCS_OK) return std::string("ucp_config_read failed: ") + ucs_status_string(st);
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG;
    ucp_context_h context = nullptr;
    st = ucp_init(&params, config, &context);
    ucp_config_release(config);
    if (st != UCS_OK) return std::string("ucp_init failed: ") + ucs_status_string(st);
    ucp_cleanup(context);
    return std::string();
  }();
  if (!reason.empty() && why_not != nullptr) *why_not = reason;
  return reason.empty();
}

}  // namespace cohort::comm::ucx::detail
