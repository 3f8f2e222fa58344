// cohortrun: start the ranks of one node of a job, as torchrun does.
//
//   cohortrun --nproc-per-node 4 [--nnodes 1 --node-rank 0 --master-addr 127.0.0.1
//             --master-port 29500] PROGRAM [ARGS...]
//
// Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT and COHORT_JOB_ID (shared by the ranks of this node, unique per job
// unless the caller sets it). Every line a rank writes to stdout/stderr comes out on ours prefixed
// with "[rank N] ", whole (each line is one write(2)). SIGINT, SIGTERM, SIGHUP and SIGQUIT are
// forwarded to every rank. When a rank fails (non-zero exit or killed), the others get SIGTERM,
// then SIGKILL after --kill-grace seconds, and cohortrun exits with the failing rank's status
// (128 + signal number for a signal). Stdin of the ranks is /dev/null.
//
// With --max-restarts N (torchrun's meaning: the whole group restarts) a failure instead stops
// every rank, is reported (rank, host, pid, status, and from the rank's run-status page its last
// step and collective: core/include/cohort/core/run_status.hpp) and the group starts again, up to
// N times in all for the job, with COHORT_RESTART_COUNT (and TORCHELASTIC_RESTART_COUNT) = the
// restart's number and a job id of its own (".r<k>"). A program that checkpoints to a directory
// (Trainer's checkpoint_dir) continues from its newest checkpoint; cohortrun prints how long the
// group took to train again. A failure that repeats itself in the next attempt (the same status,
// step reached and last line of stderr, numbers aside) stops the restarts: a restart cannot fix a
// deterministic failure.
//
// With --elastic MIN:MAX a rank that dies does not stop the others: the store, the marking of the
// dead and the decision to go on are cohortrun_elastic.cpp's.
//
// Shaped as one single-threaded poll loop: the child pipes and a signalfd (SIGCHLD and the
// forwarded signals) are its only inputs, so there is no async-signal-safety to get wrong and no
// lock. Each rank runs in its own process group, so forwarding and killing reach the helpers a
// rank may have started, and a terminal's Ctrl-C reaches the ranks once (through us), not twice.
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

#include "cohort/core/run_status.hpp"
#include "cohortrun_elastic.hpp"

namespace {

using Clock = std::chrono::steady_clock;

const char* const kUsage =
    "usage: cohortrun [options] PROGRAM [ARGS...]\n"
    "\n"
    "Starts the ranks of one node of a cohort (or torchrun-style) job.\n"
    "\n"
    "options (torchrun's spelling; --nproc_per_node style is accepted too):\n"
    "  --nproc-per-node N   ranks on this node (default 1)\n"
    "  --nnodes N           nodes in the job (default 1)\n"
    "  --node-rank R        this node's index, 0..nnodes-1 (default 0)\n"
    "  --master-addr HOST   where rank 0 serves the rendezvous store (default 127.0.0.1)\n"
    "  --master-port PORT   its port (default 29500; 0 picks a free port, one node only)\n"
    "  --kill-grace SEC     after a failure, SIGKILL ranks still alive SEC seconds after\n"
    "                       SIGTERM (default 5)\n"
    "  --max-restarts N     when a rank fails, stop every rank and start the whole group\n"
    "                       again, at most N times for the job (default 0); the program\n"
    "                       sees the restart's number in COHORT_RESTART_COUNT (one node\n"
    "                       only: use torchrun's c10d rendezvous across nodes)\n"
    "  --elastic MIN:MAX    elastic training: a rank that dies does not stop the others\n"
    "                       while at least MIN are left; they agree on a new group and go\n"
    "                       on (the program's --elastic). cohortrun serves the store\n"
    "                       itself (node 0's, with --nnodes), so that it outlives every rank\n"
    "  --elastic-respawn N  with --elastic: start a rank that died again (at most N times\n"
    "                       per rank); it joins the group at a step boundary and takes the\n"
    "                       state from a live rank (the group grows back)\n"
    "  -h, --help           this text\n";

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
  std::vector<std::string> argv;
};

[[noreturn]] void die_usage(const std::string& msg) {
  std::fprintf(stderr, "cohortrun: %s (see cohortrun --help)\n", msg.c_str());
  std::exit(2);
}

long parse_long(const std::string& flag, const std::string& v, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || x < lo || x > hi)
    die_usage(flag + " expects an integer in " + std::to_string(lo) + ".." + std::to_string(hi) +
              ", got '" + v + "'");
  return x;
}

Options parse(int argc, char** argv) {
  Options o;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (a.size() < 2 || a[0] != '-') break;  // the program
    std::string value;
    bool has_value = false;
    if (const auto eq = a.find('='); eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_value = true;
    }
    for (std::size_t k = 2; k < a.size(); ++k)
      if (a[k] == '_') a[k] = '-';
    const auto take = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) die_usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--nproc-per-node") {
      o.nproc = static_cast<int>(parse_long(a, take(), 1, 4096));
    } else if (a == "--nnodes") {
      o.nnodes = static_cast<int>(parse_long(a, take(), 1, 1 << 20));
    } else if (a == "--node-rank") {
      o.node_rank = static_cast<int>(parse_long(a, take(), 0, 1 << 20));
    } else if (a == "--master-addr") {
      o.master_addr = take();
      if (o.master_addr.empty()) die_usage("--master-addr needs a host");
    } else if (a == "--master-port") {
      o.master_port = static_cast<int>(parse_long(a, take(), 0, 65535));
    } else if (a == "--max-restarts") {
      o.max_restarts = static_cast<int>(parse_long(a, take(), 0, 1000000));
    } else if (a == "--elastic") {
      const std::string v = take();
      const auto colon = v.find(':');
      o.elastic_min = static_cast<int>(parse_long(a, v.substr(0, colon), 1, 4096));
      o.elastic_max = static_cast<int>(parse_long(
          a, colon == std::string::npos ? v.substr(0, colon) : v.substr(colon + 1), 1, 4096));
      if (o.elastic_min > o.elastic_max) die_usage("--elastic " + v + ": MIN is above MAX");
    } else if (a == "--elastic-respawn") {
      o.elastic_respawn = static_cast<int>(parse_long(a, take(), 0, 1000));
    } else if (a == "--kill-grace") {
      const std::string v = take();
      char* end = nullptr;
      o.kill_grace = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(o.kill_grace >= 0) || o.kill_grace > 3600)
        die_usage("--kill-grace expects seconds between 0 and 3600, got '" + v + "'");
    } else {
      die_usage("unknown option '" + std::string(argv[i]) + "'");
    }
  }
  for (; i < argc; ++i) o.argv.emplace_back(argv[i]);
  if (o.argv.empty()) die_usage("no program given");
  if (o.node_rank >= o.nnodes)
    die_usage("--node-rank " + std::to_string(o.node_rank) + " is not below --nnodes " +
              std::to_string(o.nnodes));
  // Each node's cohortrun would count its own attempts, and a node that restarts first could
  // reach the previous attempt's store (its rank 0 not yet stopped) and fail again, one attempt
  // ahead of the others: the nodes would never meet. Agreeing on the attempt needs a store that
  // outlives the attempts, which torchrun's c10d rendezvous is.
  if (o.max_restarts > 0 && o.nnodes > 1)
    die_usage("--max-restarts with --nnodes > 1 is not supported: every node would count its own "
              "restarts and a node that restarts first can reach the previous attempt; restart "
              "a multi-node job with torchrun --max-restarts (c10d rendezvous) or a Slurm job "
              "that requeues itself (docs/LAUNCH.md, \"When a rank dies\")");
  if (o.elastic_respawn > 0 && o.elastic_min == 0)
    die_usage("--elastic-respawn needs --elastic MIN:MAX");
  if (o.elastic_min > 0 && o.max_restarts > 0)
    die_usage(
        "--elastic and --max-restarts: pick one (elastic goes on with the survivors, "
        "restarts start every rank again)");
  if (o.elastic_min > o.nproc * o.nnodes)
    die_usage("--elastic MIN " + std::to_string(o.elastic_min) + " is above the " +
              std::to_string(o.nproc * o.nnodes) + " ranks started");
  if (o.master_port == 0 && o.nnodes > 1)
    die_usage("--master-port 0 (pick a free port) works only with --nnodes 1: the other nodes "
              "could not know the port");
  return o;
}

// A free TCP port now (another process may take it before rank 0 binds it; for tests and
// single-node runs that is a small risk worth the convenience).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::fprintf(stderr, "cohortrun: cannot find a free port: %s\n", std::strerror(errno));
    std::exit(1);
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

// COHORT_JOB_TOKEN for the ranks: the user's, else (one node) 32 random hex digits from
// /dev/urandom, so that the store accepts this job's ranks only. With several nodes each node's
// cohortrun would draw a different one, so none is made: set the same COHORT_JOB_TOKEN on every
// node (docs/LAUNCH.md).
std::string make_job_token(int nnodes) {
  if (const char* t = std::getenv("COHORT_JOB_TOKEN"); t && *t) return t;
  if (nnodes > 1) return "";
  unsigned char raw[16] = {};
  FILE* f = std::fopen("/dev/urandom", "rb");
  const bool ok = f && std::fread(raw, 1, sizeof(raw), f) == sizeof(raw);
  if (f) std::fclose(f);
  if (!ok) {
    std::random_device rd;
    for (auto& b : raw) b = static_cast<unsigned char>(rd());
  }
  std::string hex;
  char two[3];
  for (unsigned char b : raw) {
    std::snprintf(two, sizeof(two), "%02x", b);
    hex += two;
  }
  return hex;
}

std::string make_job_id() {
  if (const char* id = std::getenv("COHORT_JOB_ID"); id && *id) return id;
  std::random_device rd;
  char buf[32];
  std::snprintf(buf, sizeof(buf), "cr%05x%08x", static_cast<unsigned>(::getpid()) & 0xfffff, rd());
  return buf;
}

struct Stream {
  int fd = -1;     // read end, -1 once closed
  int out = 1;     // where its lines go (1 or 2)
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

int shell_status(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return 1;
}

std::string describe_status(int wstatus) {
  if (WIFSIGNALED(wstatus))
    return std::string("was killed by signal ") + std::to_string(WTERMSIG(wstatus)) + " (" +
           strsignal(WTERMSIG(wstatus)) + ")";
  return "exited with status " + std::to_string(shell_status(wstatus));
}

// Segments the shm backend names "/cohort-<job>-<nonce>" (collectives/shm/segment.cpp) are
// unlinked by their creator as soon as every rank has mapped them; one is left only if its
// creator died in between. Remove those of this job.
void remove_stale_segments(const std::string& job_id) {
  std::string safe;
  for (char c : job_id) {
    if (safe.size() >= 48) break;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    safe += ok ? c : '_';
  }
  const std::string prefix = "cohort-" + safe + "-";
  DIR* d = ::opendir("/dev/shm");
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) != 0) continue;
    const std::string path = std::string("/dev/shm/") + e->d_name;
    if (::unlink(path.c_str()) == 0)
      std::fprintf(stderr, "cohortrun: removed %s left by a rank that died while creating it\n",
                   path.c_str());
  }
  ::closedir(d);
}

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
  int failed_rank = -1;        // the first rank that failed (global number), -1: none
  int failed_local = -1;       // its entry in the attempt's ranks
  int failed_slot = -1;        // its local rank (its run-status page)
  int failed_status = 0;       // shell terms
  std::string failed_how;      // "was killed by signal 9 (Killed)"
  pid_t failed_pid = -1;
  std::string failed_last_line;  // its last line on stderr
  int got_signal = 0;          // a signal cohortrun received (forwarded; no restart)
  std::int64_t failed_ns = 0;  // steady clock when its death was seen
  std::int64_t stopped_ns = 0; // ... when every rank had exited
};

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// One attempt: starts this node's ranks, relays their output, stops them all when one fails or a
// signal arrives, and returns once every rank has exited. `on_tick` runs after every wake-up
// (at least every 200 ms while `poll_pages` is set).
template <class Tick>
Outcome run_attempt(const Options& o, int world, const std::string& job_id,
                    const std::string& job_token, int restart, const StatusPages& pages, int sfd,
                    const sigset_t& old_mask, bool poll_pages, Tick&& on_tick,
                    cohortrun::ElasticLauncher* elastic) {
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
            if (next == cohortrun::ElasticLauncher::Next::respawn) respawns.push_back(i);
            if (next != cohortrun::ElasticLauncher::Next::stop_job) continue;
          }
          if (r.status != 0 && out.failed_rank < 0 && !out.got_signal && !killing) {
            out.failed_rank = r.rank;
            out.failed_local = static_cast<int>(i);
            out.failed_slot = r.slot;
            out.failed_status = r.status;
            out.failed_how = describe_status(wstatus);
            out.failed_pid = pid;
            out.failed_ns = now_ns();
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

std::string hostname() {
  char h[256] = {};
  if (::gethostname(h, sizeof(h) - 1) != 0) return "?";
  return h;
}

// " at step 57 (newest checkpoint: step 50), in allreduce #912 (1199882 x f32)", from the page.
std::string where_it_was(const cohort::run_status::Page* p) {
  if (!p) return ", before it reported any progress";
  std::string s;
  if (p->step >= 0) s += " at step " + std::to_string(p->step);
  if (p->collectives > 0)
    s += std::string(", in ") + p->collective_kind + " #" + std::to_string(p->collectives) +
         (std::strcmp(p->collective_kind, "barrier") == 0
              ? std::string()
              : " (" + std::to_string(p->collective_count) + " x " + p->collective_dtype + ")");
  return s.empty() ? ", before it reported any progress" : s;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  if (o.master_port == 0) o.master_port = free_port();
  const std::string base_job_id = make_job_id();
  const std::string job_token = make_job_token(o.nnodes);
  const int world = o.nproc * o.nnodes;

  // Signals arrive through a signalfd, so they are blocked for normal delivery (and restored in
  // the children before exec).
  sigset_t mask, old_mask;
  sigemptyset(&mask);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&mask, s);
  sigprocmask(SIG_BLOCK, &mask, &old_mask);
  const int sfd = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    std::perror("cohortrun: signalfd");
    return 1;
  }
  ::signal(SIGPIPE, SIG_IGN);

  // --elastic: the store lives in a process of its own (started before cohortrun has any thread,
  // so the ranks are forked from a single-threaded process), for as long as cohortrun does.
  std::unique_ptr<cohortrun::ElasticLauncher> elastic;
  if (o.elastic_min > 0) {
    if (!job_token.empty()) ::setenv("COHORT_JOB_TOKEN", job_token.c_str(), 1);
    elastic = std::make_unique<cohortrun::ElasticLauncher>(
        cohortrun::ElasticConfig{o.elastic_min, o.elastic_max, o.elastic_respawn, o.nnodes,
                                 o.node_rank, o.master_addr, o.master_port},
        old_mask);
  }
  StatusPages pages;
  pages.make();
  const std::string host = hostname();
  // The previous failure, to recognise one that repeats itself.
  std::string previous_signature;
  std::int64_t failed_ns = 0, stopped_ns = 0, spawned_ns = 0;
  int last_failed_rank = -1;
  int exit_status = 0;
  for (int restart = 0;; ++restart) {
    const std::string job_id =
        restart == 0 ? base_job_id : base_job_id + ".r" + std::to_string(restart);
    spawned_ns = now_ns();
    bool back = restart == 0;  // reported "training again" for this attempt
    const auto watch = [&] {
      if (back) return;
      cohort::run_status::Page p;
      for (int i = 0; i < o.nproc && !back; ++i) {
        if (!pages.read(i, &p) || p.first_step_ns == 0) continue;
        back = true;
        const double total = static_cast<double>(p.first_step_ns - failed_ns) / 1e9;
        std::fprintf(stderr,
                     "cohortrun: training again at step %lld, %.2f s after rank %d died "
                     "(stopping the ranks %.2f s, restart to checkpoint loaded %.2f s%s, "
                     "first step %.2f s)\n",
                     static_cast<long long>(p.step), total, last_failed_rank,
                     static_cast<double>(stopped_ns - failed_ns) / 1e9,
                     static_cast<double>((p.resumed_ns ? p.resumed_ns : p.first_step_ns) -
                                         stopped_ns) / 1e9,
                     p.resumed_step >= 0
                         ? (" at step " + std::to_string(p.resumed_step)).c_str()
                         : ", no checkpoint",
                     static_cast<double>(p.first_step_ns -
                                         (p.resumed_ns ? p.resumed_ns : spawned_ns)) / 1e9);
      }
    };
    const Outcome out =
        run_attempt(o, world, job_id, job_token, restart, pages, sfd, old_mask,
                    /*poll_pages=*/restart > 0 && !pages.dir.empty(), watch, elastic.get());
    remove_stale_segments(job_id);
    if (out.got_signal) {
      exit_status = 128 + out.got_signal;
      break;
    }
    if (out.failed_rank < 0) {
      exit_status = 0;
      break;
    }
    exit_status = out.failed_status;
    cohort::run_status::Page page;
    const bool has_page = pages.read(out.failed_slot, &page);
    // The lead rank of this node records the checkpoints it wrote.
    cohort::run_status::Page lead;
    const bool has_lead = pages.read(0, &lead);
    std::string ckpt;
    if (has_lead && lead.checkpoint_step >= 0) {
      ckpt = "; newest checkpoint written: step " + std::to_string(lead.checkpoint_step);
      if (lead.checkpoint_writing >= 0)
        ckpt += " (the save of step " + std::to_string(lead.checkpoint_writing) +
                " was still being written)";
    }
    std::fprintf(stderr, "cohortrun: rank %d %s on host %s (pid %d)%s%s\n", out.failed_rank,
                 out.failed_how.c_str(), host.c_str(), static_cast<int>(out.failed_pid),
                 where_it_was(has_page ? &page : nullptr).c_str(), ckpt.c_str());
    if (!out.failed_last_line.empty())
      std::fprintf(stderr, "cohortrun: its last line on stderr: %s\n",
                   out.failed_last_line.c_str());
    failed_ns = out.failed_ns;
    last_failed_rank = out.failed_rank;
    stopped_ns = out.stopped_ns ? out.stopped_ns : now_ns();
    if (restart >= o.max_restarts) {
      if (o.max_restarts > 0)
        std::fprintf(stderr, "cohortrun: no restarts left (--max-restarts %d, all used); exiting "
                     "with rank %d's status %d\n", o.max_restarts, out.failed_rank,
                     out.failed_status);
      break;
    }
    // The same failure: status, step reached and last line alike, the line's numbers aside
    // (ranks that all fail alike race to be first, and put their rank in the message).
    std::string line = out.failed_last_line;
    for (char& c : line)
      if (c >= '0' && c <= '9') c = '#';
    const std::string signature = std::to_string(out.failed_status) + "|" +
                                  std::to_string(has_page ? page.step : -1) + "|" + line;
    if (signature == previous_signature) {
      std::fprintf(stderr, "cohortrun: the job failed the same way as in the previous attempt "
                   "(rank %d %s%s, the same last line); a restart cannot fix that: not "
                   "restarting (%d of --max-restarts %d left)\n", out.failed_rank,
                   out.failed_how.c_str(), where_it_was(has_page ? &page : nullptr).c_str(),
                   o.max_restarts - restart, o.max_restarts);
      break;
    }
    previous_signature = signature;
    std::fprintf(stderr, "cohortrun: restart %d of %d: starting all %d rank%s again "
                 "(COHORT_RESTART_COUNT=%d, job %s.r%d)\n", restart + 1, o.max_restarts,
                 o.nproc, o.nproc == 1 ? "" : "s", restart + 1, base_job_id.c_str(), restart + 1);
  }
  pages.remove(o.nproc);
  if (elastic) elastic->finish();
  return exit_status;
}
