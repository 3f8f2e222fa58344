// The Work of one nccl op: an event recorded on the communicator's stream after the op.
// test() = cudaEventQuery, plus ncclCommGetAsyncError so that an NCCL failure (a peer gone, a
// network error) surfaces instead of an op that never completes. wait() polls the same way (spin,
// then yield, then sleep: detail/backoff.hpp) until the op's deadline, its issue time plus its
// timeout; past it, it aborts the NCCL communicator (ncclCommAbort ends the kernels stuck waiting
// for peers) and throws naming the op, its sequence number, count, dtype and the timeout. After a
// failure every call on the communicator throws the first failure.
#include "detail/backoff.hpp"
#include "detail/format.hpp"
#include "nccl/context.hpp"

namespace cohort::comm::nccl::detail {
namespace {

namespace common = ::cohort::comm::detail;

class NcclWork final : public Work {
 public:
  NcclWork(std::shared_ptr<Context> ctx, std::shared_ptr<Mark> mark, const OpDesc& desc,
           Timeout timeout)
      : ctx_(std::move(ctx)), mark_(std::move(mark)), desc_(desc), timeout_(timeout),
        deadline_(Clock::now() + timeout) {}

  bool test() override {
    if (done_) return true;
    std::lock_guard<std::mutex> lk(ctx_->mu);
    return poll_locked();
  }

  void wait() override {
    if (done_) return;
    common::Backoff backoff(/*oversubscribed=*/false);
    for (;;) {
      {
        std::lock_guard<std::mutex> lk(ctx_->mu);
        if (poll_locked()) return;
        if (Clock::now() >= deadline_)
          ctx_->fail_locked(
              "nccl " + desc_.str() + " timed out after " + common::format_timeout(timeout_) +
              " on " + ctx_->who() +
              ": the GPU has not finished it (NCCL cannot tell which ranks did not arrive: "
              "every rank must issue the same collectives in the same order, and each send "
              "needs its recv); the communicator was aborted (ncclCommAbort) and every later "
              "call on it throws");
      }
      backoff.pause();
    }
  }

 private:
  bool poll_locked() {
    ctx_->throw_if_failed_locked();
    if (!mark_->launched) ctx_->flush_p2p_locked();  // a send/recv still in the pending group
    const cudaError_t e = cudaEventQuery(mark_->event);
    if (e == cudaSuccess) {
      done_ = true;
      return true;
    }
    if (e != cudaErrorNotReady) {
      (void)cudaGetLastError();
      ctx_->fail_locked("nccl " + desc_.str() + " failed on " + ctx_->who() + ": " + ::cohort::detail::describe_cuda(e));
    }
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = ncclCommGetAsyncError(ctx_->comm, &state);
    if (r != ncclSuccess || (state != ncclSuccess && state != ncclInProgress))
      ctx_->fail_locked("nccl " + desc_.str() + " failed on " + ctx_->who() + ": " +
                        describe(r != ncclSuccess ? r : state, ctx_->comm));
    return false;
  }

  std::shared_ptr<Context> ctx_;
  std::shared_ptr<Mark> mark_;
  OpDesc desc_;
  Timeout timeout_;
  Clock::time_point deadline_;
  bool done_ = false;
};

}  // namespace

Mark::~Mark() {
  if (event != nullptr) (void)cudaEventDestroy(event);
}

std::shared_ptr<Mark> new_mark() {
  auto m = std::make_shared<Mark>();
  COHORT_CHECK_CUDA_RT(cudaEventCreateWithFlags(&m->event, cudaEventDisableTiming));
  return m;
}

WorkHandle make_work(std::shared_ptr<Context> ctx, std::shared_ptr<Mark> mark, const OpDesc& desc,
                     Timeout timeout) {
  return std::make_shared<NcclWork>(std::move(ctx), std::move(mark), desc, timeout);
}

}  // namespace cohort::comm::nccl::detail
