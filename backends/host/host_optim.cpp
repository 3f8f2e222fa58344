// Host op table, optimizer block: each fused update is one Kokkos parallel_for applying the shared
// functor of cohort/detail/optim_kernels.hpp (the CUDA backend launches the very same functors from
// cuda_optim.cu).
#include <Kokkos_Core.hpp>

#include "cohort/detail/optim_kernels.hpp"
#include "host_device.hpp"

namespace cohort::host {
namespace {

using Range = Kokkos::RangePolicy<Kokkos::Serial, Kokkos::IndexType<std::int64_t>>;

template <class F>
void apply(const char* label, const F& f, std::size_t n) {
  Kokkos::parallel_for(label, Range(0, static_cast<std::int64_t>(n)), f);
}

}  // namespace

void HostDevice::sgd_step(const SgdArgs& args, float* param, const float* grad,
                          float* momentum_buffer, std::size_t n) {
  apply("cohort::sgd_step", kernels::SgdUpdate{args, param, grad, momentum_buffer}, n);
}

void HostDevice::adam_step(const AdamArgs& args, float* param, const float* grad, float* exp_avg,
                           float* exp_avg_sq, float* max_exp_avg_sq, std::size_t n) {
  apply("cohort::adam_step",
        kernels::AdamUpdate{args, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq}, n);
}

void HostDevice::adadelta_step(const AdadeltaArgs& args, float* param, const float* grad,
                               float* square_avg, float* acc_delta, std::size_t n) {
  apply("cohort::adadelta_step", kernels::AdadeltaUpdate{args, param, grad, square_avg, acc_delta},
        n);
}

void HostDevice::rmsprop_step(const RmspropArgs& args, float* param, const float* grad,
                              float* square_avg, float* grad_avg, float* momentum_buffer,
                              std::size_t n) {
  apply("cohort::rmsprop_step",
        kernels::RmspropUpdate{args, param, grad, square_avg, grad_avg, momentum_buffer}, n);
}

}  // namespace cohort::host
