// Control messages (control.hpp) between the progress threads: one receive always posted,
// status queries answered whenever the thread polls (even when idle, see progress.cpp), replies
// collected by query(), and a peer's kAbort recorded for the op waiting now (CollChannel::wait)
// or the idle loop to act on. Diagnostics only: a control message that cannot be sent or
// received is dropped, never fatal.
#include <cstring>

#include "detail/backoff.hpp"
#include "ucx/engine_impl.hpp"
#include "ucx/tags.hpp"

namespace cohort::comm::ucx::detail {

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
  heard_from(m.src);
  if (m.type == kPong) {
    last_status[static_cast<std::size_t>(m.src)] = m;
  } else if (m.type == kStatusQuery || m.type == kPing) {
    ControlMsg reply;
    reply.type = m.type == kPing ? kPong : kStatusReply;
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
  ucp_ep_h ep = ctl_eps[static_cast<std::size_t>(peer)];
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

}  // namespace cohort::comm::ucx::detail
