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

#include "cohortrun.hpp"

namespace {

using namespace cohortrun;
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
    "  --simulate-hosts K   treat this node's ranks as K hosts: local ranks split in K\n"
    "                       consecutive blocks (sizes differ by at most one), each rank's\n"
    "                       COHORT_HOSTID set to node<R>-sim<block> (the hier backend\n"
    "                       and cohort-bench --calibrate read it); 1..nproc-per-node\n"
    "  -h, --help           this text\n";

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
    } else if (a == "--simulate-hosts") {
      o.simulate_hosts = static_cast<int>(parse_long(a, take(), 1, 4096));
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
  if (o.simulate_hosts > o.nproc)
    die_usage("--simulate-hosts " + std::to_string(o.simulate_hosts) + " is above the " +
              std::to_string(o.nproc) + " ranks of this node (--nproc-per-node): a host needs a rank");
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
