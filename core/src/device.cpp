// Device selection over a list of factories. The list itself is written by hand in
// backends/registry.cpp; keeping the policy here lets tests drive it with fake factories.
#include "cohort/core/device.hpp"

#include <cstdlib>
#include <string>

#include "cohort/core/error.hpp"

namespace cohort {

const char* op_name(Op op) {
  switch (op) {
    case Op::fill: return "fill";
    case Op::add: return "add";
    case Op::sub: return "sub";
    case Op::mul: return "mul";
    case Op::axpy: return "axpy";
    case Op::scale: return "scale";
    case Op::reduce_sum: return "reduce_sum";
    case Op::reduce_max: return "reduce_max";
    case Op::argmax: return "argmax";
    case Op::gemm: return "gemm";
    case Op::fill_uniform: return "fill_uniform";
    case Op::fill_normal: return "fill_normal";
    // --- layer ops ---
    case Op::conv2d_forward: return "conv2d_forward";
    case Op::conv2d_backward_data: return "conv2d_backward_data";
    case Op::conv2d_backward_filter: return "conv2d_backward_filter";
    case Op::pool2d_forward: return "pool2d_forward";
    case Op::pool2d_backward: return "pool2d_backward";
    case Op::activation_forward: return "activation_forward";
    case Op::activation_backward: return "activation_backward";
    case Op::bias_add: return "bias_add";
    case Op::bias_grad: return "bias_grad";
    case Op::softmax_forward: return "softmax_forward";
    case Op::softmax_backward: return "softmax_backward";
    case Op::batch_norm_forward: return "batch_norm_forward";
    case Op::batch_norm_backward: return "batch_norm_backward";
    case Op::layer_norm_forward: return "layer_norm_forward";
    case Op::layer_norm_backward: return "layer_norm_backward";
    case Op::dropout_forward: return "dropout_forward";
    case Op::dropout_backward: return "dropout_backward";
    case Op::nll_forward: return "nll_forward";
    case Op::nll_backward: return "nll_backward";
    case Op::cross_entropy_backward: return "cross_entropy_backward";
    // --- end of layer ops ---
    // --- optimizer ops ---
    case Op::sgd_step: return "sgd_step";
    case Op::adam_step: return "adam_step";
    case Op::adadelta_step: return "adadelta_step";
    case Op::rmsprop_step: return "rmsprop_step";
    case Op::count_: break;
  }
  return "?";
}

namespace {
std::string known_names(const std::vector<DeviceFactory>& factories) {
  std::string s;
  for (const auto& f : factories) s += (s.empty() ? "" : ", ") + f.name;
  return s;
}

Device& select_named(const std::vector<DeviceFactory>& factories, const std::string& spec,
                     const std::string& origin) {
  std::string name = spec;
  int index = 0;
  const auto colon = spec.find(':');
  if (colon != std::string::npos) {
    name = spec.substr(0, colon);
    const std::string idx = spec.substr(colon + 1);
    char* end = nullptr;
    const long v = idx.empty() ? -1 : std::strtol(idx.c_str(), &end, 10);
    COHORT_CHECK(!idx.empty() && end && *end == '\0' && v >= 0 && v < 1 << 20, "device '", spec,
                 "' from ", origin, ": index '", idx, "' is not a non-negative integer");
    index = static_cast<int>(v);
  }
  for (const auto& f : factories) {
    if (f.name != name) continue;
    std::string why;
    const int n = f.count(&why);
    COHORT_CHECK(n > 0, "device '", spec, "' from ", origin, " is not available: ",
                 why.empty() ? "no devices" : why);
    COHORT_CHECK(index < n, "device '", spec, "' from ", origin, ": index ", index,
                 " out of range, ", n, " ", name, " device", n == 1 ? "" : "s", " present (",
                 name, ":0", n > 1 ? (" .. " + name + ":" + std::to_string(n - 1)) : "", ")");
    return f.get(index);
  }
  COHORT_FAIL("unknown device '", spec, "' from ", origin, " (known devices: ",
              known_names(factories), ")");
}
}  // namespace

Device& select_device(const std::vector<DeviceFactory>& factories, const std::string& spec) {
  if (!spec.empty() && spec != "auto") return select_named(factories, spec, "the argument");
  const char* env = std::getenv("COHORT_DEVICE");
  if (spec.empty() && env && *env && std::string(env) != "auto")
    return select_named(factories, env, "COHORT_DEVICE");
  const DeviceFactory* best = nullptr;
  std::string reasons;
  for (const auto& f : factories) {
    std::string why;
    if (f.count(&why) > 0) {
      if (!best || f.score > best->score) best = &f;
    } else {
      reasons += (reasons.empty() ? "" : "; ") + f.name + ": " + why;
    }
  }
  COHORT_CHECK(best != nullptr, "no device is available (", reasons, ")");
  return best->get(0);
}

}  // namespace cohort
