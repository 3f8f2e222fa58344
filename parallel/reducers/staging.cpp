// Host staging for the reducers that work on a host copy of the bucket (host_staged, bf16,
// deterministic): the bucket's gradients back to back in one float array.
#include "reducer.hpp"

namespace cohort::parallel::detail {

void gather_to_host(const std::vector<Tensor>& grads, float* host) {
  for (const Tensor& g : grads) {
    g.device().copy_to_host(host, g.raw(), g.nbytes());
    host += g.numel();
  }
}

void scatter_from_host(const float* host, const std::vector<Tensor>& grads) {
  for (const Tensor& g : grads) {
    g.device().copy_from_host(g.raw(), host, g.nbytes());
    host += g.numel();
  }
}

}  // namespace cohort::parallel::detail
