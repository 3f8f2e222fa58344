// The UCP context, worker and endpoints of one engine: created by the progress thread in setup()
// (worker addresses exchanged through the Store under "ucx/<n>/addr/<rank>"), destroyed in
// teardown() after a closing fence with the live peers. Setup is where UCX calls fail outright, so
// this is the one file that uses the check macro for UCX status codes (check.hpp); later failures
// are reported through the op they belong to (coll_channel.hpp, p2p.cpp).
#include <algorithm>
#include <thread>

#include "ucx/check.hpp"
#include "ucx/engine_impl.hpp"
#include "ucx/tags.hpp"

namespace cohort::comm::ucx::detail {

using namespace std::chrono_literals;

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
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;  // one thread at a time: drive_mu
  COHORT_CHECK_UCX(rank, ucp_worker_create(context, &wp, &worker), "creating the UCP worker");

  ucp_address_t* address = nullptr;
  std::size_t address_len = 0;
  COHORT_CHECK_UCX(rank, ucp_worker_get_address(worker, &address, &address_len),
                   "getting the worker address");
  const auto* a = reinterpret_cast<const std::uint8_t*>(address);
  std::vector<std::uint8_t> mine(a, a + address_len);
  ucp_worker_release_address(worker, address);
  if (store) {
    const std::string who = whoami();
    store->set(prefix + "who/" + std::to_string(rank),
               std::vector<std::uint8_t>(who.begin(), who.end()));
    store->set(prefix + "addr/" + std::to_string(rank), mine);
  }

  eps.assign(static_cast<std::size_t>(size), nullptr);
  ctl_eps.assign(static_cast<std::size_t>(size), nullptr);
  for (int p = 0; p < size; ++p) {
    const auto theirs =
        p == rank ? mine : store->get(prefix + "addr/" + std::to_string(p), default_timeout);
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.address = reinterpret_cast<const ucp_address_t*>(theirs.data());
    ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    COHORT_CHECK_UCX(rank, ucp_ep_create(worker, &ep, &eps[static_cast<std::size_t>(p)]),
                     "connecting to rank ", p);
    if (p != rank)
      COHORT_CHECK_UCX(rank, ucp_ep_create(worker, &ep, &ctl_eps[static_cast<std::size_t>(p)]),
                       "connecting to rank ", p, " (control)");
  }
  replies.assign(static_cast<std::size_t>(size), std::nullopt);
  setup_liveness();
  post_control_recv();
}

void Engine::Impl::worker_quarantine_teardown() {
  if (control_req != nullptr) {  // not matched yet: the cancel completes it, copying nothing
    ucp_request_cancel(worker, control_req);
    ucp_request_free(control_req);
    control_req = nullptr;
  }
  for (auto& o : control_out) ucp_request_free(o.second);
  control_out.clear();
  for (auto& ep : eps) ep = nullptr;
  for (auto& ep : ctl_eps) ep = nullptr;
  ucp_worker_destroy(worker);
  worker = nullptr;
}

void Engine::Impl::teardown() {
  bool healthy;
  {
    std::lock_guard<std::mutex> lk(mu);
    healthy = !failed;
  }
  if (quarantined && worker != nullptr) {
    // release(): a transfer may still target a caller's buffer, so nothing here progresses the
    // worker (no flush, no close handshake, no waiting for peers): UCX copies data only inside
    // its progress, and ucp_worker_destroy tears the endpoints and transports down without it.
    worker_quarantine_teardown();
  }
  if (worker != nullptr) {
    // Let control messages already sent (an abort, status replies) leave first: a forced close
    // would drop them.
    const auto out_limit = Clock::now() + 200ms;
    while (!control_out.empty() && Clock::now() < out_limit)
      if (progress() == 0) std::this_thread::sleep_for(20us);
    auto key = [&](const char* what, int p) { return prefix + what + std::to_string(p); };
    std::vector<std::string> closed_keys;  // the peers this rank waits for, below
    // A failed communicator skips the store: its peers failed too (the abort told them) and wait
    // for nobody, and the store may be gone with them (rank 0 hosts it; its exit left this rank's
    // set() retrying for the whole store timeout, 30 s in parallel_api_errors_ucx_np2). A healthy
    // peer that still waits finds no "closing" key, gets no answer to its status query, and
    // presumes this rank gone.
    const bool use_store = healthy && !prefix.empty();
    if (use_store) {
      try {
        store->set(key("closing/", rank), {});
        closed_keys = live_peers_closed_keys();
      } catch (...) {
        // The store may already be gone at exit; closing goes on without it.
      }
    }
    std::vector<void*> closing;
    std::vector<ucp_ep_h*> all;
    for (auto& ep : eps) all.push_back(&ep);
    for (auto& ep : ctl_eps) all.push_back(&ep);
    for (ucp_ep_h* e : all) {
      ucp_ep_h& ep = *e;
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
    if (use_store) {
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
