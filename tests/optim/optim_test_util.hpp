// Helpers shared by the cohort::optim tests.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "cohort/core/error.hpp"
#include "cohort/core/parameter.hpp"
#include "cohort/devices.hpp"

namespace optim_test {

// The devices to run on: the host, and the first GPU when this build has one and it is usable.
inline std::vector<cohort::Device*> test_devices() {
  std::vector<cohort::Device*> out{&cohort::host_device()};
  for (const auto& f : cohort::device_factories())
    if (f.name == "cuda" && f.count(nullptr) > 0) out.push_back(&cohort::device("cuda:0"));
  return out;
}

// Runs `fn`, which must throw cohort::Error; returns its why() (the message without location).
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const cohort::Error& e) {
    return e.why();
  }
  return "<no cohort::Error thrown>";
}

// Checks that the lambda (the remaining arguments, so that commas inside it are harmless) throws
// cohort::Error whose message contains every '|'-separated part of `parts`.
#define CHECK_ERROR_MENTIONS(parts, ...)                                                 \
  do {                                                                                   \
    const std::string optim_test_msg_ = ::optim_test::error_of(__VA_ARGS__);             \
    for (const std::string& optim_test_part_ : ::optim_test::split_parts(parts)) {       \
      INFO("message: " << optim_test_msg_);                                              \
      CHECK_MESSAGE(optim_test_msg_.find(optim_test_part_) != std::string::npos,         \
                    "expected the message to mention '" << optim_test_part_ << "'");     \
    }                                                                                    \
  } while (0)

inline std::vector<std::string> split_parts(const std::string& parts) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  for (std::size_t bar; (bar = parts.find('|', begin)) != std::string::npos; begin = bar + 1)
    out.push_back(parts.substr(begin, bar - begin));
  out.push_back(parts.substr(begin));
  return out;
}

// Bitwise equality of two f32 tensors (any devices); "" when equal, else the first difference.
inline std::string bit_diff(const cohort::Tensor& a, const cohort::Tensor& b) {
  if (a.shape() != b.shape()) return "shapes " + a.shape().str() + " vs " + b.shape().str();
  const std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  for (std::size_t i = 0; i < x.size(); ++i)
    if (std::memcmp(&x[i], &y[i], sizeof(float)) != 0)
      return "element " + std::to_string(i) + ": " + std::to_string(x[i]) + " vs " +
             std::to_string(y[i]);
  return "";
}

// Deterministic parameters of shapes [3, 4] and [5] on `device`.
inline std::vector<cohort::ParameterPtr> make_params(cohort::Device& device, std::uint64_t seed) {
  return {cohort::make_parameter(cohort::Tensor::uniform({3, 4}, -1.0f, 1.0f, seed, device)),
          cohort::make_parameter(cohort::Tensor::uniform({5}, -1.0f, 1.0f, seed + 1, device))};
}

// Sets every gradient to deterministic values for `step`.
inline void set_grads(const std::vector<cohort::ParameterPtr>& params, std::uint64_t seed,
                      int step) {
  for (std::size_t j = 0; j < params.size(); ++j) {
    cohort::Tensor& g = params[j]->grad;
    g.copy_from(cohort::Tensor::uniform(g.shape(), -2.0f, 2.0f, seed * 1000 + step * 10 + j,
                                        g.device()));
  }
}

}  // namespace optim_test
