// The bf16 reducer (DDPOptions::bf16_compression): half the bytes on the wire. The bucket is
// copied to the host, rounded to bf16, all-reduced as a bf16 sum (backends combine bf16 in
// float), converted back and divided by the world size. About 3 significant digits survive; no
// error feedback.
#include "reducer.hpp"

#include <algorithm>
#include <cstdint>

#include "cohort/core/dtype.hpp"
#include "cohort/core/error.hpp"

namespace cohort::parallel::detail {
namespace {

class Bf16Reducer final : public Reducer {
 public:
  Bf16Reducer(comm::Communicator& comm, std::int64_t numel)
      : comm_(comm),
        host_(static_cast<std::size_t>(numel), 0.0f),
        bf16_(static_cast<std::size_t>(numel), 0) {}

  const char* name() const override { return "bf16"; }

  comm::WorkHandle launch(const std::vector<Tensor>& grads) override {
    if (!grads.empty()) wait_for_compute(grads.front().device());
    gather_to_host(grads, host_.data());
    for (std::size_t i = 0; i < host_.size(); ++i) bf16_[i] = float_to_bf16(host_[i]);
    return comm_.allreduce(bf16_.data(), bf16_.data(), bf16_.size(), DType::bf16,
                           comm::ReduceOp::sum);
  }

  void complete(const std::vector<Tensor>& grads) override {
    const auto n = static_cast<float>(comm_.size());
    for (std::size_t i = 0; i < host_.size(); ++i) host_[i] = bf16_to_float(bf16_[i]) / n;
    scatter_from_host(host_.data(), grads);
  }

 private:
  comm::Communicator& comm_;
  std::vector<float> host_;
  std::vector<std::uint16_t> bf16_;
};

}  // namespace

std::unique_ptr<Reducer> make_bf16_reducer(comm::Communicator& comm, std::int64_t numel) {
  const auto dt = comm.capabilities().dtypes;
  COHORT_CHECK(dt.empty() || std::find(dt.begin(), dt.end(), DType::bf16) != dt.end(),
               "DistributedDataParallel: bf16_compression needs a communicator that reduces "
               "bf16; '",
               comm.backend(), "' does not");
  return std::make_unique<Bf16Reducer>(comm, numel);
}

}  // namespace cohort::parallel::detail
