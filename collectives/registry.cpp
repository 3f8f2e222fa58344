// The one list of communicator backends in this build, written by hand behind build flags
// (DESIGN.md: no self-registering objects), and the selection policy over it.
#include "cohort/collectives/registry.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include <cstdlib>

#include "cohort/core/error.hpp"
#include "detail/env.hpp"
#include "self/self_communicator.hpp"
#include "shm/shm_communicator.hpp"
#if COHORT_HAVE_UCX
#include "hier/hier_communicator.hpp"
#include "ucx/ucx_communicator.hpp"
#endif
#if COHORT_HAVE_NCCL
#include "nccl/nccl_communicator.hpp"
#endif

namespace cohort::comm {

const std::vector<CommunicatorFactory>& communicator_factories() {
  // Portable backends last.
  static const std::vector<CommunicatorFactory> all = {
#if COHORT_HAVE_NCCL
    nccl::factory(),  // one GPU per rank, device memory
#endif
#if COHORT_HAVE_UCX
    hier::factory(),  // shm on each host + ucx between hosts
    ucx::factory(),
#endif
    shm::factory(),   // every rank on one host
    self::factory(),  // world size 1
  };
  return all;
}

namespace {

// Backends the design knows but this build does not contain, with the reason.
std::vector<std::pair<std::string, std::string>> absent_backends() {
  std::vector<std::pair<std::string, std::string>> v;
#if !COHORT_HAVE_NCCL
  v.emplace_back("nccl", "this library was built without NCCL/CUDA");
#endif
#if !COHORT_HAVE_UCX
  v.emplace_back("ucx", "this library was built without UCX");
  v.emplace_back("hier", "this library was built without UCX (hier joins hosts through it)");
#endif
  return v;
}

std::string known_names() {
  std::string s;
  for (const auto& f : communicator_factories()) s += (s.empty() ? "" : ", ") + f.name;
  return s;
}

// The backends that can serve `info`, best first by score: "shm, self" (or "none").
std::string available_names(const ProcessGroupInfo& info) {
  std::vector<const CommunicatorFactory*> ok;
  for (const auto& f : communicator_factories()) {
    std::string why;
    if (f.available(info, &why)) ok.push_back(&f);
  }
  // Best first as "auto" ranks them: a backend auto would not pick for this group (hier on one
  // host) after those it would.
  const auto rank = [&info](const CommunicatorFactory* f) {
    return f->score - (f->auto_ok && !f->auto_ok(info) ? 1000 : 0);
  };
  std::stable_sort(ok.begin(), ok.end(), [&](const CommunicatorFactory* a, const CommunicatorFactory* b) {
    return rank(a) > rank(b);
  });
  std::string s;
  for (const auto* f : ok) s += (s.empty() ? "" : ", ") + f->name;
  return s.empty() ? "none" : s;
}

const CommunicatorFactory& select(const std::string& spec, const std::string& origin,
                                  const ProcessGroupInfo& info, bool gpu_training) {
  if (spec == "auto") {
    std::string reasons;
    const CommunicatorFactory* best =
        pick_auto(communicator_factories(), info, gpu_training, &reasons);
    COHORT_CHECK(best, "no communicator backend can serve ", info.str(), " (", reasons, ")");
    return *best;
  }
  for (const auto& f : communicator_factories()) {
    if (f.name != spec) continue;
    std::string why;
    if (f.available(info, &why)) return f;
    COHORT_FAIL("communicator backend '", spec, "' from ", origin, " is not available for ",
                info.str(), ": ", why, " (available for this group: ", available_names(info),
                ")");
  }
  for (const auto& [name, why] : absent_backends())
    COHORT_CHECK(name != spec, "communicator backend '", spec, "' from ", origin,
                 " is not in this build (", why, "; available in this build: ", known_names(),
                 ")");
  COHORT_FAIL("unknown communicator backend '", spec, "' from ", origin, " (known: ",
              known_names(), ", auto)");
}

}  // namespace

const CommunicatorFactory* pick_auto(const std::vector<CommunicatorFactory>& factories,
                                     const ProcessGroupInfo& info, bool gpu_training,
                                     std::string* reasons) {
  const CommunicatorFactory* best_gpu = nullptr;
  const CommunicatorFactory* best_host = nullptr;
  for (const auto& f : factories) {
    if (f.gpu_memory && !gpu_training) continue;  // it would refuse host training's buffers
    if (f.auto_ok && !f.auto_ok(info)) continue;
    std::string why;
    if (!f.available(info, &why)) {
      if (reasons) *reasons += (reasons->empty() ? "" : "; ") + f.name + ": " + why;
      continue;
    }
    const CommunicatorFactory*& best = f.gpu_memory ? best_gpu : best_host;
    if (!best || f.score > best->score) best = &f;
  }
  return best_gpu ? best_gpu : best_host;
}

std::unique_ptr<Communicator> create_communicator(const std::string& name,
                                                  const ProcessGroupInfo& info,
                                                  std::shared_ptr<Store> store,
                                                  const Device* device) {
  std::string spec = name;
  std::string origin = "the argument";
  if (spec.empty()) {
    const char* env = std::getenv("COHORT_COMM");
    spec = env && *env ? env : "auto";
    origin = env && *env ? "COHORT_COMM" : "the default";
  }
  if (info.world_size > 1) set_error_rank(info.rank);
  const bool gpu_training = device != nullptr && !device->host_accessible();
  const CommunicatorFactory& f = select(spec, origin, info, gpu_training);
  return f.create(info, std::move(store));
}

namespace {
// A multi-process backend named for a process that no launcher started: almost always a missing
// launcher, which would otherwise train alone without a word.
void check_launched(const std::string& name, const ProcessGroupInfo& info) {
  if (info.world_size > 1 || info.source != "default") return;
  std::string spec = name, origin = "the argument";
  if (spec.empty()) {
    const char* env = std::getenv("COHORT_COMM");
    if (!env || !*env) return;
    spec = env;
    origin = "COHORT_COMM";
  }
  // nccl alone is a real configuration (one GPU, world size 1: its conformance runs so); its
  // own availability check says what is missing.
  if (spec == "auto" || spec == "self" || spec == "nccl") return;
  COHORT_FAIL("communicator backend '", spec, "' from ", origin,
              " connects several processes, but this one was started alone (no RANK/WORLD_SIZE, "
              "OMPI_COMM_WORLD_* or SLURM_* variables). Start every rank with a launcher: "
              "cohortrun --nproc-per-node N PROGRAM ..., torchrun --nproc-per-node N --no-python "
              "PROGRAM ..., mpirun -np N PROGRAM ..., or srun -n N PROGRAM ...; for one process "
              "use 'self' or leave the backend unset");
}
}  // namespace

namespace {
// COHORT_STORE_SERVED=1 (cohortrun --elastic): the launcher serves the store, so that it outlives
// any rank; rank 0 connects to it like the others.
bool rank0_serves(const ProcessGroupInfo& info) {
  const char* v = std::getenv("COHORT_STORE_SERVED");
  return info.rank == 0 && !(v && std::string(v) == "1");
}
}  // namespace

std::shared_ptr<Store> connect_job_store(const ProcessGroupInfo& info) {
  const char* spec = std::getenv("COHORT_STORE");
  if (spec && *spec) {
    const std::string s = spec;
    if (s.rfind("file://", 0) == 0) return make_file_store(s.substr(7));
    COHORT_CHECK(s.rfind("tcp://", 0) == 0, "COHORT_STORE='", s,
                 "' is neither tcp://HOST:PORT nor file:///DIRECTORY");
    const std::string hp = s.substr(6);
    const auto colon = hp.rfind(':');
    COHORT_CHECK(colon != std::string::npos && colon + 1 < hp.size(), "COHORT_STORE='", s,
                 "' lacks a port (tcp://HOST:PORT)");
    return make_tcp_store(hp.substr(0, colon), std::atoi(hp.c_str() + colon + 1),
                          rank0_serves(info), detail::default_timeout_from_env());
  }
  COHORT_CHECK(!info.master_addr.empty() && info.master_port > 0, info.str(),
               ": a group of several ranks needs the store's address: set MASTER_ADDR and "
               "MASTER_PORT (cohortrun does; with mpirun add -x MASTER_ADDR=HOST -x "
               "MASTER_PORT=PORT), or COHORT_STORE=file:///shared/dir");
  return make_tcp_store(info.master_addr, info.master_port, rank0_serves(info),
                        detail::default_timeout_from_env());
}

std::shared_ptr<Communicator> init_process_group(const std::string& name, const Device* device) {
  const ProcessGroupInfo info = ProcessGroupInfo::from_env();
  check_launched(name, info);
  std::shared_ptr<Store> store;
  const char* spec = std::getenv("COHORT_STORE");
  if (spec && *spec) {
    store = connect_job_store(info);
  } else if (info.world_size == 1) {
    store = make_memory_store();
  } else if (info.master_addr.empty() && info.master_port == 0 &&
             info.local_world_size == info.world_size && !info.job_id.empty()) {
    // Every rank is on this host and the launcher (mpirun, srun) names the job but gives no
    // store address: rendezvous through a job-private directory instead, so `mpirun -np 2 prog`
    // works unchanged. Rank 0 removes it once every rank is connected (below).
    std::string id;
    for (char c : info.job_id) id += (std::isalnum(static_cast<unsigned char>(c)) || c == '-') ? c : '_';
    auto comm = create_communicator(
        name, info, make_file_store("/tmp/cohort-store-" + id), device);
    comm->barrier()->wait();  // every rank has finished reading the store
    if (comm->rank() == 0) std::filesystem::remove_all("/tmp/cohort-store-" + id);
    return comm;
  } else {
    store = connect_job_store(info);
  }
  return create_communicator(name, info, std::move(store), device);
}

}  // namespace cohort::comm
