// Staging: the bucket's gradients back to back in one float array, on the host for the reducers
// that work on a host copy (host_staged, deterministic), or in a flat tensor on the gradients'
// device (plain, bf16, f16), where gradients that are views into it need no copy.
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

namespace {
// Whether g already is flat's elements [off, off + numel).
bool is_view(const Tensor& g, const Tensor& flat, std::int64_t off) {
  return g.raw() == static_cast<char*>(flat.raw()) + off * static_cast<std::int64_t>(sizeof(float));
}
}  // namespace

void pack_into_bucket(const std::vector<Tensor>& grads, Tensor& flat) {
  std::int64_t off = 0;
  for (const Tensor& g : grads) {
    if (!is_view(g, flat, off)) flat.slice(off, off + g.numel()).copy_from(g.reshape({-1}));
    off += g.numel();
  }
}

void unpack_from_bucket(const Tensor& flat, const std::vector<Tensor>& grads) {
  std::int64_t off = 0;
  for (const Tensor& g : grads) {
    if (!is_view(g, flat, off)) {
      Tensor dst = g;  // shares storage
      dst.copy_from(flat.slice(off, off + g.numel()));
    }
    off += g.numel();
  }
}

}  // namespace cohort::parallel::detail
