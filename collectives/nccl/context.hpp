// The state one nccl communicator shares with its Work handles: the NCCL communicator, the GPU,
// the communicator's own stream, the pending point-to-point group and the failure, all under one
// mutex. Work handles hold it by shared_ptr, so a handle may outlive the Communicator object.
// Internal header (it names NCCL and CUDA types): only files of this folder include it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cohort/collectives/registry.hpp"
#include "detail/op_desc.hpp"
#include "nccl/check.hpp"

namespace cohort::comm::nccl::detail {

using Clock = std::chrono::steady_clock;
using ::cohort::comm::detail::OpDesc;
using ::cohort::comm::detail::OpKind;
inline constexpr const char* kName = "nccl";

// gpus.cpp: which GPU this rank uses, from the launcher's local rank and the visible GPUs.
struct GpuChoice {
  int device = -1;       // CUDA device index, -1 when none
  int visible = 0;       // GPUs this process sees
  std::string why_not;   // set when device == -1
};
GpuChoice choose_gpu(const ProcessGroupInfo& info);

// types.cpp: cohort's element types and reductions in NCCL's terms; throws naming the dtype for a
// type NCCL has no counterpart for.
ncclDataType_t nccl_dtype(DType dt);
ncclRedOp_t nccl_op(ReduceOp op);

// An event recorded on the communicator's stream after one op (or one group of point-to-point
// ops); the Work's completion. Created at issue, recorded when the op is launched.
struct Mark {
  cudaEvent_t event = nullptr;
  bool launched = false;
  ~Mark();
};

// A send or recv waiting for the next group launch (p2p.cpp).
struct PendingP2p {
  OpDesc desc;
  void* buf;
  std::shared_ptr<Mark> mark;
};

struct Context {
  int rank = 0, size = 1, device = -1;
  Timeout timeout{0};
  std::string host;                     // for messages
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;        // the communicator's own
  cudaStream_t compute = nullptr;       // the CUDA device's compute stream, not owned
  cudaEvent_t compute_mark = nullptr;   // recorded on `compute` before every launch
  void* scratch = nullptr;              // one float of device memory: the barrier's all-reduce
  std::mutex mu;                        // every member below, and every NCCL call
  std::uint64_t seq = 0;                // collectives issued so far
  std::string failure;                  // non-empty once failed: every later call throws it
  std::vector<PendingP2p> pending;      // send/recv not launched yet (p2p.cpp)

  ~Context();  // setup.cpp: finalizes, or aborts after a failure

  // Throws the failure (attributed to nccl) if there was one. Caller holds mu.
  void throw_if_failed_locked() const;
  // Records `why` as the failure, aborts the NCCL communicator (ncclCommAbort: kernels stuck
  // waiting for peers end) and throws it. Caller holds mu.
  [[noreturn]] void fail_locked(const std::string& why);
  // Makes the GPU current and makes the communicator's stream wait for the work queued so far on
  // the compute stream (cudaEventRecord + cudaStreamWaitEvent; the host does not wait).
  void order_after_compute_locked();
  // After an NCCL call on this non-blocking communicator: polls ncclCommGetAsyncError until the
  // call has been taken (not ncclInProgress), failing with `what` on an error or at `deadline`.
  void settle_locked(const std::string& what, Clock::time_point deadline);
  // Launches the pending send/recv as one ncclGroupStart/End (p2p.cpp). Caller holds mu.
  void flush_p2p_locked();
  // "rank 1 (cuda:1 on node7)"
  std::string who() const;
};

// setup.cpp: the whole set-up (unique id through the store, duplicate-GPU check, non-blocking
// init under the timeout). `store` may be null for one rank.
std::shared_ptr<Context> make_context(const ProcessGroupInfo& info, std::shared_ptr<Store> store,
                                      Timeout timeout);

// memory.cpp: throws unless `p` (for `bytes`) is device memory usable on ctx.device; names the
// op, the argument and what the pointer is.
void check_device_pointer(const Context& ctx, const OpDesc& op, const char* arg, const void* p,
                          std::size_t bytes);

// work.cpp: the Work of one op, complete when its mark's event is.
WorkHandle make_work(std::shared_ptr<Context> ctx, std::shared_ptr<Mark> mark, const OpDesc& desc,
                     Timeout timeout);
// A mark with a fresh event (not yet recorded).
std::shared_ptr<Mark> new_mark();

}  // namespace cohort::comm::nccl::detail
