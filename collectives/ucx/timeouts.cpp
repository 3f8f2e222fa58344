// The reports of ops whose deadline passed. Every op has a deadline (start + its timeout). When
// it passes, the engine asks every other rank, over control messages (control.cpp), which
// collective it has started, and the error names the op, the timeout, the ranks that have not
// entered it and the peers whose messages did not arrive. The communicator is then failed
// (progress.cpp, Impl::fail): queued and later ops fail at once, and the other ranks are told
// (kAbort), so that theirs fail too instead of each waiting out its own timeout.
#include <algorithm>
#include <sstream>

#include "detail/format.hpp"
#include "ucx/coll_channel.hpp"
#include "ucx/engine_impl.hpp"

namespace cohort::comm::ucx::detail {

using namespace std::chrono_literals;

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

}  // namespace cohort::comm::ucx::detail
