// The host-staged reducer: for parameters in memory the communicator cannot take (GPU memory with
// a host-only backend such as shm), the bucket is copied to a host buffer, all-reduced (avg) there
// and copied back.
#include "reducer.hpp"

namespace cohort::parallel::detail {
namespace {

class HostStagedReducer final : public Reducer {
 public:
  HostStagedReducer(comm::Communicator& comm, std::int64_t numel)
      : comm_(comm), host_(static_cast<std::size_t>(numel), 0.0f) {}

  const char* name() const override { return "host_staged"; }

  comm::WorkHandle launch(const std::vector<Tensor>& grads) override {
    if (!grads.empty()) wait_for_compute(grads.front().device());
    gather_to_host(grads, host_.data());
    return comm_.allreduce(host_.data(), host_.data(), host_.size(), DType::f32,
                           comm::ReduceOp::avg);
  }

  void complete(const std::vector<Tensor>& grads) override {
    scatter_from_host(host_.data(), grads);
  }

 private:
  comm::Communicator& comm_;
  std::vector<float> host_;
};

}  // namespace

std::unique_ptr<Reducer> make_host_staged_reducer(comm::Communicator& comm, std::int64_t numel) {
  return std::make_unique<HostStagedReducer>(comm, numel);
}

}  // namespace cohort::parallel::detail
