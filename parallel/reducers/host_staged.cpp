// The host-staged reducer: for parameters in memory the communicator cannot take (GPU memory with
// a host-only backend such as shm), the bucket is copied to a host buffer, all-reduced (avg) there
// and copied back. The host buffer comes from Communicator::alloc_buffer (shm reads the peers'
// buckets in place).
#include "reducer.hpp"

namespace cohort::parallel::detail {
namespace {

class HostStagedReducer final : public Reducer {
 public:
  HostStagedReducer(comm::Communicator& comm, std::int64_t numel)
      : comm_(comm),
        numel_(static_cast<std::size_t>(numel)),
        host_(comm.alloc_buffer(numel_ * sizeof(float))) {}

  const char* name() const override { return "host_staged"; }

  comm::WorkHandle launch(const std::vector<Tensor>& grads) override {
    if (!grads.empty()) wait_for_compute(grads.front().device());
    gather_to_host(grads, flat());
    return comm_.allreduce(flat(), flat(), numel_, DType::f32, comm::ReduceOp::avg);
  }

  void complete(const std::vector<Tensor>& grads) override {
    scatter_from_host(flat(), grads);
  }

 private:
  float* flat() const { return static_cast<float*>(host_->data()); }

  comm::Communicator& comm_;
  const std::size_t numel_;
  std::unique_ptr<comm::CommBuffer> host_;
};

}  // namespace

std::unique_ptr<Reducer> make_host_staged_reducer(comm::Communicator& comm, std::int64_t numel) {
  return std::make_unique<HostStagedReducer>(comm, numel);
}

}  // namespace cohort::parallel::detail
