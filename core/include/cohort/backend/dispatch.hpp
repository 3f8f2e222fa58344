// How an op front end runs a checked call: on the tensors' device when it supports the case,
// otherwise on the fallback device (the host), with the operands copied there and the outputs
// copied back, so the result is the same and a backend can grow op by op. The first fallback of
// each op is logged to stderr once ("cohort: cuda:0 does not support conv2d_forward for this case;
// running it on host").
//
//   dispatch::run(x.device(), {&x, &w, bias}, {&y}, [&](const dispatch::Operands& o) {
//     return calls::Conv2dForward{a, o.in<float>(x), o.in<float>(w), o.in<float>(bias),
//                                 o.out<float>(y)};
//   });
//
// `make` is called once with the tensors' own pointers and, on a fallback, once more with the
// copies' pointers; it must name every tensor it reads in `inputs` and every tensor it writes
// (or updates in place) in `outputs` (nullptr entries are skipped).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <utility>
#include <vector>

#include "cohort/backend/op_list.hpp"
#include "cohort/core/device.hpp"
#include "cohort/core/tensor.hpp"

namespace cohort::dispatch {

// Resolves the op's tensors to the pointers of the device the call runs on.
class Operands {
 public:
  template <class T>
  const T* in(const Tensor& t) const {
    return resolve(t).template data<T>();
  }
  template <class T>
  const T* in(const Tensor* t) const {
    return t ? in<T>(*t) : nullptr;
  }
  template <class T>
  T* out(Tensor& t) const {
    return resolve(t).template data<T>();
  }
  template <class T>
  T* out(Tensor* t) const {
    return t ? out<T>(*t) : nullptr;
  }
  void* out_raw(Tensor& t) const { return resolve(t).raw(); }
  const void* in_raw(const Tensor& t) const { return resolve(t).raw(); }

  // The tensor the call uses in place of `t`: its copy on the fallback device, else `t` itself.
  const Tensor& resolve(const Tensor& t) const;

  // The copies made for a fallback: (original, copy on the fallback device).
  std::vector<std::pair<const Tensor*, Tensor>> copies;
};

using MakeCall = std::function<OpCall(const Operands&)>;

// The slow path of run(): the call on the fallback device (see the file comment).
void run_on_fallback(Device& device, const OpCall& call,
                     std::initializer_list<const Tensor*> inputs,
                     std::initializer_list<Tensor*> outputs, const MakeCall& make);

template <class Make>
void run(Device& device, std::initializer_list<const Tensor*> inputs,
         std::initializer_list<Tensor*> outputs, Make&& make) {
  const Operands own;
  const OpCall call{make(own)};
  if (device.supports(call)) {
    device.run(call);
    return;
  }
  run_on_fallback(device, call, inputs, outputs,
                  [&](const Operands& o) { return OpCall{make(o)}; });
}

// The device fallbacks run on: the host device, set by the device registry (backends/registry.cpp)
// the first time any device is looked up. Throws cohort::Error when none was set.
Device& fallback_device();
void set_fallback_device(Device& device);

// How many calls of `op` ran on the fallback device so far in this process (for tests and tools).
std::uint64_t fallback_count(Op op);

}  // namespace cohort::dispatch
