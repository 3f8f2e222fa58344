// Setting up one nccl communicator, and taking it down.
//
//  1. The GPU: local rank i takes visible GPU i (gpus.cpp); the CUDA device's compute stream is
//     looked up once (the stream every op is ordered after).
//  2. The store: each rank counts the nccl communicators it creates on this store, so the count
//     names the same communicator on every rank (keys "nccl/<n>/...").
//  3. One GPU per rank, checked before NCCL sees anything: every rank publishes its host name and
//     its GPU's PCI bus id; two ranks of one host on one GPU fail here, with how to fix it, instead
//     of NCCL's "Duplicate GPU detected" deep inside init.
//  4. Rank 0's ncclGetUniqueId goes through the store; every rank calls ncclCommInitRankConfig
//     with config.blocking = 0 and polls ncclCommGetAsyncError under the communicator's timeout
//     (COHORT_COMM_TIMEOUT_MS, else COHORT_TIMEOUT): a rank that never joins makes the others fail
//     with ncclCommAbort and an error naming the rank and the timeout, not hang.
#include <unistd.h>

#include <cstring>
#include <sstream>
#include <thread>

#include "cuda/cuda_device.hpp"
#include "detail/format.hpp"
#include "nccl/context.hpp"

namespace cohort::comm::nccl::detail {
namespace {

using namespace std::chrono_literals;
namespace common = ::cohort::comm::detail;

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

std::vector<std::uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

// Step 3: fails when another rank of this host uses this rank's GPU.
void check_one_gpu_per_rank(Context& c, Store& store, const std::string& prefix,
                            const ProcessGroupInfo& info) {
  char bus[64] = {0};
  COHORT_CHECK_CUDA_RT(cudaDeviceGetPCIBusId(bus, sizeof bus, c.device));
  const std::string mine = c.host + "\n" + bus + "\n" + std::to_string(c.device) + "\n" +
                           std::to_string(info.local_rank);
  store.set(prefix + "gpu/" + std::to_string(c.rank), bytes_of(mine));
  std::vector<int> sharing;
  std::string their_device, their_local;
  for (int r = 0; r < c.size; ++r) {
    if (r == c.rank) continue;
    const auto v = store.get(prefix + "gpu/" + std::to_string(r), c.timeout);
    std::istringstream in(std::string(v.begin(), v.end()));
    std::string host, other_bus, dev, local;
    std::getline(in, host);
    std::getline(in, other_bus);
    std::getline(in, dev);
    std::getline(in, local);
    if (host == c.host && other_bus == bus) sharing.push_back(r);
  }
  if (sharing.empty()) return;
  sharing.insert(sharing.begin(), c.rank);
  COHORT_CHECK_IN(kName, false, common::format_ranks(sharing), " on host ", c.host,
                  " would all use the GPU at PCI bus id ", bus, " (this rank's cuda:", c.device,
                  ", CUDA_VISIBLE_DEVICES=",
                  std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "unset",
                  "): NCCL needs one GPU per rank (duplicate GPU). Fix: start one rank per GPU "
                  "(cohortrun --nproc-per-node <number of GPUs>; local rank i uses GPU i through "
                  "LOCAL_RANK, so do not narrow every rank to the same GPU with "
                  "CUDA_VISIBLE_DEVICES), or use a host backend: --comm shm (one host) or "
                  "--comm ucx");
}

}  // namespace

std::string Context::who() const {
  return "rank " + std::to_string(rank) + " (cuda:" + std::to_string(device) + " on " + host + ")";
}

void Context::throw_if_failed_locked() const {
  if (!failure.empty()) ::cohort::detail::throw_error(__FILE__, __LINE__, "", kName, failure);
}

void Context::fail_locked(const std::string& why) {
  if (failure.empty()) failure = why;
  if (comm != nullptr) {
    (void)ncclCommAbort(comm);  // kernels waiting for peers end; the communicator is gone
    comm = nullptr;
  }
  ::cohort::detail::throw_error(__FILE__, __LINE__, "", kName, why);
}

void Context::order_after_compute_locked() {
  COHORT_CHECK_CUDA_RT(cudaSetDevice(device));
  COHORT_CHECK_CUDA_RT(cudaEventRecord(compute_mark, compute));
  COHORT_CHECK_CUDA_RT(cudaStreamWaitEvent(stream, compute_mark, 0));
}

void Context::settle_locked(const std::string& what, Clock::time_point deadline) {
  ncclResult_t state = ncclInProgress;
  for (;;) {
    const ncclResult_t r = ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess) fail_locked(what + ": ncclCommGetAsyncError failed: " + describe(r, comm));
    if (state != ncclInProgress) break;
    if (Clock::now() >= deadline)
      fail_locked(what + " was not taken by NCCL within " + common::format_timeout(timeout) +
                  " on " + who() + "; the communicator was aborted (ncclCommAbort)");
    std::this_thread::yield();
  }
  if (state != ncclSuccess) fail_locked(what + " failed on " + who() + ": " + describe(state, comm));
}

Context::~Context() {
  std::lock_guard<std::mutex> lk(mu);
  if (device >= 0) (void)cudaSetDevice(device);
  if (comm != nullptr && failure.empty()) {
    try {
      flush_p2p_locked();  // peers may be waiting for sends nobody waited for
    } catch (...) {
    }
  }
  if (comm != nullptr) {
    bool clean = failure.empty();
    if (clean) {
      // Finalize flushes what is in flight; bounded by the timeout, then abort.
      const ncclResult_t fr = ncclCommFinalize(comm);
      clean = fr == ncclSuccess || fr == ncclInProgress;
      const auto deadline = Clock::now() + timeout;
      ncclResult_t state = ncclInProgress;
      while (clean && ncclCommGetAsyncError(comm, &state) == ncclSuccess &&
             state == ncclInProgress && Clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
      clean = clean && state == ncclSuccess;
    }
    if (clean)
      (void)ncclCommDestroy(comm);
    else
      (void)ncclCommAbort(comm);
    comm = nullptr;
  }
  if (scratch != nullptr) (void)cudaFree(scratch);
  if (compute_mark != nullptr) (void)cudaEventDestroy(compute_mark);
  if (stream != nullptr) (void)cudaStreamDestroy(stream);
  (void)cudaGetLastError();
}

std::shared_ptr<Context> make_context(const ProcessGroupInfo& info, std::shared_ptr<Store> store,
                                      Timeout timeout) {
  auto c = std::make_shared<Context>();
  c->rank = info.rank;
  c->size = info.world_size;
  c->timeout = timeout;
  c->host = host_name();

  // 1. The GPU and the compute stream.
  const GpuChoice gpu = choose_gpu(info);
  COHORT_CHECK_IN(kName, gpu.device >= 0, info.str(), ": ", gpu.why_not);
  c->device = gpu.device;
  auto& dev = static_cast<cuda::CudaDevice&>(cuda::factory().get(c->device));
  c->compute = static_cast<cudaStream_t>(dev.stream());  // also makes the GPU current

  // 2. The store prefix.
  std::string prefix;
  if (store)
    prefix = "nccl/" + std::to_string(store->add("nccl/created/" + std::to_string(c->rank), 1)) + "/";
  else
    COHORT_CHECK_IN(kName, c->size == 1, "a group of ", c->size,
                    " ranks needs a Store to share the NCCL unique id");

  // 3. One GPU per rank.
  if (store && c->size > 1) check_one_gpu_per_rank(*c, *store, prefix, info);

  // 4. The unique id, then the non-blocking init.
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (c->rank == 0) {
    COHORT_CHECK_NCCL(ncclGetUniqueId(&id));
    if (store) store->set(prefix + "id", std::vector<std::uint8_t>(id.internal, id.internal + sizeof id.internal));
  } else {
    const auto v = store->get(prefix + "id", c->timeout);
    COHORT_CHECK_IN(kName, v.size() == sizeof id.internal, "the NCCL unique id in the store under '",
                    prefix, "id' has ", v.size(), " bytes, expected ", sizeof id.internal);
    std::memcpy(id.internal, v.data(), v.size());
  }

  COHORT_CHECK_CUDA_RT(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
  COHORT_CHECK_CUDA_RT(cudaEventCreateWithFlags(&c->compute_mark, cudaEventDisableTiming));
  COHORT_CHECK_CUDA_RT(cudaMalloc(&c->scratch, sizeof(float)));
  COHORT_CHECK_CUDA_RT(cudaMemsetAsync(c->scratch, 0, sizeof(float), c->stream));

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const auto deadline = Clock::now() + c->timeout;
  const ncclResult_t r = ncclCommInitRankConfig(&c->comm, c->size, id, c->rank, &config);
  std::lock_guard<std::mutex> lk(c->mu);
  if (r != ncclSuccess && r != ncclInProgress) {
    const std::string why = describe(r, c->comm);
    c->fail_locked("ncclCommInitRankConfig on " + c->who() + " failed: " + why);
  }
  ncclResult_t state = ncclInProgress;
  for (;;) {
    const ncclResult_t q = ncclCommGetAsyncError(c->comm, &state);
    if (q != ncclSuccess || (state != ncclSuccess && state != ncclInProgress))
      c->fail_locked("ncclCommInitRankConfig on " + c->who() + " failed: " +
                     describe(q != ncclSuccess ? q : state, c->comm));
    if (state == ncclSuccess) break;
    if (Clock::now() >= deadline)
      c->fail_locked("joining the NCCL communicator of " + std::to_string(c->size) + " ranks on " +
                     c->who() + " timed out after " + common::format_timeout(c->timeout) +
                     " (a rank did not join: did every rank start, with --comm nccl?); "
                     "the communicator was aborted (ncclCommAbort)");
    std::this_thread::sleep_for(1ms);
  }
  return c;
}

}  // namespace cohort::comm::nccl::detail
