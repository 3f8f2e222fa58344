// The progress thread of one engine and its queue: Engine's own API (constructor, submit,
// destructor) on the callers' side, main/loop/start/fail on the driver's side, and drive_until,
// through which a waiting caller becomes the driver.
//
// How ops run: a collective runs to completion before the next op starts (its algorithm blocks in
// CollChannel::wait, which drives ucp_worker_progress), so collectives complete in issue order.
// Point-to-point ops are only posted and then tracked (p2p.cpp), each completing when its own
// message is through: sends followed by receives on both sides cannot deadlock, and neither can
// receives posted in another order than the peer's sends.
//
// Who runs them: whoever holds drive_mu. A caller that waits for an op takes it and runs the
// queue itself until its op is complete; meanwhile the progress thread sleeps. Ops nobody waits
// for are run by the progress thread. Measured on 2 ranks (docs/benchmarks/allreduce.md): 8-512
// byte all-reduces handed to the progress thread took 2.6-8.8 us; run by the waiting caller,
// 0.8-1.2 us.
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "detail/backoff.hpp"
#include "ucx/algorithms.hpp"
#include "ucx/coll_channel.hpp"
#include "ucx/engine_impl.hpp"

namespace cohort::comm::ucx::detail {

using namespace std::chrono_literals;

cohort::Error make_error(const char* file, int line, int rank, const std::string& why) {
  std::string f = file;
  const auto pos = f.rfind("/collectives/");
  if (pos != std::string::npos) f = f.substr(pos + 1);
  return cohort::Error(f, line, "", "ucx", rank, why);
}

[[noreturn]] void throw_ucx_error(const char* file, int line, int rank, const std::string& why) {
  throw make_error(file, line, rank, why);
}

namespace {
// How long an idle progress thread keeps polling before it sleeps, and how often a sleeping one
// wakes to poll the worker for control messages and wire-up traffic.
constexpr auto kIdleSpin = 100us;
constexpr auto kIdlePoll = 2ms;
}  // namespace

void Engine::Impl::main() {
  std::unique_lock<std::mutex> drive(drive_mu);  // setup and teardown run under it too
  try {
    setup();
  } catch (...) {
    {
      std::lock_guard<std::mutex> lk(mu);
      failed = true;  // teardown: no flush, no waiting for peers
      failure = "setup failed";
    }
    teardown();
    torn_down = true;
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
  drive.unlock();
  loop();
  drive.lock();
  teardown();
  torn_down = true;
}

unsigned Engine::Impl::drive_round(bool& had_op, bool& idle, bool& posted) {
  std::shared_ptr<OpState> op;
  bool more_queued = false;
  {
    std::lock_guard<std::mutex> lk(mu);
    idle = queue.empty() && inflight.empty();
    if (!queue.empty()) {
      op = std::move(queue.front());
      queue.pop_front();
    }
    more_queued = !queue.empty();
  }
  had_op = op != nullptr;
  if (op) start(std::move(op));
  unsigned events = progress() + poll_inflight();
  if (peer_failure_rank >= 0 && !failed) {
    const std::string why = "aborted on rank " + std::to_string(rank) + ": " + peer_failure_text();
    fail(nullptr, UCX_ERROR_PTR(rank, why), why);
    ++events;
  }
  posted = more_queued || !inflight.empty();
  return events;
}

void Engine::Impl::loop() {
  common::Backoff backoff(oversubscribed);
  auto last_active = Clock::now();
  for (;;) {
    if (callers_driving.load(std::memory_order_acquire) > 0) {
      // A caller drives (drive_until): stay off the worker and the core until it leaves; it
      // wakes this thread if it leaves work behind, and the 2 ms timeout keeps control messages
      // answered should a caller drive for long without polling (it polls; this is a backstop).
      std::unique_lock<std::mutex> lk(mu);
      cv.wait_for(lk, kIdlePoll, [&] { return callers_driving.load() == 0; });
      continue;
    }
    bool had_op = false, idle = false, posted = false;
    unsigned events = 0;
    {
      std::lock_guard<std::mutex> drive(drive_mu);
      {
        std::lock_guard<std::mutex> lk(mu);
        if (stop && queue.empty() && inflight.empty()) return;
      }
      events = drive_round(had_op, idle, posted);
    }
    if (events != 0 || had_op) {
      backoff.reset();
      last_active = Clock::now();
    } else if (posted) {
      backoff.pause();
    } else if (idle) {
      // Nothing to do. An op issued without being waited for usually follows within
      // microseconds, and waking a sleeping thread costs tens of microseconds on a virtual
      // machine, so keep polling (yielding the core) for a moment; then sleep until an op
      // arrives, waking now and then to answer status queries and serve peers' wire-up.
      if (Clock::now() - last_active > kIdleSpin) {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait_for(lk, kIdlePoll, [&] {
          return !queue.empty() || stop || callers_driving.load() > 0;
        });
      } else {
        sched_yield();
      }
    }
  }
}

void Engine::Impl::polled() {
  if (wake.polled()) cv.notify_one();
}

void Engine::Impl::drive_until(OpState& op) {
  callers_driving.fetch_add(1, std::memory_order_acq_rel);
  wake.driving();
  common::Backoff backoff(oversubscribed);
  bool left_work = false;
  for (;;) {
    bool had_op = false, idle = false, posted = false;
    unsigned events = 0;
    {
      std::lock_guard<std::mutex> drive(drive_mu);
      if (torn_down || op.completed()) break;
      events = drive_round(had_op, idle, posted);
      if (op.completed()) {
        // Ops queued behind this one (also by other threads while this one drove: their
        // submit's wake-up found the progress thread waiting for callers to leave).
        std::lock_guard<std::mutex> lk(mu);
        left_work = posted || !queue.empty();
        break;
      }
    }
    if (events != 0 || had_op) backoff.reset();
    else backoff.pause();
  }
  callers_driving.fetch_sub(1, std::memory_order_acq_rel);
  if (left_work) {  // ops queued behind this one, or posted sends and receives: not ours to wait for
    std::lock_guard<std::mutex> lk(mu);
    cv.notify_all();
  }
}

void Engine::Impl::start(std::shared_ptr<OpState> op) {
  if (failed) {  // only the driver writes `failed`
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
    const std::size_t bytes = d.count * dtype_size(d.dtype);
    if (check_fingerprints && d.kind == OpKind::allreduce &&
        bytes <= CollChannel::kFoldMaxBytes && allreduce_is_one_exchange(tuning, size, bytes)) {
      // The two ranks' vectors travel in their fingerprints: one message each way, not two
      // (8-128 B all-reduces took 30% longer with the separate fingerprint; docs/UCX.md).
      ch.start_fingerprint(d.send, bytes);
      const void* theirs = ch.finish_fingerprint();
      allreduce_pair_reduce(d.send, d.recv, theirs, d.count, d.dtype, d.op);
    } else {
      if (check_fingerprints) ch.start_fingerprint();
      run_collective(ch, d);
      ch.finish_fingerprint();
    }
  } catch (const DeadlinePassed&) {
    why = collective_timeout(ch, d);
  } catch (const PeerDead& dead) {
    why = d.str() + " failed on rank " + std::to_string(rank) + ": " + dead_peer_text(dead.peer);
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
  std::vector<Letgo> reqs;
  for (const auto& f : posted)
    reqs.push_back({f.req, f.op->args.peer, f.op->args.kind == OpKind::recv});
  release(reqs);  // before any op completes: its caller may free the buffer at once
  for (auto& f : posted)
    if (f.op != culprit) f.op->complete(aborted(f.op->args));
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

void Engine::Impl::release(const std::vector<Letgo>& reqs) {
  for (const auto& q : reqs)
    if (q.recv) ucp_request_cancel(worker, q.req);
  auto through = [&](const Letgo& q) {
    return ucp_request_check_status(q.req) != UCS_INPROGRESS ||
           (!q.recv && is_declared_dead(q.peer));
  };
  const auto limit = Clock::now() + kDrainGrace;
  std::vector<int> stuck;
  for (;;) {
    stuck.clear();
    for (const auto& q : reqs)
      if (!through(q)) stuck.push_back(q.peer);
    if (stuck.empty() || quarantined || Clock::now() > limit) break;
    if (progress() == 0) sched_yield();
  }
  for (const auto& q : reqs) ucp_request_free(q.req);
  if (stuck.empty() || quarantined) return;
  quarantined = true;
  std::sort(stuck.begin(), stuck.end());
  stuck.erase(std::unique(stuck.begin(), stuck.end()), stuck.end());
  std::string peers;
  for (int p : stuck) peers += (peers.empty() ? "" : ", ") + std::to_string(p);
  std::fprintf(stderr,
               "cohort ucx rank %d: a failed op's transfer with rank(s) %s was still in flight "
               "after %lld ms; this communicator's UCX worker is no longer progressed (so it "
               "cannot touch the op's buffers) and is destroyed with the communicator\n",
               rank, peers.c_str(), static_cast<long long>(kDrainGrace.count()));
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
    : impl_(std::make_shared<Impl>(info, std::move(store), default_timeout, tuning)) {
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
std::weak_ptr<Driver> Engine::driver() const { return impl_; }

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
  // With more ranks than cores the caller mostly runs it in its wait (detail::LazyWake): in a
  // blocking loop of 16-byte all-reduces on 4 ranks over 2 cores the wake-ups were a quarter of
  // each op's time. No spare core for the thread to overlap communication with exists then.
  if (!e.wake.queued()) return;
  e.cv.notify_one();
}

}  // namespace cohort::comm::ucx::detail
