// The Channel (channel.hpp) of one collective, over UCP tagged messages whose tags carry the op's
// sequence number and kind (tags.hpp). Created by Impl::start for each collective; the algorithm
// posts sends and receives through it and blocks in wait(), which drives the worker and throws
// when the op's deadline passes or a peer reports failure. silent_peers() feeds the timeout report.
// Progress thread only.
#pragma once

#include <algorithm>
#include <vector>

#include "detail/wait.hpp"
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
    void* r = ucp_tag_recv_nbx(e_.worker, buf, bytes,
                               collective_tag(desc_.seq, desc_.kind, peer, step), kExact, &prm);
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

}  // namespace cohort::comm::ucx::detail
