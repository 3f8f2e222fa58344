// The deterministic reducer (DDPOptions::deterministic): a fixed reduction order. The bucket is
// copied to the host and all-gathered; every rank then sums the n copies in rank order 0..n-1 in
// f32 and divides by n, so the result does not depend on the backend's reduction algorithm and
// is bit-identical on shm, ucx, ... Costs n times the receive bytes of an all-reduce.
#include "reducer.hpp"

namespace cohort::parallel::detail {
namespace {

class DeterministicReducer final : public Reducer {
 public:
  DeterministicReducer(comm::Communicator& comm, std::int64_t numel)
      : comm_(comm),
        host_(static_cast<std::size_t>(numel), 0.0f),
        gathered_(host_.size() * static_cast<std::size_t>(comm.size()), 0.0f) {}

  const char* name() const override { return "deterministic"; }

  comm::WorkHandle launch(const std::vector<Tensor>& grads) override {
    if (!grads.empty()) wait_for_compute(grads.front().device());
    gather_to_host(grads, host_.data());
    return comm_.allgather(host_.data(), gathered_.data(), host_.size(), DType::f32);
  }

  void complete(const std::vector<Tensor>& grads) override {
    const std::size_t count = host_.size();
    const int n = comm_.size();
    // rank 0 + rank 1 + ... + rank n-1, then one division, whatever the backend.
    for (std::size_t i = 0; i < count; ++i) {
      float acc = gathered_[i];
      for (int r = 1; r < n; ++r) acc += gathered_[static_cast<std::size_t>(r) * count + i];
      host_[i] = acc / static_cast<float>(n);
    }
    scatter_from_host(host_.data(), grads);
  }

 private:
  comm::Communicator& comm_;
  std::vector<float> host_;
  std::vector<float> gathered_;
};

}  // namespace

std::unique_ptr<Reducer> make_deterministic_reducer(comm::Communicator& comm,
                                                    std::int64_t numel) {
  return std::make_unique<DeterministicReducer>(comm, numel);
}

}  // namespace cohort::parallel::detail
