// cohort-doctor: pre-flight checks for a job, each with the fix when it fails. Run it where the
// job will run, with the job's environment (launcher variables, MASTER_ADDR/PORT), or pass the
// shape of the job:
//   cohort-doctor [--nproc-per-node N] [--world N] [--rank R]
// Prints one line per check (ok / WARN / FAIL) and exits 1 when any check FAILs.
//
// The checks: /dev/shm holds the shm backend's segment for the local ranks; MASTER_ADDR resolves
// and rank 0 can serve the store on MASTER_ADDR:MASTER_PORT (other ranks: it is reachable); UCX
// can create a context and which transports it has; the GPUs and how local ranks map onto them;
// the host GEMM kernel (oneDNN's ISA); whether the host computes bf16 natively (--amp); threads
// per rank against the CPUs.
#include <arpa/inet.h>
#include <dnnl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <fcntl.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cohort/backend/routes.hpp"
#include "cohort/collectives/process_group.hpp"
#include "cohort/collectives/registry.hpp"
#include "cohort/core/error.hpp"
#include "cohort/core/math_mode.hpp"
#include "cohort/devices.hpp"
#include "detail/backoff.hpp"
#include "shm/segment.hpp"

namespace {

int failures = 0, warnings = 0;

void report(const char* level, const std::string& what, const std::string& detail,
            const std::string& fix = "") {
  std::printf("%-5s %-10s %s\n", level, what.c_str(), detail.c_str());
  if (!fix.empty()) std::printf("      %-10s fix: %s\n", "", fix.c_str());
  if (std::strcmp(level, "FAIL") == 0) ++failures;
  if (std::strcmp(level, "WARN") == 0) ++warnings;
}

std::string mib(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f MiB", bytes / (1 << 20));
  return b;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

void check_shm(int local) {
  namespace shm = cohort::comm::shm;
  const std::uint64_t need = shm::Segment::bytes_for(shm::Params::from_env(local));
  struct statvfs st {};
  if (::statvfs("/dev/shm", &st) != 0) {
    report("FAIL", "/dev/shm", std::string("cannot be read: ") + std::strerror(errno),
           "mount a tmpfs on /dev/shm (docker: --shm-size=1g) or use --comm ucx");
    return;
  }
  const double free_bytes = static_cast<double>(st.f_bavail) * static_cast<double>(st.f_frsize);
  const std::string d = mib(free_bytes) + " free; the shm backend needs " +
                        mib(static_cast<double>(need)) + " for " + std::to_string(local) +
                        " local rank(s)";
  if (free_bytes < static_cast<double>(need))
    report("FAIL", "/dev/shm", d,
           "enlarge /dev/shm (docker: --shm-size; mount -o remount,size=2G /dev/shm), lower "
           "COHORT_SHM_SLOT_BYTES, or use --comm ucx");
  else
    report("ok", "/dev/shm", d);
}

// Rank 0 must be able to bind MASTER_ADDR:MASTER_PORT (its store serves there); the others must
// reach it. Either is only a hint when the job is not running yet.
void check_master(int rank) {
  const char* addr = std::getenv("MASTER_ADDR");
  const char* port_s = std::getenv("MASTER_PORT");
  if (!addr || !*addr) {
    report("ok", "master", "MASTER_ADDR unset (cohortrun sets it; one rank needs none)");
    return;
  }
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = ::getaddrinfo(addr, port_s, &hints, &res);
  if (rc != 0) {
    report("FAIL", "master", std::string("MASTER_ADDR '") + addr + "' does not resolve: " +
                                 gai_strerror(rc),
           "set MASTER_ADDR to rank 0's host name or IPv4 address, as every rank sees it");
    return;
  }
  char ip[INET_ADDRSTRLEN] = "?";
  auto* sin = reinterpret_cast<sockaddr_in*>(res->ai_addr);
  ::inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof ip);
  const int port = port_s ? std::atoi(port_s) : 0;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const std::string where = std::string(addr) + " (" + ip + "):" + std::to_string(port);
  if (rank == 0) {
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, res->ai_addr, res->ai_addrlen) == 0)
      report("ok", "master", "rank 0 can serve the store on " + where);
    else
      report("FAIL", "master",
             "rank 0 cannot serve the store on " + where + ": " + std::strerror(errno),
             errno == EADDRINUSE ? "choose a free MASTER_PORT (cohortrun --master-port 0)"
                                 : "MASTER_ADDR must be an address of rank 0's host (or set "
                                   "COHORT_STORE_BIND=0.0.0.0)");
  } else {
    ::fcntl(fd, F_SETFL, O_NONBLOCK);
    ::connect(fd, res->ai_addr, res->ai_addrlen);
    pollfd p{fd, POLLOUT, 0};
    int err = ETIMEDOUT;
    socklen_t len = sizeof err;
    if (::poll(&p, 1, 2000) == 1) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err == 0)
      report("ok", "master", "the store at " + where + " is reachable");
    else
      report("WARN", "master", "the store at " + where + " is not reachable now: " +
                                   std::strerror(err),
             "start rank 0 first, or check MASTER_ADDR/MASTER_PORT and firewalls between hosts");
  }
  ::close(fd);
  ::freeaddrinfo(res);
}

void check_backends(const cohort::comm::ProcessGroupInfo& info) {
  for (const auto& f : cohort::comm::communicator_factories()) {
    std::string why;
    if (f.available(info, &why))
      report("ok", "comm", f.name + " can serve this job");
    else
      report(f.name == "ucx" && info.local_world_size < info.world_size ? "FAIL" : "ok", "comm",
             f.name + " cannot serve this job: " + why,
             f.name == "ucx" && info.local_world_size < info.world_size
                 ? "install UCX (Debian: libucx0 ucx-utils) and check `ucx_info -d`"
                 : "");
  }
  if (std::system("command -v ucx_info >/dev/null 2>&1") == 0) {
    FILE* p = ::popen("ucx_info -d 2>/dev/null | sed -n 's/^# *Transport: *//p' | sort -u | "
                      "tr '\\n' ' '", "r");
    char buf[512] = {};
    if (p) {
      if (!std::fgets(buf, sizeof buf, p)) buf[0] = '\0';
      ::pclose(p);
    }
    report("ok", "ucx", std::string("transports: ") + (buf[0] ? buf : "(none listed)"));
  }
}

void check_gpus(int local) {
  for (const auto& f : cohort::device_factories()) {
    if (f.name == "host") continue;
    std::string why;
    const int n = f.count(&why);
    if (n == 0) {
      report("ok", f.name, "no device (" + why + "); the job runs on the host");
    } else if (local > n) {
      report("FAIL", f.name,
             std::to_string(n) + " device(s) for " + std::to_string(local) +
                 " local ranks: ranks would share a GPU (NCCL refuses that)",
             "--nproc-per-node " + std::to_string(n) + " or fewer on this host");
    } else {
      report("ok", f.name,
             std::to_string(n) + " device(s); local rank i uses " + f.name + ":i (LOCAL_RANK)");
    }
  }
}

void check_gemm() {
  const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  const dnnl_version_t* v = dnnl_version();
  const char* name = isa >= dnnl_cpu_isa_avx512_core ? "AVX-512"
                     : isa >= dnnl_cpu_isa_avx2      ? "AVX2"
                     : isa >= dnnl_cpu_isa_avx       ? "AVX"
                                                     : "SSE4.1 or older";
  const std::string d = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) +
                        " GEMM uses " + name + " kernels";
  if (isa < dnnl_cpu_isa_avx2)
    report("WARN", "gemm", d, "this CPU (or ONEDNN_MAX_CPU_ISA) limits GEMM speed; check the VM's "
                               "CPU model exposes AVX2/AVX-512");
  else
    report("ok", "gemm", d);
}

// Mixed precision on the host (--amp bf16, cohort/core/autocast.hpp): native bf16 or f32.
void check_amp() {
  std::string why;
  if (cohort::host_bf16_supported(&why))
    report("ok", "amp", "host bf16: native (oneDNN's AVX-512 BF16 / AMX kernels); f16: f32 on CPUs");
  else
    report("WARN", "amp", "host bf16: not native: --amp bf16 runs in f32 (" + why + ")",
           "use a CPU with AVX-512 BF16 (Cooper Lake, Sapphire Rapids, Zen 4) or AMX for bf16");
}

// The GPU math modes the environment sets (cohort/core/math_mode.hpp): each variable's value is
// checked, so a typo is reported here rather than at the job's first convolution.
void check_math() {
  const char* vars[] = {"COHORT_ALLOW_TF32", "COHORT_DETERMINISTIC", "COHORT_CUDNN_BENCHMARK"};
  const char* what[] = {"TF32", "deterministic algorithms", "cuDNN benchmark"};
  std::string d, bad;
  for (int i = 0; i < 3; ++i) {
    try {
      d += std::string(d.empty() ? "" : ", ") + what[i] +
           (cohort::math_mode_from_env(vars[i]) ? " on" : " off");
    } catch (const cohort::Error& e) {
      bad += std::string(bad.empty() ? "" : "; ") + e.why();
    }
  }
  if (!bad.empty())
    report("FAIL", "math", bad, "unset the variable or give it 1 (on) or 0 (off)");
  else
    report("ok", "math",
           d + " (GPU only; COHORT_ALLOW_TF32, COHORT_DETERMINISTIC, COHORT_CUDNN_BENCHMARK)");
}

void check_threads(int local) {
  const auto& ht = cohort::host_threads();
  const int cpus = cohort::comm::detail::usable_cpus();
  const std::string d = std::to_string(ht.threads) + " thread(s) per rank x " +
                        std::to_string(local) + " local rank(s) on " + std::to_string(cpus) +
                        " CPU(s) (" + ht.reason + ")";
  if (ht.threads * local > cpus)
    report("WARN", "threads", d + ": oversubscribed",
           "OMP_NUM_THREADS=" + std::to_string(std::max(1, cpus / std::max(1, local))) +
               " (or leave it unset: cohort then divides the CPUs among local ranks)");
  else
    report("ok", "threads", d);
}

// --ops: one row per op, one column per backend of this build: what runs first ("shared": the
// family template on the backend's executor), then the notes on when a vendor path declines.
void print_routes() {
  const std::vector<cohort::DeviceRoutes> all = cohort::op_routes();
  std::printf("%-24s %-18s", "op", "family");
  for (const auto& d : all) std::printf(" %-40s", d.device.c_str());
  std::printf("\n");
  for (std::size_t i = 0; i < all.front().routes.size(); ++i) {
    const cohort::OpRoute& r = all.front().routes[i];
    std::printf("%-24s %-18s", cohort::op_name(r.op), r.family.c_str());
    for (const auto& d : all)
      std::printf(" %-40s", (d.routes[i].path + (d.routes[i].why.empty() ? "" : " *")).c_str());
    std::printf("\n");
  }
  for (const auto& d : all) {
    std::printf("\n%s: shared = %s\n", d.device.c_str(), d.shared.c_str());
    for (const cohort::OpRoute& r : d.routes)
      if (!r.why.empty()) std::printf("  * %s: %s\n", cohort::op_name(r.op), r.why.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cohort-doctor: pre-flight checks for a cohort job, each with its fix"};
  int local = env_int("LOCAL_WORLD_SIZE", 1), world = env_int("WORLD_SIZE", 0),
      rank = env_int("RANK", 0);
  app.add_option("--nproc-per-node", local, "ranks on this host (default LOCAL_WORLD_SIZE or 1)")
      ->check(CLI::PositiveNumber);
  app.add_option("--world", world, "ranks in the job (default WORLD_SIZE, else --nproc-per-node)")
      ->check(CLI::PositiveNumber);
  app.add_option("--rank", rank, "this rank (default RANK or 0): 0 checks it can serve the store")
      ->check(CLI::NonNegativeNumber);
  bool ops = false;
  app.add_flag("--ops", ops, "print where every op runs on each backend of this build, and exit");
  CLI11_PARSE(app, argc, argv);
  if (ops) {
    print_routes();
    return 0;
  }
  if (world == 0) world = local;
  // Threads per rank as a rank of this job would choose them (they depend on the local ranks):
  // host_threads() reads the launcher variables, so give it this job's shape.
  ::setenv("RANK", std::to_string(rank).c_str(), 1);
  ::setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
  ::setenv("LOCAL_RANK", "0", 0);
  ::setenv("LOCAL_WORLD_SIZE", std::to_string(local).c_str(), 1);
  try {
    cohort::comm::ProcessGroupInfo info;
    info.rank = rank;
    info.world_size = world;
    info.local_rank = 0;
    info.local_world_size = local;
    std::printf("cohort-doctor: %d rank(s), %d on this host\n", world, local);
    check_shm(local);
    check_master(rank);
    check_backends(info);
    check_gpus(local);
    check_gemm();
    check_amp();
    check_math();
    check_threads(local);
  } catch (const std::exception& e) {
    report("FAIL", "doctor", e.what());
  }
  std::printf("%d failure(s), %d warning(s)\n", failures, warnings);
  return failures ? 1 : 0;
}
