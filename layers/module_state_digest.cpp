// nn::state_digest (declared in module.hpp): a hash of the whole state_dict. Apart from
// module.cpp because it reads every tensor back to the host, which the Module tree never does.
#include <cstdio>
#include <vector>

#include "cohort/core/device.hpp"
#include "cohort/core/hash.hpp"
#include "cohort/layers/module.hpp"

namespace cohort::nn {

std::uint64_t state_digest_fold(std::uint64_t h, const std::string& name, const Shape& shape,
                                const void* bytes, std::size_t n) {
  h = fnv1a(name.data(), name.size(), h);
  const std::string s = shape.str();
  h = fnv1a(s.data(), s.size(), h);
  return fnv1a(bytes, n, h);
}

std::string digest_hex(std::uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string state_digest(const Module& model) {
  std::uint64_t h = kFnvOffset;
  for (const auto& e : model.state_dict()) {
    std::vector<unsigned char> bytes(e.tensor.nbytes());
    e.tensor.device().copy_to_host(bytes.data(), e.tensor.raw(), bytes.size());
    h = state_digest_fold(h, e.name, e.tensor.shape(), bytes.data(), bytes.size());
  }
  return digest_hex(h);
}

}  // namespace cohort::nn
