// The nccl Communicator: checks arguments on the caller's thread (the shared checks of
// CommunicatorBase, then that every buffer is GPU memory: memory.cpp), then under the
// communicator's mutex orders its stream after the compute stream, enqueues the NCCL call on
// its stream and records the op's event, returning the Work at once. Collectives are numbered
// like every backend's (OpDesc), so messages read "nccl allreduce #3 (1000 x f32, sum) ...".
#include "nccl/nccl_communicator.hpp"

#include <functional>

#include "cuda/cuda_device.hpp"
#include "detail/checked.hpp"
#include "detail/communicator_base.hpp"
#include "detail/env.hpp"
#include "detail/reduce.hpp"
#include "detail/work.hpp"
#include "nccl/context.hpp"

namespace cohort::comm::nccl {
namespace {

using detail::Clock;
using detail::Context;
using detail::kName;
using detail::OpDesc;
using detail::OpKind;
namespace common = ::cohort::comm::detail;

class NcclCommunicator final : public common::CommunicatorBase {
 public:
  NcclCommunicator(const ProcessGroupInfo& info, std::shared_ptr<Store> store)
      : CommunicatorBase(kName),
        ctx_(detail::make_context(info, std::move(store), common::default_timeout_from_env())) {}

  ~NcclCommunicator() override = default;  // the Context finalizes once the last Work is gone

  std::string backend() const override { return kName; }
  int gpu() const { return ctx_->device; }  // this rank's CUDA device index
  int rank() const override { return ctx_->rank; }
  // Elastic training: NCCL cannot tell a dead peer from a slow one, so the group is aborted
  // (ncclCommAbort ends the kernels waiting for it); every op in flight and every later call
  // throws `why`. The survivors then build a new communicator (compiled here, never run: no GPU).
  void declare_dead(int peer, const std::string& why) override {
    std::lock_guard<std::mutex> lk(ctx_->mu);
    if (ctx_->failure.empty())
      ctx_->failure = "rank " + std::to_string(peer) + " is gone (" + why +
                      "); the communicator "
                      "was aborted (ncclCommAbort)";
    if (ctx_->comm != nullptr) {
      (void)ncclCommAbort(ctx_->comm);
      ctx_->comm = nullptr;
    }
  }
  int size() const override { return ctx_->size; }
  Capabilities capabilities() const override {
    Capabilities c;
    c.host_memory = false;  // refused with an error, never staged (memory.cpp)
    c.device_memory = true;
    c.stream_ordered = true;  // collective() orders its stream after the compute stream
    c.dtypes = common::reducible_dtypes();
    return c;
  }

 private:
  // The shared checks and the timeout resolution are CommunicatorBase's; every start_* then
  // checks that its buffers are GPU memory (check()).
  Timeout default_timeout() const override { return ctx_->timeout; }

  WorkHandle start_allreduce(const void* send, void* recv, std::size_t count, DType dtype,
                             ReduceOp op, Timeout timeout) override {
    const OpDesc d = common::op_desc(OpKind::allreduce, count, dtype, op);
    const std::size_t bytes = count * dtype_size(dtype);
    check(d, "send", send, bytes);
    check(d, "recv", recv, bytes);
    return collective(d, timeout, [&](Context& c) {
      return ncclAllReduce(send, recv, count, detail::nccl_dtype(dtype), detail::nccl_op(op),
                           c.comm, c.stream);
    });
  }

  WorkHandle start_broadcast(void* buf, std::size_t count, DType dtype, int root,
                             Timeout timeout) override {
    const OpDesc d = common::op_desc(OpKind::broadcast, count, dtype, ReduceOp::sum, root);
    check(d, "buf", buf, count * dtype_size(dtype));
    return collective(d, timeout, [&](Context& c) {
      return ncclBroadcast(buf, buf, count, detail::nccl_dtype(dtype), root, c.comm, c.stream);
    });
  }

  WorkHandle start_allgather(const void* send, void* recv, std::size_t count, DType dtype,
                             Timeout timeout) override {
    const OpDesc d = common::op_desc(OpKind::allgather, count, dtype);
    const std::size_t bytes = count * dtype_size(dtype);
    check(d, "send", send, bytes);
    check(d, "recv", recv, bytes * static_cast<std::size_t>(size()));
    return collective(d, timeout, [&](Context& c) {
      return ncclAllGather(send, recv, count, detail::nccl_dtype(dtype), c.comm, c.stream);
    });
  }

  WorkHandle start_reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype,
                                  ReduceOp op, Timeout timeout) override {
    const OpDesc d = common::op_desc(OpKind::reduce_scatter, count, dtype, op);
    const std::size_t bytes = count * dtype_size(dtype);
    check(d, "send", send, bytes * static_cast<std::size_t>(size()));
    check(d, "recv", recv, bytes);
    return collective(d, timeout, [&](Context& c) {
      return ncclReduceScatter(send, recv, count, detail::nccl_dtype(dtype), detail::nccl_op(op),
                               c.comm, c.stream);
    });
  }

  // A one-element all-reduce on the communicator's scratch float: complete on a rank once every
  // rank has entered it.
  WorkHandle start_barrier(Timeout timeout) override {
    const OpDesc d = common::op_desc(OpKind::barrier, 0, DType::f32);
    return collective(d, timeout, [&](Context& c) {
      return ncclAllReduce(c.scratch, c.scratch, 1, ncclFloat32, ncclSum, c.comm, c.stream);
    });
  }

  WorkHandle start_send(const void* buf, std::size_t count, DType dtype, int peer, int tag,
                        Timeout timeout) override {
    return p2p(common::op_desc(OpKind::send, count, dtype, ReduceOp::sum, peer, tag),
               const_cast<void*>(buf), timeout);
  }

  WorkHandle start_recv(void* buf, std::size_t count, DType dtype, int peer, int tag,
                        Timeout timeout) override {
    return p2p(common::op_desc(OpKind::recv, count, dtype, ReduceOp::sum, peer, tag), buf,
               timeout);
  }

  void check(const OpDesc& d, const char* arg, const void* p, std::size_t bytes) const {
    (void)detail::nccl_dtype(d.dtype);  // a dtype NCCL lacks is refused before anything else
    detail::check_device_pointer(*ctx_, d, arg, p, bytes);
  }

  // Numbers the collective, launches what the pending group holds first (issue order), orders
  // the stream after compute, enqueues `launch` (not for count 0: the op only records its
  // event, so it still completes in issue order) and records the op's event. `t` is resolved.
  WorkHandle collective(OpDesc d, Timeout t,
                        const std::function<ncclResult_t(Context&)>& launch) {
    Context& c = *ctx_;
    std::lock_guard<std::mutex> lk(c.mu);
    c.throw_if_failed_locked();
    d.seq = ++c.seq;
    c.flush_p2p_locked();
    c.order_after_compute_locked();
    auto mark = detail::new_mark();
    if (d.count > 0 || d.kind == OpKind::barrier) {
      const auto deadline = Clock::now() + t;
      const ncclResult_t r = launch(c);
      if (r != ncclSuccess && r != ncclInProgress)
        c.fail_locked("nccl " + d.str() + " was refused on " + c.who() + ": " +
                      detail::describe(r, c.comm));
      c.settle_locked("nccl " + d.str(), deadline);
    }
    COHORT_CHECK_CUDA_RT(cudaEventRecord(mark->event, c.stream));
    mark->launched = true;
    return detail::make_work(ctx_, std::move(mark), d, t);
  }

  // Queues a send/recv for the next group launch (p2p.cpp); count 0 completes at once. `t` is
  // resolved.
  WorkHandle p2p(const OpDesc& d, void* buf, Timeout t) {
    check(d, d.kind == OpKind::send ? "send" : "recv", buf, d.count * dtype_size(d.dtype));
    Context& c = *ctx_;
    std::lock_guard<std::mutex> lk(c.mu);
    c.throw_if_failed_locked();
    if (d.count == 0) return common::completed_work();
    COHORT_CHECK_CUDA_RT(cudaSetDevice(c.device));  // the event belongs to this GPU
    auto mark = detail::new_mark();
    c.pending.push_back(detail::PendingP2p{d, buf, mark});
    return detail::make_work(ctx_, std::move(mark), d, t);
  }

  std::shared_ptr<Context> ctx_;
};

}  // namespace

CommunicatorFactory factory() {
  CommunicatorFactory f;
  f.name = kName;
  // `auto` picks it for GPU training where every rank has its own GPU (gpu_memory), never for
  // host training; the score only orders it among GPU-memory backends (there is one).
  f.score = 5;
  f.gpu_memory = true;
  f.available = [](const ProcessGroupInfo& info, std::string* why_not) {
    const detail::GpuChoice gpu = detail::choose_gpu(info);
    if (gpu.device < 0 && why_not) *why_not = gpu.why_not;
    return gpu.device >= 0;
  };
  f.create = [](const ProcessGroupInfo& info,
                std::shared_ptr<Store> store) -> std::unique_ptr<Communicator> {
    COHORT_CHECK_IN(kName, info.world_size >= 1, "needs at least one rank, the group has ",
                    info.world_size);
    COHORT_CHECK_IN(kName, info.rank >= 0 && info.rank < info.world_size, "rank ", info.rank,
                    " is not in a group of ", info.world_size);
    auto comm = std::make_unique<NcclCommunicator>(info, std::move(store));
    // COHORT_COLLECTIVE_CHECKS=1: every collective first checks that all ranks issue the same
    // one, the fingerprints staged through this rank's GPU (opt-in: it costs a collective each).
    if (common::collective_checks_requested()) {
      Device* gpu = &cuda::factory().get(comm->gpu());
      return common::make_checked(std::move(comm), gpu);
    }
    return comm;
  };
  return f;
}

}  // namespace cohort::comm::nccl
