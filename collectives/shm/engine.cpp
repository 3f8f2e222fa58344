// The shm engine's code: op submission and the progress loop, flags and step accounting, the
// same-collective fingerprints, timeouts with their "who is behind" reports, peer aborts and
// shutdown. The progress model (the calling thread advances every op; steps, slots and the
// posted/reduced/consumed flags) and why it is shaped so are in engine.hpp.
#include "shm/engine.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

#include "cohort/core/error.hpp"
#include "detail/backoff.hpp"
#include "detail/env.hpp"
#include "detail/format.hpp"
#include "shm/p2p.hpp"

namespace cohort::comm::shm {

using Clock = std::chrono::steady_clock;

namespace {
// Deadlines far in the future must not overflow the clock.
Clock::time_point deadline_after(Clock::time_point now, Timeout t) {
  return now + std::min<Timeout>(t, Timeout(1000LL * 3600 * 24 * 365));
}
std::string waiting_for(Flag f, std::uint64_t step) {
  const std::string s = std::to_string(step);
  switch (f) {
    case Flag::posted: return "waiting for their data of step " + s;
    case Flag::reduced: return "waiting for their reduced slice of step " + s;
    case Flag::consumed: return "waiting for them to finish reading step " + s;
  }
  return "?";
}
}  // namespace

// --- Op ---

Op::Op(std::shared_ptr<Engine> engine, const OpDesc& d, Timeout t)
    : desc(d), timeout(t), eng(*engine), keep_(std::move(engine)) {}

bool Op::test() { return eng.test(*this); }
void Op::wait() { eng.wait(*this); }

CollOp::CollOp(std::shared_ptr<Engine> engine, const OpDesc& d, Timeout t, std::uint64_t n)
    : Op(std::move(engine), d, t), nsteps(n) {}

void CollOp::stalled(Flag flag, std::uint64_t step, int only_rank) const {
  if (stall_step_ == 0 || step < stall_step_) {
    stall_flag_ = flag;
    stall_step_ = step;
    stall_rank_ = only_rank;
  }
}

void CollOp::blocked(std::vector<int>* ranks, std::string* what) const {
  // Ranks that have not even issued this collective are the clearest answer.
  *ranks = eng.not_entered(desc.seq);
  if (!ranks->empty()) {
    *what = "they have not issued it yet";
    return;
  }
  if (stall_step_ == 0) return;
  *ranks = eng.behind(stall_flag_, stall_step_, stall_rank_);
  *what = waiting_for(stall_flag_, stall_step_);
}

// --- Engine ---

Engine::Engine(int r, int w, std::unique_ptr<Segment> segment, std::shared_ptr<Store> store,
               Timeout default_timeout)
    : rank(r),
      world(w),
      params(segment->params()),
      seg_(std::move(segment)),
      store_(std::move(store)),
      default_timeout_(default_timeout),
      oversubscribed_(detail::yield_when_idle(w)),
      check_fingerprints_(detail::collective_checks_from_env()),
      sends_(static_cast<std::size_t>(w)),
      recvs_(static_cast<std::size_t>(w)),
      unexpected_(static_cast<std::size_t>(w)),
      incoming_(static_cast<std::size_t>(w)),
      srcs_(static_cast<std::size_t>(w)),
      inline_words_(static_cast<std::size_t>(w) * 3) {}

Engine::~Engine() = default;

Timeout Engine::resolve(Timeout t) const { return detail::resolve_timeout(t, default_timeout_); }

std::atomic<std::uint64_t>& Engine::flag(int r, Flag f) const {
  RankCtl& c = seg_->ctl(r);
  switch (f) {
    case Flag::posted: return c.posted.v;
    case Flag::reduced: return c.reduced.v;
    case Flag::consumed: break;
  }
  return c.consumed.v;
}

bool Engine::reached(Flag f, std::uint64_t step, int only_rank) const {
  if (only_rank >= 0) return flag(only_rank, f).load(std::memory_order_acquire) >= step;
  for (int q = 0; q < world; ++q)
    if (q != rank && flag(q, f).load(std::memory_order_acquire) < step) return false;
  return true;
}

void Engine::publish(Flag f, std::uint64_t step) {
  flag(rank, f).store(step, std::memory_order_release);
  ++moves_;
}

std::vector<int> Engine::behind(Flag f, std::uint64_t step, int only_rank) const {
  std::vector<int> out;
  for (int q = 0; q < world; ++q) {
    if (q == rank || (only_rank >= 0 && q != only_rank)) continue;
    if (flag(q, f).load(std::memory_order_acquire) < step) out.push_back(q);
  }
  return out;
}

std::string Engine::whereabouts(const std::vector<int>& ranks) const {
  std::string s;
  for (int q : ranks) {
    const RankCtl& c = seg_->ctl(q);
    const std::uint64_t seq = c.coll_seq.load(std::memory_order_relaxed);
    if (!s.empty()) s += ", ";
    s += "rank " + std::to_string(q);
    const auto kind = static_cast<OpKind>(c.coll_kind.load(std::memory_order_relaxed));
    // Its fingerprint says the whole op; the slot may be rewritten while it is read, so a
    // description whose seq is not the one announced falls back to the kind.
    const std::uint64_t fp_seq = c.fp_seq.load(std::memory_order_acquire);
    OpDesc last;
    std::uint64_t words[4];
    for (int i = 0; i < 4; ++i)
      words[i] = c.fp[fp_seq % RankCtl::kFpSlots].words[i].load(std::memory_order_relaxed);
    std::memcpy(&last, words, sizeof(last));
    if (seq == 0)
      s += " has not entered any collective";
    else if (fp_seq == seq && last.seq == seq)
      s += " last entered " + last.str();
    else
      s += " last entered collective #" + std::to_string(seq) + " (" +
           detail::op_kind_name(kind) + ")";
  }
  return s;
}

void Engine::check_usable() {
  std::lock_guard<std::mutex> lock(mu_);
  if (failed_)
    cohort::detail::throw_error(__FILE__, __LINE__, "", "shm",
                                "communicator unusable after an earlier failure: " + failure_);
}

WorkHandle Engine::submit(std::shared_ptr<Op> op) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failed_)
    cohort::detail::throw_error(__FILE__, __LINE__, "", "shm",
                                "communicator unusable after an earlier failure: " + failure_);
  // A peer that failed will not take part in this op (and its flags may even seem to satisfy it).
  check_peer_abort_locked();
  op->id = next_id_++;
  switch (op->desc.kind) {
    case OpKind::send: {
      auto s = std::static_pointer_cast<SendOp>(op);
      sends_[static_cast<std::size_t>(s->desc.peer)].push_back(std::move(s));
      ++p2p_pending_;
      break;
    }
    case OpKind::recv: {
      post_recv(std::static_pointer_cast<RecvOp>(op));
      ++p2p_pending_;
      break;
    }
    default: {
      auto* c = static_cast<CollOp*>(op.get());
      c->t0 = next_step_;
      next_step_ += c->nsteps;
      c->desc.seq = next_seq_++;
      coll_.push_back(c);
    }
  }
  inflight_.push_back(op);
  undated_ = true;
  progress_locked();
  return op;
}

void Engine::progress_locked() {
  while (!coll_.empty()) {
    CollOp& op = *coll_.front();
    if (op.desc.seq != announced_seq_) announce_locked(op);
    if (!op.moved) op.moved = op.advance();
    if (!op.moved && op.inline_fp && ++op.fp_polls % 64 != 0) break;
    // A collective completes only once every rank is known to have issued the same one: ranks
    // that disagree on count, dtype or op may otherwise "complete" with wrong sums. Checked after
    // the data part because by then the peers' fingerprints are usually in (they publish theirs
    // before their data), so the check adds no wait; checked while stalled too, because a
    // mismatched peer may never post what this rank waits for.
    if (!fingerprints_match(op) || !op.moved) break;
    op.done = true;
    coll_.pop_front();
  }
  if (p2p_pending_ || !coll_.empty()) {
    // Receiving never waits for a matching recv (unmatched messages are buffered), so a peer's
    // large send completes even while this rank is busy in a collective.
    drain_incoming();
    for (auto& q : sends_) {
      while (!q.empty() && q.front()->advance()) {
        q.front()->done = true;
        q.pop_front();
        --p2p_pending_;
      }
    }
    for (auto& l : recvs_) {
      for (auto it = l.begin(); it != l.end();) {
        if ((*it)->advance()) {
          (*it)->done = true;
          it = l.erase(it);
          --p2p_pending_;
        } else {
          ++it;
        }
      }
    }
  }
  while (!inflight_.empty() && inflight_.front()->done) inflight_.pop_front();
  first_pending_ = inflight_.empty() ? next_id_ : inflight_.front()->id;
  if (!coll_.empty()) check_peer_abort_locked();
}

void Engine::announce_locked(const CollOp& op) {
  RankCtl& c = seg_->ctl(rank);
  c.coll_kind.store(static_cast<std::uint32_t>(op.desc.kind), std::memory_order_relaxed);
  c.coll_seq.store(op.desc.seq, std::memory_order_relaxed);
  std::uint64_t words[4];
  static_assert(sizeof(words) == sizeof(OpDesc), "a fingerprint is 4 words");
  std::memcpy(words, &op.desc, sizeof(words));
  auto& slot = c.fp[op.desc.seq % RankCtl::kFpSlots];
  for (int i = 0; i < 4; ++i) slot.words[i].store(words[i], std::memory_order_relaxed);
  slot.seq.store(op.desc.seq, std::memory_order_release);
  c.fp_seq.store(op.desc.seq, std::memory_order_release);
  announced_seq_ = op.desc.seq;
}

bool Engine::fingerprints_match(CollOp& op) {
  if (!check_fingerprints_) return true;
  for (; op.matched < world; ++op.matched) {
    const int q = op.matched;
    if (q == rank) continue;
    const RankCtl& c = seg_->ctl(q);
    const auto& slot = c.fp[op.desc.seq % RankCtl::kFpSlots];
    if (slot.seq.load(std::memory_order_acquire) < op.desc.seq) return false;
    std::uint64_t words[4];
    for (int i = 0; i < 4; ++i) words[i] = slot.words[i].load(std::memory_order_relaxed);
    OpDesc theirs;
    std::memcpy(&theirs, words, sizeof(theirs));
    if (!detail::same_collective(theirs, op.desc))
      fail_locked(detail::mismatch_message(rank, op.desc, q, theirs));
  }
  return true;
}

std::vector<int> Engine::not_entered(std::uint64_t seq) const {
  std::vector<int> out;
  for (int q = 0; q < world; ++q)
    if (q != rank && seg_->ctl(q).fp_seq.load(std::memory_order_acquire) < seq) out.push_back(q);
  return out;
}

bool Engine::test(Op& op) {
  std::lock_guard<std::mutex> lock(mu_);
  if (op.id < first_pending_) return true;
  if (failed_) throw_failure();
  progress_locked();
  if (op.id < first_pending_) return true;
  check_time_locked();
  return false;
}

void Engine::wait(Op& op) {
  detail::Backoff backoff(oversubscribed_);
  std::uint64_t seen = ~std::uint64_t{0};
  for (std::uint32_t i = 1;; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (op.id < first_pending_) return;
      if (failed_) throw_failure();
      progress_locked();
      if (op.id < first_pending_) return;
      if ((i & 31) == 0) check_time_locked();
      if (moves_ != seen) {
        seen = moves_;
        backoff.reset();
      }
    }
    backoff.pause();
  }
}

void Engine::check_time_locked() {
  const auto now = Clock::now();
  if (undated_) {
    // The ops issued since the last check, newest first; the ones before are dated already.
    undated_ = false;
    for (auto it = inflight_.rbegin();
         it != inflight_.rend() && (*it)->deadline == Clock::time_point::max(); ++it) {
      (*it)->deadline = deadline_after(now, (*it)->timeout);
      if (!(*it)->done) earliest_deadline_ = std::min(earliest_deadline_, (*it)->deadline);
    }
  }
  // Only when the earliest deadline seen has passed: a window of thousands of ops in flight
  // would otherwise cost a pass over all of them every few polls.
  if (now >= earliest_deadline_) {
    earliest_deadline_ = Clock::time_point::max();
    for (const auto& op : inflight_) {
      if (op->done) continue;
      if (now >= op->deadline) fail_locked(timeout_message(*op));
      earliest_deadline_ = std::min(earliest_deadline_, op->deadline);
    }
  }
  check_peer_abort_locked();
  if (now - last_liveness_check_ < std::chrono::milliseconds(100)) return;
  last_liveness_check_ = now;
  // A peer that died never arrives: say so now rather than at the deadline. Only peers in this
  // pid namespace can be checked (kill(pid, 0) means nothing across namespaces).
  std::vector<int> waiting;
  std::string what;
  for (const auto& op : inflight_) {
    std::vector<int> r;
    if (!op->done) op->blocked(&r, &what);
    waiting.insert(waiting.end(), r.begin(), r.end());
  }
  const int q = exited_peer(waiting);
  if (q < 0) return;
  const Op* front = inflight_.front().get();
  for (const auto& op : inflight_)
    if (!op->done) {
      front = op.get();
      break;
    }
  fail_locked("rank " + std::to_string(q) + " (pid " +
              std::to_string(seg_->ctl(q).pid.load(std::memory_order_relaxed)) +
              ") exited while rank " + std::to_string(rank) + " waited for it in " +
              front->describe());
}

int Engine::exited_peer(const std::vector<int>& ranks) const {
  const std::uint64_t my_ns = seg_->ctl(rank).pid_ns.load(std::memory_order_relaxed);
  for (int q : ranks) {
    const RankCtl& c = seg_->ctl(q);
    const pid_t pid = c.pid.load(std::memory_order_relaxed);
    if (pid > 0 && c.pid_ns.load(std::memory_order_relaxed) == my_ns && ::kill(pid, 0) != 0 &&
        errno == ESRCH)
      return q;
  }
  return -1;
}

std::string Engine::timeout_message(const Op& op) const {
  std::ostringstream os;
  os << op.describe() << " timed out after " << detail::format_timeout(op.timeout);
  const Op* blocker = &op;
  if (op.desc.collective() && !coll_.empty() && coll_.front() != &op) {
    blocker = coll_.front();
    os << " while queued behind " << blocker->describe();
  }
  std::vector<int> ranks;
  std::string what;
  blocker->blocked(&ranks, &what);
  if (ranks.empty())
    os << " (every rank had arrived; the data was still moving)";
  else
    os << ": " << detail::format_ranks(ranks) << " did not arrive (" << what << "; "
       << whereabouts(ranks) << ")";
  return os.str();
}

void Engine::check_peer_abort_locked() {
  const Header& h = seg_->header();
  const int who = h.abort_rank.load(std::memory_order_relaxed);
  if (who < 0 || who == rank) return;
  // fail_locked() claims abort_rank first and publishes the reason right after: a rank that looks
  // in between would report "no reason" and lose what the first rank saw (the dead peer's pid).
  // Wait briefly for it; the writer may itself have died in between, hence the bound.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  while (!h.abort_ready.load(std::memory_order_acquire) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  std::string reason = "(no reason recorded)";
  if (h.abort_ready.load(std::memory_order_acquire))
    reason.assign(h.abort_reason, strnlen(h.abort_reason, sizeof(h.abort_reason)));
  fail_locked("rank " + std::to_string(who) + " failed: " + reason);
}

void Engine::fail_locked(const std::string& why) {
  if (!failed_) {
    failed_ = true;
    failure_ = why;
    Header& h = seg_->header();
    int expected = -1;
    if (h.abort_rank.compare_exchange_strong(expected, rank, std::memory_order_acq_rel)) {
      const std::size_t n = std::min(why.size(), sizeof(h.abort_reason) - 1);
      std::memcpy(h.abort_reason, why.data(), n);
      h.abort_reason[n] = '\0';
      h.abort_ready.store(1, std::memory_order_release);
    }
  }
  throw_failure();
}

void Engine::throw_failure() const {
  cohort::detail::throw_error(__FILE__, __LINE__, "", "shm", failure_);
}

void Engine::shutdown(bool abandon) {
  std::shared_ptr<Op> last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_ && !inflight_.empty()) {
      if (abandon) {
        try {
          fail_locked("rank " + std::to_string(rank) + " destroyed its communicator with " +
                      std::to_string(inflight_.size()) +
                      " ops pending while an exception was propagating");
        } catch (const cohort::Error&) {
        }
      } else {
        last = inflight_.back();
      }
    }
  }
  if (last) {
    try {
      wait(*last);
    } catch (const cohort::Error&) {
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!inflight_.empty() && !failed_) {
    failed_ = true;
    failure_ = "the communicator was destroyed before this op completed";
  }
  // Break the engine <-> op reference cycles; handles the caller still holds stay valid.
  coll_.clear();
  for (auto& q : sends_) q.clear();
  for (auto& l : recvs_) l.clear();
  for (auto& in : incoming_) in = Incoming{};
  inflight_.clear();
}

}  // namespace cohort::comm::shm
