// Point-to-point ops of one engine: posted to UCP at once (post_p2p) and then polled by the
// progress loop (poll_inflight), each completing when its own message is through, not in issue
// order: a rank may post sends with tags 0, 1, 2 and then receive the peer's tag 2 first, and that
// receive must not wait for the sends. Messages are numbered per (peer, tag) in the tag
// (tags.hpp), so each receive names exactly one send.
#include "ucx/engine_impl.hpp"
#include "ucx/tags.hpp"

namespace cohort::comm::ucx::detail {

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
  if (!inflight.empty() && liveness_due()) {
    std::vector<int> peers;
    for (const auto& f : inflight) peers.push_back(f.op->args.peer);
    const int dead = check_liveness(peers);
    if (dead >= 0) {
      for (const auto& f : inflight) {
        if (f.op->args.peer != dead) continue;
        const std::string why = f.op->args.str() + " failed on rank " + std::to_string(rank) +
                                ": " + dead_peer_text(dead);
        fail(f.op, UCX_ERROR_PTR(rank, why), why);  // empties `inflight`
        return 1;
      }
    }
  }
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
      why = f.op->args.str() + ": " + ucs_status_string(st) + " (rank " +
            std::to_string(f.op->args.peer) + ", " +
            whois[static_cast<std::size_t>(f.op->args.peer)] + "; has that rank exited?)";
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

}  // namespace cohort::comm::ucx::detail
