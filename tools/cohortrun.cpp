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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

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
    "  -h, --help           this text\n";

struct Options {
  int nproc = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  double kill_grace = 5.0;
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
};

struct Rank {
  int rank = 0;
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

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  if (o.master_port == 0) o.master_port = free_port();
  const std::string job_id = make_job_id();
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

  std::vector<Rank> ranks(static_cast<std::size_t>(o.nproc));
  for (int i = 0; i < o.nproc; ++i) {
    Rank& r = ranks[static_cast<std::size_t>(i)];
    r.rank = o.node_rank * o.nproc + i;
    int pout[2], perr[2];
    if (::pipe2(pout, O_CLOEXEC) != 0 || ::pipe2(perr, O_CLOEXEC) != 0) {
      std::perror("cohortrun: pipe");
      return 1;
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("cohortrun: fork");
      return 1;
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
      if (!job_token.empty()) set("COHORT_JOB_TOKEN", job_token);
      std::vector<char*> args;
      for (auto& a : o.argv) args.push_back(a.data());
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
    r.streams[0] = {pout[0], 1, static_cast<std::size_t>(i), {}};
    r.streams[1] = {perr[0], 2, static_cast<std::size_t>(i), {}};
  }

  int failed_rank = -1;
  int failed_status = 0;
  int got_signal = 0;
  bool killing = false;
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
    if (!any_running && !any_open) break;
    if (!any_running && !drain_deadline_set) {
      // Every rank is gone; something it started may still hold the pipes. Give it a moment.
      drain_until = Clock::now() + std::chrono::seconds(2);
      drain_deadline_set = true;
    }
    if (drain_deadline_set && Clock::now() >= drain_until) {
      for (auto& r : ranks) {
        ::kill(-r.pid, SIGKILL);
        for (auto& s : r.streams) {
          if (s.fd < 0) continue;
          emit_lines(s, prefixes[s.owner], true);
          ::close(s.fd);
          s.fd = -1;
        }
      }
      break;
    }

    fds.clear();
    fd_streams.clear();
    fds.push_back({sfd, POLLIN, 0});
    fd_streams.push_back(nullptr);
    for (auto& r : ranks)
      for (auto& s : r.streams)
        if (s.fd >= 0) {
          fds.push_back({s.fd, POLLIN, 0});
          fd_streams.push_back(&s);
        }
    int timeout_ms = -1;
    const auto now = Clock::now();
    const auto until = [&](Clock::time_point t) {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count() + 1;
      const int v = static_cast<int>(ms < 0 ? 0 : ms);
      timeout_ms = timeout_ms < 0 ? v : std::min(timeout_ms, v);
    };
    if (killing && any_running) until(kill_at);
    if (drain_deadline_set) until(drain_until);

    const int pr = ::poll(fds.data(), fds.size(), timeout_ms);
    if (pr < 0 && errno != EINTR) {
      std::perror("cohortrun: poll");
      signal_all(SIGKILL);
      return 1;
    }
    if (killing && any_running && Clock::now() >= kill_at) {
      signal_all(SIGKILL);
      kill_at = Clock::now() + std::chrono::seconds(1);  // repeat only if one survives that
    }
    if (pr <= 0) continue;

    // Output first, so that lines written just before a rank died come out before our notes.
    for (std::size_t k = 1; k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Stream& s = *fd_streams[k];
      const std::size_t owner = s.owner;
      char buf[65536];
      const ssize_t n = ::read(s.fd, buf, sizeof(buf));
      if (n > 0) {
        s.partial.append(buf, static_cast<std::size_t>(n));
        emit_lines(s, prefixes[owner], false);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        emit_lines(s, prefixes[owner], true);
        ::close(s.fd);
        s.fd = -1;
      }
    }

    if (fds[0].revents & POLLIN) {
      signalfd_siginfo si;
      while (::read(sfd, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) {
        const int sig = static_cast<int>(si.ssi_signo);
        if (sig == SIGCHLD) continue;  // reaped below
        if (!got_signal) got_signal = sig;
        signal_all(sig);
        if (!killing) {
          killing = true;
          kill_at = Clock::now() + grace;
        }
      }
      int wstatus;
      pid_t pid;
      while ((pid = ::waitpid(-1, &wstatus, WNOHANG)) > 0) {
        for (auto& r : ranks) {
          if (r.pid != pid) continue;
          r.running = false;
          r.status = shell_status(wstatus);
          if (r.status != 0 && failed_rank < 0 && !got_signal && !killing) {
            failed_rank = r.rank;
            failed_status = r.status;
            std::fprintf(stderr, "cohortrun: rank %d %s; stopping the other ranks\n", r.rank,
                         describe_status(wstatus).c_str());
            start_stopping();
          }
        }
      }
    }
  }

  remove_stale_segments(job_id);
  if (failed_rank >= 0) return failed_status;
  if (got_signal) return 128 + got_signal;
  return 0;
}
