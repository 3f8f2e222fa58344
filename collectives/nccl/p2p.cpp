// Point-to-point on nccl. NCCL matches a send with its recv in issue order per pair of ranks and
// has no tags; a lone ncclRecv blocks the stream until its send arrives, so "post the recv, then
// the send" (what host backends allow) would deadlock if each op were launched on its own. So
// send() and recv() only queue the op; the queue is launched as one ncclGroupStart/End when a
// collective is issued, when any Work of this communicator is tested or waited for, or when the
// communicator is destroyed. Tags are not matched: between two ranks, sends and recvs must be
// issued in the same order on both sides (docs/COLLECTIVES.md).
#include "nccl/context.hpp"

namespace cohort::comm::nccl::detail {

void Context::flush_p2p_locked() {
  if (pending.empty()) return;
  std::vector<PendingP2p> ops;
  ops.swap(pending);
  order_after_compute_locked();
  const std::string what = "the group of " + std::to_string(ops.size()) + " send/recv (first: " +
                           ops.front().desc.str() + ")";
  const auto deadline = Clock::now() + timeout;
  ncclResult_t r = ncclGroupStart();
  if (r != ncclSuccess) fail_locked(what + ": ncclGroupStart failed: " + describe(r, comm));
  for (const PendingP2p& p : ops) {
    const auto count = static_cast<std::size_t>(p.desc.count);
    const ncclDataType_t t = nccl_dtype(p.desc.dtype);
    r = p.desc.kind == OpKind::send ? ncclSend(p.buf, count, t, p.desc.peer, comm, stream)
                                    : ncclRecv(p.buf, count, t, p.desc.peer, comm, stream);
    if (r != ncclSuccess && r != ncclInProgress) {
      (void)ncclGroupEnd();
      fail_locked(what + ": " + p.desc.str() + " was refused: " + describe(r, comm));
    }
  }
  r = ncclGroupEnd();
  if (r != ncclSuccess && r != ncclInProgress)
    fail_locked(what + ": ncclGroupEnd failed: " + describe(r, comm));
  settle_locked(what, deadline);
  for (const PendingP2p& p : ops) {
    COHORT_CHECK_CUDA_RT(cudaEventRecord(p.mark->event, stream));
    p.mark->launched = true;
  }
}

}  // namespace cohort::comm::nccl::detail
