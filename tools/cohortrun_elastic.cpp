// cohortrun --elastic (cohortrun_elastic.hpp): serving the store, marking the ranks that end, and
// deciding whether the job goes on.
#include "cohortrun_elastic.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <thread>

#include "cohort/collectives/store.hpp"

namespace cohortrun {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// cohortrun's own calls: short, so that a store cut off (a partition) stalls the output relay
// for at most this long per call.
constexpr std::chrono::milliseconds kCallTimeout{5000};

}  // namespace

ElasticLauncher::ElasticLauncher(const ElasticConfig& c, const sigset_t& child_mask) : c_(c) {
  if (c_.node_rank == 0) {
    store_pid_ = ::fork();
    if (store_pid_ < 0) {
      std::perror("cohortrun: fork");
      std::exit(1);
    }
    if (store_pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      sigprocmask(SIG_SETMASK, &child_mask, nullptr);
      try {
        auto server = cohort::comm::make_tcp_store(c_.addr, c_.port, true, kCallTimeout);
        for (;;) ::pause();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "cohortrun: the elastic store could not start: %s\n", e.what());
        ::_exit(1);
      }
    }
  }
  // Node 0 connects to its own child; the others wait for node 0 to be up.
  const auto deadline = Clock::now() + std::chrono::seconds(c_.node_rank == 0 ? 30 : 60);
  for (;;) {
    try {
      store_ = cohort::comm::make_tcp_store(c_.addr, c_.port, false, kCallTimeout);
      return;
    } catch (const std::exception& e) {
      if (Clock::now() < deadline) continue;
      std::fprintf(stderr,
                   "cohortrun: elastic: node %d cannot reach the job's store at %s:%d (served "
                   "by node 0's cohortrun): %s\n",
                   c_.node_rank, c_.addr.c_str(), c_.port, e.what());
      if (store_pid_ > 0) ::kill(store_pid_, SIGKILL);
      std::exit(1);
    }
  }
}

ElasticLauncher::~ElasticLauncher() {
  if (store_pid_ > 0) {
    ::kill(store_pid_, SIGKILL);
    ::waitpid(store_pid_, nullptr, 0);
  }
}

void ElasticLauncher::set_rank_env(int incarnation) const {
  const auto set = [](const char* k, const std::string& v) { ::setenv(k, v.c_str(), 1); };
  set("COHORT_STORE_SERVED", "1");
  set("COHORT_ELASTIC", std::to_string(c_.min) + ":" + std::to_string(c_.max));
  set("COHORT_ELASTIC_INCARNATION", std::to_string(incarnation));
  if (c_.respawn > 0) set("COHORT_ELASTIC_GROW", "1");
  if (incarnation > 0) set("COHORT_ELASTIC_JOIN", "1");
}

bool ElasticLauncher::store_has(const std::string& key) {
  try {
    return store_->check({key});
  } catch (const std::exception&) {
    return false;
  }
}

ElasticLauncher::Next ElasticLauncher::on_exit(int rank, int incarnation, int status,
                                               const std::string& how, pid_t pid, int alive) {
  // The survivors need not wait for it: its death time, for their report too. Keyed by
  // incarnation: a respawned rank is alive again under the same number.
  try {
    store_->set_string("elastic/gone/" + std::to_string(rank) + "." + std::to_string(incarnation),
                       std::to_string(wall_ns()));
    store_->add("elastic/news", 1);  // what the ranks' watchers poll
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "cohortrun: could not mark rank %d gone in the store (the others find out by "
                 "their own timeout): %s\n",
                 rank, e.what());
  }
  if (status == 0) return Next::ended;
  // Written by the group (ElasticGroup): it finished, or stopped below MIN.
  if (store_has("elastic/finished")) {
    if (incarnation > 0) {
      std::fprintf(stderr,
                   "cohortrun: rank %d (started again) ended after the group finished without "
                   "it; not a failure\n",
                   rank);
      return Next::ended;
    }
  }
  const bool stopped = store_has("elastic/stopped");
  const bool again = incarnation < c_.respawn && !stopped;
  if (c_.nnodes > 1) {
    if (again || alive > 0) {
      std::fprintf(stderr,
                   "cohortrun: rank %d %s (pid %d); elastic: the group decides whether it goes "
                   "on (%d rank%s of this node left)\n",
                   rank, how.c_str(), static_cast<int>(pid), alive, alive == 1 ? "" : "s");
    } else {
      std::fprintf(stderr,
                   "cohortrun: rank %d %s; elastic: no rank of node %d is left%s: this node's "
                   "part of the job ends with its status\n",
                   rank, how.c_str(), c_.node_rank,
                   stopped ? " (the group stopped)" : " (the others go on while MIN are left)");
      return Next::stop_job;
    }
  } else if (alive >= c_.min && !stopped) {
    std::fprintf(stderr,
                 "cohortrun: rank %d %s (pid %d); elastic: %d rank%s go%s on (--elastic %d:%d)\n",
                 rank, how.c_str(), static_cast<int>(pid), alive, alive == 1 ? "" : "s",
                 alive == 1 ? "es" : "", c_.min, c_.max);
  } else {
    std::fprintf(
        stderr, "cohortrun: rank %d %s; elastic: %d rank%s left, %s: stopping the job\n", rank,
        how.c_str(), alive, alive == 1 ? "" : "s",
        stopped ? "the group stopped" : ("fewer than MIN " + std::to_string(c_.min)).c_str());
    return Next::stop_job;
  }
  if (again) return Next::respawn;
  if (c_.respawn > 0)
    std::fprintf(stderr,
                 "cohortrun: rank %d died %d time%s: not started again (--elastic-respawn %d)\n",
                 rank, incarnation + 1, incarnation == 0 ? "" : "s", c_.respawn);
  return Next::go_on;
}

void ElasticLauncher::finish() {
  if (c_.nnodes == 1) return;
  if (c_.node_rank > 0) {
    try {
      store_->set_string("elastic/node_done/" + std::to_string(c_.node_rank), "1");
    } catch (const std::exception&) {
      // Node 0 stops waiting by itself.
    }
    return;
  }
  // Ranks of other nodes may still be finishing (their last collectives, their watchers).
  const auto deadline = Clock::now() + std::chrono::seconds(15);
  for (int k = 1; k < c_.nnodes; ++k)
    while (!store_has("elastic/node_done/" + std::to_string(k))) {
      if (Clock::now() >= deadline) {
        std::fprintf(stderr,
                     "cohortrun: elastic: node %d did not say it was done within 15 s; stopping "
                     "the store\n",
                     k);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

}  // namespace cohortrun
