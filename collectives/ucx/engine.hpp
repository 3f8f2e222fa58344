// The engine of one UCX communicator: a progress thread that owns the UCP context, worker and
// endpoints and runs the ops it is handed, in issue order (or lets a caller waiting for an op run
// them, one thread at a time: progress.cpp). No UCX type appears here (pimpl: the
// state is Engine::Impl in engine_impl.hpp, its members defined by job in context.cpp,
// progress.cpp, p2p.cpp, control.cpp and timeouts.cpp).
#pragma once

#include <memory>

#include "cohort/collectives/process_group.hpp"
#include "cohort/collectives/store.hpp"
#include "ucx/channel.hpp"
#include "ucx/op.hpp"

namespace cohort::comm::ucx::detail {

class Engine {
 public:
  // Starts the progress thread, which creates the UCP context and worker, publishes the worker
  // address under "ucx/<n>/addr/<rank>" in `store` (n counts the UCX communicators this rank has
  // created on this store, so communicators created one after another never read each other's
  // keys) and connects an endpoint to every rank, itself included. Blocks until that is done;
  // throws cohort::Error if UCX fails or a peer's address does not appear within
  // `default_timeout`.
  Engine(const ProcessGroupInfo& info, std::shared_ptr<Store> store, Timeout default_timeout,
         const Tuning& tuning);
  // Lets every op already submitted finish (each within its own timeout), then closes the
  // endpoints and waits, at most min(default timeout, 30 s), until every live rank has closed its
  // own (so no rank tears down a connection a peer still flushes; a rank that answers no status
  // query is presumed gone and not waited for), and joins the progress thread.
  ~Engine();

  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  int rank() const;
  int size() const;
  Timeout default_timeout() const;

  // Queues the op behind every op submitted before it and returns at once. Throws cohort::Error
  // if an earlier op failed (the communicator is then unusable).
  void submit(std::shared_ptr<OpState> op);

  // Communicator::declare_dead: ops waiting for `peer` fail at the next liveness check.
  void declare_dead(int peer, const std::string& why);

  // What an OpState's wait() may drive (see op.hpp).
  std::weak_ptr<Driver> driver() const;

  // Defined in engine_impl.hpp, which only the engine's own files include (it holds the UCP
  // handles); named here so that they can refer to it.
  struct Impl;

 private:
  // Shared with the ops' weak Driver pointers: a caller inside drive_until keeps the state alive
  // even if another thread destroys the communicator meanwhile.
  std::shared_ptr<Impl> impl_;
};

// Whether UCX can create a context in this process (tag matching feature); `why_not` gets UCX's
// reason when it cannot. The answer is computed once per process.
bool ucx_usable(std::string* why_not);

}  // namespace cohort::comm::ucx::detail
