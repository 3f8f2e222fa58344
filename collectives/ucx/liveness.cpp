// The keep-alive of the UCX backend: a survivor notices a dead peer within seconds instead of at
// its op's timeout (300 s by default).
//
// Why a keep-alive of our own rather than UCX's error handling: UCX reports a peer's failure on
// the endpoints that talk to it, and only for transports that support it
// (UCP_ERR_HANDLING_MODE_PEER restricts the transports chosen and costs latency); a tagged receive
// from a dead peer is never failed by UCX at all. Every engine already answers control messages
// from its progress thread, even while its caller computes (progress.cpp polls them every 2 ms when
// idle), so silence is a reliable sign: a rank that waits for a peer and has heard nothing from it
// for kPingAfter sends it a kPing; a peer whose ping has gone unanswered for COHORT_PEER_TIMEOUT_MS
// (default 2000) is presumed dead, the op fails naming its host and pid, and the kAbort of
// Impl::fail tells the other ranks. A peer stopped in a debugger looks dead too: raise
// COHORT_PEER_TIMEOUT_MS, or set it to 0 to rely on the op's timeout alone.
//
// Control messages travel on endpoints of their own (ctl_eps, context.cpp), not the data's: UCX
// sends one endpoint's messages in order, so a pong on the data endpoint waits behind whatever
// data that rank is sending the pinger. On a slow saturated link that is longer than the limit
// (8 ranks, 2 hosts, 1 Gbit/s: a 64 MiB recursive-doubling step shares the link four ways, 2.1 s),
// and live ranks were presumed dead (tests/launch/test_keepalive_netns.sh).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "cohort/core/error.hpp"
#include "ucx/engine_impl.hpp"

namespace cohort::comm::ucx::detail {

using namespace std::chrono_literals;

namespace {
constexpr auto kPingAfter = 500ms;   // silence before a waiting rank pings a peer
constexpr auto kPingEvery = 500ms;   // re-ping while unanswered
constexpr auto kCheckEvery = 20ms;   // how often check_liveness looks at all

Clock::duration peer_timeout_from_env() {
  const char* env = std::getenv("COHORT_PEER_TIMEOUT_MS");
  if (!env || !*env) return 2000ms;
  char* end = nullptr;
  const long long v = std::strtoll(env, &end, 10);
  COHORT_CHECK(end && *end == '\0' && v >= 0, "COHORT_PEER_TIMEOUT_MS='", env,
               "' is not a number of milliseconds (0 turns the keep-alive off)");
  return std::chrono::milliseconds(v);
}
}  // namespace

void Engine::Impl::setup_liveness() {
  const auto n = static_cast<std::size_t>(size);
  dead_after = peer_timeout_from_env();
  heard.assign(n, Clock::now());
  pinged.assign(n, Clock::time_point{});
  last_ping.assign(n, Clock::time_point{});
  last_status.assign(n, std::nullopt);
  whois.assign(n, std::string());
  whois[static_cast<std::size_t>(rank)] = whoami();
  for (int p = 0; p < size; ++p) {
    if (!store || p == rank) continue;
    const auto v = store->get(prefix + "who/" + std::to_string(p), default_timeout);
    whois[static_cast<std::size_t>(p)].assign(v.begin(), v.end());
  }
}

std::string whoami() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "?");
  return std::string("host ") + host + ", pid " + std::to_string(::getpid());
}

int Engine::Impl::check_liveness(const std::vector<int>& waiting_for) {
  if (any_declared.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(declared_mu);
    for (int p : waiting_for)
      if (declared.count(p)) return p;
  }
  if (!liveness_due()) return -1;
  const auto now = Clock::now();
  next_liveness_check = now + kCheckEvery;
  for (int p : waiting_for) {
    if (p == rank) continue;
    const auto i = static_cast<std::size_t>(p);
    const bool unanswered = pinged[i] != Clock::time_point{};
    if (unanswered && now - pinged[i] > dead_after) return p;
    // Ping a peer silent for a while, and again now and then while it does not answer (a ping
    // sent while the connection was still being wired up may be dropped).
    if (unanswered ? now - last_ping[i] > kPingEvery : now - heard[i] > kPingAfter) {
      ControlMsg m;
      m.type = kPing;
      m.src = rank;
      send_control(p, m);
      last_ping[i] = now;
      if (!unanswered) pinged[i] = now;
    }
  }
  return -1;
}

std::string Engine::Impl::dead_peer_text(int peer) const {
  const auto i = static_cast<std::size_t>(peer);
  std::ostringstream os;
  if (any_declared.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(declared_mu);
    const auto it = declared.find(peer);
    if (it != declared.end()) {
      os << "rank " << peer << " (" << (whois[i].empty() ? "host ?, pid ?" : whois[i])
         << ") is gone: " << it->second;
      return os.str();
    }
  }
  os << "rank " << peer << " (" << (whois[i].empty() ? "host ?, pid ?" : whois[i])
     << ") stopped answering: no reply to keep-alives for "
     << std::chrono::duration_cast<std::chrono::milliseconds>(dead_after).count()
     << " ms (presumed dead; COHORT_PEER_TIMEOUT_MS sets the limit)";
  const auto ago =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - heard[i]).count();
  if (last_status[i])
    os << "; its last status, " << ago << " ms ago: " << describe_peer(peer, *last_status[i]);
  else
    os << "; last heard from " << ago << " ms ago";
  return os.str();
}

void Engine::declare_dead(int peer, const std::string& why) {
  COHORT_CHECK(peer >= 0 && peer < impl_->size, "declare_dead: rank ", peer,
               " is not a rank of this communicator of ", impl_->size);
  std::lock_guard<std::mutex> lock(impl_->declared_mu);
  impl_->declared.emplace(peer, why);
  impl_->any_declared.store(true, std::memory_order_release);
}

}  // namespace cohort::comm::ucx::detail
