// nn::state_digest (declared in module.hpp): a hash of the whole state_dict. Apart from
// module.cpp because it reads every tensor back to the host, which the Module tree never does.
#include <cstdio>
#include <vector>

#include "cohort/core/device.hpp"
#include "cohort/core/hash.hpp"
#include "cohort/layers/module.hpp"

namespace cohort::nn {

std::string state_digest(const Module& model) {
  std::uint64_t h = kFnvOffset;
  for (const auto& e : model.state_dict()) {
    h = fnv1a(e.name.data(), e.name.size(), h);
    const std::string shape = e.tensor.shape().str();
    h = fnv1a(shape.data(), shape.size(), h);
    std::vector<unsigned char> bytes(e.tensor.nbytes());
    e.tensor.device().copy_to_host(bytes.data(), e.tensor.raw(), bytes.size());
    h = fnv1a(bytes.data(), bytes.size(), h);
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace cohort::nn
