// One attempt of cohortrun (cohortrun.hpp): start this node's ranks, relay their output line by
// line, stop them all when one fails or a signal arrives (or, elastic, go on), and return once
// every rank has exited.
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cohortrun.hpp"

namespace cohortrun {
namespace {

using Clock = std::chrono::steady_clock;

struct Stream {
  int fd = -1;            // read end, -1 once closed
  int out = 1;            // where its lines go (1 or 2)
  std::size_t owner = 0;  // index of its rank in `ranks`
  std::string partial;
  std::string last_line;  // the last non-empty line (for failure reports)
};

struct Rank {
  int rank = 0;
  int slot = 0;         // local rank (an elastic respawn takes the slot of the rank it replaces)
  int incarnation = 0;  // how many times this launch rank was started before
  pid_t pid = -1;
  bool running = false;
  int status = 0;  // exit status in shell terms once it ended
  Stream streams[2];
};

void write_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    const ssize_t k = ::write(fd, s.data() + off, s.size() - off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;  // our own output is gone: keep running the job anyway
    off += static_cast<std::size_t>(k);
  }
}

// Emits every complete line of `s` with the prefix; with `flush`, the rest too.
void emit_lines(Stream& s, const std::string& prefix, bool flush) {
  std::size_t start = 0;
  std::string out;
  for (;;) {
    const auto nl = s.partial.find('\n', start);
    if (nl == std::string::npos) break;
    out.assign(prefix);
    out.append(s.partial, start, nl - start + 1);
    write_all(s.out, out);
    if (nl > start) s.last_line.assign(s.partial, start, std::min<std::size_t>(nl - start, 300));
    start = nl + 1;
  }
  s.partial.erase(0, start);
  // A line longer than 64 KiB is cut rather than buffered without bound.
  if ((flush && !s.partial.empty()) || s.partial.size() > (64u << 10)) {
    write_all(s.out, prefix + s.partial + "\n");
    s.partial.clear();
  }
}

// A death that is the likely consequence of another rank's: a non-zero exit (cohort's error for a
// lost peer), SIGABRT (a library's fatal error on a lost peer: UCX aborts when a transport read
// from a dead process fails), SIGPIPE (a write to a dead peer's socket) or SIGTERM (ours, when
// stopping the group). A rank killed by anything else (SIGKILL, SIGSEGV, SIGBUS, ...) did not die
// of a peer's death.
bool looks_secondary(int wstatus) {
  if (!WIFSIGNALED(wstatus)) return true;
  const int sig = WTERMSIG(wstatus);
  return sig == SIGABRT || sig == SIGPIPE || sig == SIGTERM;
}

// How long after the first failure a rank killed outright still counts as the cause: a peer
// that aborts on the lost connection can be reaped before the killed rank's own exit completes
// (seen with UCX: the killed rank's teardown took longer than its peer's abort). Short, so that
// a later, unrelated death while stopping never takes the blame.
constexpr std::chrono::milliseconds kCauseWindow{250};

int shell_status(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return 1;
}

}  // namespace

std::string describe_status(int wstatus) {
  if (WIFSIGNALED(wstatus))
    return std::string("was killed by signal ") + std::to_string(WTERMSIG(wstatus)) + " (" +
           strsignal(WTERMSIG(wstatus)) + ")";
  return "exited with status " + std::to_string(shell_status(wstatus));
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// One attempt: starts this node's ranks, relays their output, stops them all when one fails or a
// signal arrives, and returns once every rank has exited. `on_tick` runs after every wake-up
// (at least every 200 ms while `poll_pages` is set).
Outcome run_attempt(const Options& o, int world, const std::string& job_id,
                    const std::string& job_token, int restart, const StatusPages& pages, int sfd,
                    const sigset_t& old_mask, bool poll_pages, const std::function<void()>& on_tick,
                    ElasticLauncher* elastic) {
  std::vector<Rank> ranks;
  ranks.reserve(static_cast<std::size_t>(o.nproc));
  pages.reset(o.nproc);
  // Starts launch rank `global` in local slot `i` as a new entry of `ranks`; `incarnation` > 0: an
  // elastic respawn (it joins the running group).
  const auto spawn = [&](int i, int global, int incarnation) {
    ranks.emplace_back();
    Rank& r = ranks.back();
    r.rank = global;
    r.slot = i;
    r.incarnation = incarnation;
    int pout[2], perr[2];
    if (::pipe2(pout, O_CLOEXEC) != 0 || ::pipe2(perr, O_CLOEXEC) != 0) {
      std::perror("cohortrun: pipe");
      std::exit(1);
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("cohortrun: fork");
      std::exit(1);
    }
    if (pid == 0) {
      ::setpgid(0, 0);
      const int devnull = ::open("/dev/null", O_RDONLY);
      if (devnull >= 0) ::dup2(devnull, 0);
      ::dup2(pout[1], 1);
      ::dup2(perr[1], 2);
      ::signal(SIGPIPE, SIG_DFL);
      sigprocmask(SIG_SETMASK, &old_mask, nullptr);
      const auto set = [](const char* k, const std::string& v) { ::setenv(k, v.c_str(), 1); };
      set("RANK", std::to_string(r.rank));
      set("WORLD_SIZE", std::to_string(world));
      set("LOCAL_RANK", std::to_string(i));
      set("LOCAL_WORLD_SIZE", std::to_string(o.nproc));
      set("GROUP_RANK", std::to_string(o.node_rank));
      set("GROUP_WORLD_SIZE", std::to_string(o.nnodes));
      set("MASTER_ADDR", o.master_addr);
      set("MASTER_PORT", std::to_string(o.master_port));
      set("COHORT_JOB_ID", job_id);
      set("COHORT_RESTART_COUNT", std::to_string(restart));
      // What torchrun gives its workers, for programs written for it.
      set("TORCHELASTIC_RESTART_COUNT", std::to_string(restart));
      set("TORCHELASTIC_MAX_RESTARTS", std::to_string(o.max_restarts));
      if (!pages.dir.empty()) set("COHORT_RUN_STATUS", pages.path(i));
      if (!job_token.empty()) set("COHORT_JOB_TOKEN", job_token);
      // Blocks of consecutive local ranks, as hosts hold them in a real job (i * K / nproc).
      if (o.simulate_hosts > 0)
        set("COHORT_HOSTID", "node" + std::to_string(o.node_rank) + "-sim" +
                                 std::to_string(i * o.simulate_hosts / o.nproc));
      if (elastic) elastic->set_rank_env(incarnation);
      std::vector<std::string> argv_copy = o.argv;
      std::vector<char*> args;
      for (auto& a : argv_copy) args.push_back(a.data());
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      std::fprintf(stderr, "cohortrun: cannot run '%s': %s\n", args[0], std::strerror(errno));
      ::_exit(127);
    }
    ::setpgid(pid, pid);  // also here: no window in which a signal would miss the new group
    ::close(pout[1]);
    ::close(perr[1]);
    r.pid = pid;
    r.running = true;
    r.streams[0] = {pout[0], 1, ranks.size() - 1, {}, {}};
    r.streams[1] = {perr[0], 2, ranks.size() - 1, {}, {}};
  };
  for (int i = 0; i < o.nproc; ++i) spawn(i, o.node_rank * o.nproc + i, 0);

  Outcome out;
  bool killing = false;
  Clock::time_point group_done_at{};  // elastic: when waiting joiners are stopped
  Clock::time_point kill_at{};
  Clock::time_point first_failure_at{};
  int failed_wstatus = 0;
  bool sent_kill = false;  // our SIGKILL after the grace: deaths from then on are ours
  Clock::time_point drain_until{};
  bool drain_deadline_set = false;
  const auto grace = std::chrono::milliseconds(static_cast<long long>(o.kill_grace * 1000));

  const auto signal_all = [&](int sig) {
    for (auto& r : ranks)
      if (r.running) ::kill(-r.pid, sig);
  };
  const auto start_stopping = [&]() {
    if (killing) return;
    killing = true;
    kill_at = Clock::now() + grace;
    signal_all(SIGTERM);
  };

  std::vector<pollfd> fds;
  std::vector<Stream*> fd_streams;
  std::vector<std::string> prefixes;
  for (auto& r : ranks) prefixes.push_back("[rank " + std::to_string(r.rank) + "] ");

  for (;;) {
    bool any_running = false, any_open = false;
    for (auto& r : ranks) {
      any_running |= r.running;
      any_open |= r.streams[0].fd >= 0 || r.streams[1].fd >= 0;
    }
    if (!any_running && out.stopped_ns == 0) out.stopped_ns = now_ns();
    // Elastic: every first-started rank that lived has finished (exit 0) and only respawned
    // ranks still run. One admitted to the group finishes with it (its last collectives are
    // theirs); one still waiting to be admitted never will be: after a grace, stop it.
    if (elastic && any_running && !killing && o.elastic_respawn > 0) {
      bool only_respawned = true, some_finished = false;
      for (const auto& r : ranks) {
        if (r.running && r.incarnation == 0) only_respawned = false;
        if (!r.running && r.status == 0) some_finished = true;
      }
      if (only_respawned && some_finished) {
        if (group_done_at == Clock::time_point{})
          group_done_at = Clock::now() + std::chrono::seconds(10);
        if (Clock::now() >= group_done_at) {
          std::fprintf(stderr,
                       "cohortrun: elastic: the group finished; stopping the ranks started "
                       "again that it never admitted\n");
          killing = true;  // their exit is not the job's failure
          kill_at = Clock::now() + grace;
          signal_all(SIGTERM);
        }
      }
    }
    if (!any_running && !any_open) break;
    if (!any_running && !drain_deadline_set) {
      // Every rank is gone; something it started may still hold the pipes. Give it a moment.
      drain_until = Clock::now() + std::chrono::seconds(2);
      drain_deadline_set = true;
    }
    if (drain_deadline_set && Clock::now() >= drain_until) {
      for (auto& r : ranks) {
        ::kill(-r.pid, SIGKILL);
        for (auto& st : r.streams) {
          if (st.fd < 0) continue;
          emit_lines(st, prefixes[st.owner], true);
          ::close(st.fd);
          st.fd = -1;
        }
      }
      break;
    }

    fds.clear();
    fd_streams.clear();
    fds.push_back({sfd, POLLIN, 0});
    fd_streams.push_back(nullptr);
    for (auto& r : ranks)
      for (auto& st : r.streams)
        if (st.fd >= 0) {
          fds.push_back({st.fd, POLLIN, 0});
          fd_streams.push_back(&st);
        }
    int timeout_ms = poll_pages ? 200 : -1;
    const auto now = Clock::now();
    const auto until = [&](Clock::time_point t) {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count() + 1;
      const int v = static_cast<int>(ms < 0 ? 0 : ms);
      timeout_ms = timeout_ms < 0 ? v : std::min(timeout_ms, v);
    };
    if (killing && any_running) until(kill_at);
    if (group_done_at != Clock::time_point{} && !killing) until(group_done_at);
    if (drain_deadline_set) until(drain_until);

    const int pr = ::poll(fds.data(), fds.size(), timeout_ms);
    if (pr < 0 && errno != EINTR) {
      std::perror("cohortrun: poll");
      signal_all(SIGKILL);
      std::exit(1);
    }
    if (killing && any_running && Clock::now() >= kill_at) {
      sent_kill = true;
      signal_all(SIGKILL);
      kill_at = Clock::now() + std::chrono::seconds(1);  // repeat only if one survives that
    }
    if (out.failed_rank < 0 && !out.got_signal) on_tick();
    if (pr <= 0) continue;

    // Output first, so that lines written just before a rank died come out before our notes.
    for (std::size_t k = 1; k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Stream& st = *fd_streams[k];
      const std::size_t owner = st.owner;
      char buf[65536];
      const ssize_t n = ::read(st.fd, buf, sizeof(buf));
      if (n > 0) {
        st.partial.append(buf, static_cast<std::size_t>(n));
        emit_lines(st, prefixes[owner], false);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        emit_lines(st, prefixes[owner], true);
        ::close(st.fd);
        st.fd = -1;
      }
    }

    if (fds[0].revents & POLLIN) {
      signalfd_siginfo si;
      while (::read(sfd, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) {
        const int sig = static_cast<int>(si.ssi_signo);
        if (sig == SIGCHLD) continue;  // reaped below
        if (!out.got_signal) out.got_signal = sig;
        signal_all(sig);
        if (!killing) {
          killing = true;
          kill_at = Clock::now() + grace;
        }
      }
      int wstatus;
      pid_t pid;
      std::vector<std::size_t> respawns;  // entries of `ranks` to start again (elastic)
      while ((pid = ::waitpid(-1, &wstatus, WNOHANG)) > 0) {
        for (std::size_t i = 0; i < ranks.size(); ++i) {
          Rank& r = ranks[i];
          if (r.pid != pid) continue;
          r.running = false;
          r.status = shell_status(wstatus);
          if (elastic && !killing && !out.got_signal) {
            int alive = 0;
            for (const auto& q : ranks) alive += q.running;
            const auto next = elastic->on_exit(r.rank, r.incarnation, r.status,
                                               describe_status(wstatus), pid, alive);
            if (next == ElasticLauncher::Next::respawn) respawns.push_back(i);
            if (next != ElasticLauncher::Next::stop_job) continue;
          }
          const bool first = out.failed_rank < 0 && !killing;
          // The first failure reaped may be a peer's reaction to the real one (looks_secondary):
          // a rank killed outright and reaped within kCauseWindow takes the blame instead. The
          // time of death stays the first one's.
          const bool cause = out.failed_rank >= 0 && !sent_kill &&
                             looks_secondary(failed_wstatus) && !looks_secondary(wstatus) &&
                             Clock::now() - first_failure_at <= kCauseWindow;
          if (r.status != 0 && !out.got_signal && (first || cause)) {
            out.failed_rank = r.rank;
            out.failed_local = static_cast<int>(i);
            out.failed_slot = r.slot;
            out.failed_status = r.status;
            out.failed_how = describe_status(wstatus);
            out.failed_pid = pid;
            failed_wstatus = wstatus;
            if (first) {
              out.failed_ns = now_ns();
              first_failure_at = Clock::now();
            }
            start_stopping();
          }
        }
      }
      for (const std::size_t i : respawns) {
        if (killing) break;
        const int slot = ranks[i].slot, global = ranks[i].rank, inc = ranks[i].incarnation + 1;
        spawn(slot, global, inc);
        prefixes.push_back("[rank " + std::to_string(global) + "] ");
        std::fprintf(stderr,
                     "cohortrun: elastic: starting rank %d again (pid %d, respawn %d of "
                     "--elastic-respawn %d); it joins the group at a step boundary\n",
                     global, static_cast<int>(ranks.back().pid), inc, o.elastic_respawn);
      }
    }
  }
  if (out.failed_local >= 0) {
    const Rank& r = ranks[static_cast<std::size_t>(out.failed_local)];
    out.failed_last_line = r.streams[1].last_line;
  }
  return out;
}

}  // namespace cohortrun
