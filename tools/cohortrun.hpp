// cohortrun's parts (cohortrun.cpp: the options, restarts and main; cohortrun_attempt.cpp: one
// attempt's poll loop; cohortrun_elastic.cpp: --elastic): what they share.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cohort/core/run_status.hpp"
#include "cohortrun_elastic.hpp"

namespace cohortrun {

struct Options {
  int nproc = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  double kill_grace = 5.0;
  int max_restarts = 0;
  int elastic_min = 0, elastic_max = 0;  // --elastic MIN:MAX (0: off)
  int elastic_respawn = 0;               // --elastic-respawn N: start a dead rank again, N times
  int simulate_hosts = 0;                // --simulate-hosts K: COHORT_HOSTID per rank (0: off)
  std::vector<std::string> argv;
};

// The run-status pages of this node's ranks (core/include/cohort/core/run_status.hpp): one file
// per rank in a private directory, emptied before every attempt, removed at exit.
struct StatusPages {
  std::string dir;
  std::string path(int local) const { return dir + "/rank" + std::to_string(local); }
  void make() {
    for (const char* base : {"/dev/shm", "/tmp"}) {
      std::string t = std::string(base) + "/cohortrun." + std::to_string(::getpid()) + ".XXXXXX";
      if (::mkdtemp(t.data())) {
        dir = t;
        return;
      }
    }
  }
  void reset(int n) const {
    if (dir.empty()) return;
    for (int i = 0; i < n; ++i) {
      const int fd = ::open(path(i).c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd >= 0) ::close(fd);
    }
  }
  // The page a rank left (false: none, or it never mapped it).
  bool read(int local, cohort::run_status::Page* page) const {
    if (dir.empty()) return false;
    const int fd = ::open(path(local).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const ssize_t n = ::read(fd, page, sizeof(*page));
    ::close(fd);
    return n == static_cast<ssize_t>(sizeof(*page)) &&
           std::memcmp(page->magic, cohort::run_status::kMagic, sizeof(page->magic)) == 0;
  }
  void remove(int n) const {
    if (dir.empty()) return;
    for (int i = 0; i < n; ++i) ::unlink(path(i).c_str());
    ::rmdir(dir.c_str());
  }
};

// What ended an attempt.
struct Outcome {
  int failed_rank = -1;    // the first rank that failed (global number), -1: none
  int failed_local = -1;   // its entry in the attempt's ranks
  int failed_slot = -1;    // its local rank (its run-status page)
  int failed_status = 0;   // shell terms
  std::string failed_how;  // "was killed by signal 9 (Killed)"
  pid_t failed_pid = -1;
  std::string failed_last_line;  // its last line on stderr
  int got_signal = 0;            // a signal cohortrun received (forwarded; no restart)
  std::int64_t failed_ns = 0;    // steady clock when its death was seen
  std::int64_t stopped_ns = 0;   // ... when every rank had exited
};

// Steady-clock nanoseconds.
std::int64_t now_ns();

// One attempt: starts this node's ranks, relays their output, stops them all when one fails or a
// signal arrives, and returns once every rank has exited. `on_tick` runs after every wake-up
// (at least every 200 ms while `poll_pages` is set).
Outcome run_attempt(const Options& o, int world, const std::string& job_id,
                    const std::string& job_token, int restart, const StatusPages& pages, int sfd,
                    const sigset_t& old_mask, bool poll_pages, const std::function<void()>& on_tick,
                    ElasticLauncher* elastic);
// "exited with status 1", "was killed by signal 9 (Killed)".
std::string describe_status(int wstatus);

}  // namespace cohortrun
