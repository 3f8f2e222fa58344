// The Channel (channel.hpp) of one collective, over UCP tagged messages whose tags carry the op's
// sequence number and kind (tags.hpp). Created by Impl::start for each collective; the algorithm
// posts sends and receives through it and blocks in wait(), which drives the worker and throws
// when the op's deadline passes or a peer reports failure. silent_peers() feeds the timeout report.
// The driver only (drive_mu held: progress.cpp).
#pragma once

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "detail/op_desc.hpp"
#include "detail/backoff.hpp"
#include "ucx/channel.hpp"
#include "ucx/engine_impl.hpp"
#include "ucx/tags.hpp"

namespace cohort::comm::ucx::detail {

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
      : e_(e), desc_(d), deadline_(deadline) {
    pending_.reserve(8);  // a small op's requests (fingerprint + data) without a reallocation
  }
  ~CollChannel() override { abandon(); }

  int rank() const override { return e_.rank; }
  int size() const override { return e_.size; }

  Handle isend(int peer, const void* buf, std::size_t bytes, std::uint32_t step) override {
    ucp_request_param_t prm = host_param();
    void* r = ucp_tag_send_nbx(e_.eps[static_cast<std::size_t>(peer)], buf, bytes,
                               collective_tag(desc_, e_.rank, step), &prm);
    if (UCS_PTR_IS_ERR(r)) transport_failure(peer, false, UCS_PTR_STATUS(r));
    pending_.push_back(Pending{r, peer, false, r == nullptr, bytes});
    return pending_.size() - 1;
  }

  Handle irecv(int peer, void* buf, std::size_t bytes, std::uint32_t step) override {
    ucp_request_param_t prm = recv_param();
    void* r = ucp_tag_recv_nbx(e_.worker, buf, bytes,
                               collective_tag(desc_, peer, step), kExact, &prm);
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
      // A mismatched peer may never send what this rank waits for: its fingerprint says why.
      check_fingerprint();
      if (polls % 16 == 0) {
        if (Clock::now() > deadline_) throw DeadlinePassed{};
        if (e_.liveness_due()) {
          const int dead = e_.check_liveness(waiting_for());
          if (dead >= 0) throw PeerDead{dead};
        }
      }
    }
  }

  // The peers of the requests not complete yet.
  std::vector<int> waiting_for() const {
    std::vector<int> out;
    for (const auto& q : pending_)
      if (!q.done && std::find(out.begin(), out.end(), q.peer) == out.end())
        out.push_back(q.peer);
    return out;
  }

  // Fingerprints (detail/op_desc.hpp): each rank sends its description of this collective to the
  // next rank and receives the previous rank's, before any data. If every rank agrees with its
  // predecessor, all agree; the rank that sees a difference fails with both descriptions and its
  // kAbort tells the rest. Both messages are posted first so that they travel ahead of the data
  // (UCP delivers one sender's tagged messages in order), and the op completes only once the
  // predecessor's has been checked: a broadcast root, which receives nothing, learns of a
  // mismatch too.
  //
  // The fingerprint may carry up to kFoldMaxBytes of `payload` after the description (a 2-rank
  // small all-reduce sends its data in it: one message each way instead of two; progress.cpp).
  // Every fingerprint receive has room for the largest payload, so a rank that folded and one
  // that did not (their ops differ) still receive each other's description and report the
  // difference, instead of a truncated message.
  static constexpr std::size_t kFoldMaxBytes = 4096;

  void start_fingerprint(const void* payload = nullptr, std::size_t payload_bytes = 0) {
    if (size() < 2) return;
    if (payload_bytes > kFoldMaxBytes)
      COHORT_UCX_FAIL(e_.rank, desc_.str(), ": internal: a ", payload_bytes,
                      "-byte payload does not fit a fingerprint (", kFoldMaxBytes, " at most)");
    std::memcpy(fp_send_, &static_cast<const OpDesc&>(desc_), sizeof(OpDesc));
    if (payload_bytes != 0) std::memcpy(fp_send_ + sizeof(OpDesc), payload, payload_bytes);
    const std::size_t bytes = sizeof(OpDesc) + payload_bytes;
    const int next = (rank() + 1) % size(), prev = (rank() + size() - 1) % size();
    ucp_request_param_t sp = host_param();
    void* s = ucp_tag_send_nbx(e_.eps[static_cast<std::size_t>(next)], fp_send_, bytes,
                               fingerprint_tag(desc_.seq, rank()), &sp);
    if (UCS_PTR_IS_ERR(s)) transport_failure(next, false, UCS_PTR_STATUS(s));
    pending_.push_back(Pending{s, next, false, s == nullptr, bytes});
    fp_send_handle_ = pending_.size() - 1;
    ucp_request_param_t rp = recv_param();
    void* r = ucp_tag_recv_nbx(e_.worker, fp_recv_, sizeof(fp_recv_),
                               fingerprint_tag(desc_.seq, prev), kExact, &rp);
    if (UCS_PTR_IS_ERR(r)) transport_failure(prev, true, UCS_PTR_STATUS(r));
    // Expected: a description and a payload as long as this rank's (checked in test()).
    pending_.push_back(Pending{r, prev, true, false, bytes});
    fp_recv_handle_ = pending_.size() - 1;
    fp_state_ = FpState::posted;
  }

  // Waits for the predecessor's fingerprint (and this rank's own to leave) and checks it.
  // Returns the predecessor's payload (as many bytes as this rank's), or nullptr when no
  // fingerprint was started.
  const void* finish_fingerprint() {
    if (fp_state_ == FpState::none) return nullptr;
    wait(fp_recv_handle_);
    check_fingerprint();
    wait(fp_send_handle_);
    return fp_recv_ + sizeof(OpDesc);
  }

  void wait_all() override {
    for (Handle h = 0; h < pending_.size(); ++h) wait(h);
  }

  void* scratch(int slot, std::size_t bytes) override { return e_.scratch_buffer(slot, bytes); }

  // Lets go of every request not complete yet (Impl::release: cancelled, drained for a grace,
  // freed; the worker quarantined if one is still in flight), so that the caller gets its
  // buffers back when the op fails. Idempotent.
  void abandon() {
    std::vector<Engine::Impl::Letgo> reqs;
    for (auto& q : pending_) {
      if (q.done || q.req == nullptr) continue;
      reqs.push_back({q.req, q.peer, q.recv});
      q.req = nullptr;
      q.done = true;
    }
    if (!reqs.empty()) e_.release(reqs);
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
    if (st != UCS_OK || (q.recv && info.length != q.bytes)) {
      // A wrong length usually means the ranks issued different collectives: say which. A
      // fingerprint of the wrong length names the difference itself.
      if (fp_state_ == FpState::none || &q != &pending_[fp_recv_handle_])
        check_fingerprint();
      else if (st == UCS_OK && info.length >= sizeof(OpDesc))
        compare_fingerprint();
      if (st != UCS_OK) transport_failure(q.peer, q.recv, st);
      check_length(q.peer, info.length, q.bytes);
    }
    return true;
  }

  // Throws detail::mismatch_message once the predecessor's fingerprint has arrived and differs.
  void check_fingerprint() {
    if (fp_state_ != FpState::posted || !test(pending_[fp_recv_handle_])) return;
    compare_fingerprint();
  }

  // The predecessor's description has arrived: throws unless it equals this rank's.
  void compare_fingerprint() {
    fp_state_ = FpState::checked;
    OpDesc theirs;
    std::memcpy(&theirs, fp_recv_, sizeof(OpDesc));
    if (!common::same_collective(theirs, desc_))
      COHORT_UCX_FAIL(e_.rank, common::mismatch_message(e_.rank, desc_,
                                                        pending_[fp_recv_handle_].peer, theirs));
  }

  void check_length(int peer, std::size_t got, std::size_t want) const {
    if (got != want)
      COHORT_UCX_FAIL(e_.rank, desc_.str(), ": rank ", peer, " sent a ", got,
                      "-byte message where ", want,
                      " bytes were expected (do all ranks pass the same count and dtype?)");
  }

  // A transport error is often the echo of a failure a peer has already reported: a rank that
  // found a mismatch gives up and releases its buffers, and a rendezvous transfer from it then
  // fails here (seen: "Shared memory error" from the sysv transport under load). Its abort message
  // is on the way: wait for it a moment, so that every rank reports the cause, not the echo. Both
  // kinds of transport error wait: a request that completes with an error, and a send or receive
  // refused at once because the endpoint already failed (seen: a 256-byte broadcast to a rank that
  // had just aborted, in a fresh-clone CI run).
  // A peer declared dead (Communicator::declare_dead) sends no verdict: then there is no wait.
  void await_peer_verdict() const {
    const auto until = Clock::now() + Engine::Impl::kDrainGrace;
    while (e_.peer_failure_rank < 0 && !e_.any_declared.load(std::memory_order_acquire) &&
           Clock::now() < until)
      if (e_.progress() == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
    if (e_.peer_failure_rank >= 0) throw PeerFailed{};
  }

  [[noreturn]] void transport_failure(int peer, bool recv, ucs_status_t st) const {
    if (st != UCS_ERR_MESSAGE_TRUNCATED) await_peer_verdict();
    if (st == UCS_ERR_MESSAGE_TRUNCATED)
      COHORT_UCX_FAIL(e_.rank, desc_.str(), ": rank ", peer,
                      " sent a message longer than the expected bytes (do all ranks pass the same "
                      "count and dtype?)");
    // A transport error on a live connection is rare; a peer that exited is the usual cause.
    COHORT_UCX_FAIL(e_.rank, desc_.str(), ": ", recv ? "receiving from" : "sending to",
                    " rank ", peer, " (", e_.whois[static_cast<std::size_t>(peer)], ") failed: ",
                    ucs_status_string(st), " (has that rank exited?)");
  }

  Engine::Impl& e_;
  const OpArgs& desc_;
  enum class FpState { none, posted, checked } fp_state_ = FpState::none;
  // Description, then payload; 64-byte aligned so that the payload (at +32) is aligned for
  // every dtype the reductions read.
  alignas(64) unsigned char fp_send_[sizeof(OpDesc) + kFoldMaxBytes];
  alignas(64) unsigned char fp_recv_[sizeof(OpDesc) + kFoldMaxBytes];
  Handle fp_send_handle_ = 0, fp_recv_handle_ = 0;
  const Clock::time_point deadline_;
  std::vector<Pending> pending_;
};

}  // namespace cohort::comm::ucx::detail
