// One row of the parity table and the harness a row runs in. A row builds its inputs on the
// host, runs its op through the front ends on one device (Case::dev), and hands Case::check the
// device's outputs together with a function that computes the expected values with the
// independent reference (reference/reference.hpp) from the same host inputs. The reference runs
// once per row; every device's outputs are compared with it.
//
// Outputs made with Case::out live in the middle of a larger buffer whose two ends hold a byte
// pattern (ggml's sentinels): after the op ran, the harness checks that nothing wrote there.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cohort/backend/op_list.hpp"
#include "cohort/core/device.hpp"
#include "cohort/core/tensor.hpp"
#include "reference/reference.hpp"

namespace parity {

using cohort::Device;
using cohort::DType;
using cohort::Op;
using cohort::Shape;
using cohort::Tensor;
using parity_ref::Vec;

// An input's values, made on the host (so every device gets the same) and held as doubles.
struct HostTensor {
  Shape shape;
  Vec v;
};
// Uniform in [lo, hi), from cohort's Philox fill on the host: only a source of inputs.
HostTensor uni(const Shape& s, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f);

// Values of any tensor on any device, as doubles.
Vec values(const Tensor& t);

class Case {
 public:
  Case(Device& dev, std::vector<Vec>* reference) : dev(dev), reference_(reference) {}

  Device& dev;  // the device under test

  // Inputs on dev: f32 values, or class indices (i64).
  Tensor in(const HostTensor& h) const;
  Tensor ints(const std::vector<std::int64_t>& v) const;
  // An output of `dtype` on dev, zeros, between two guard regions.
  Tensor out(const Shape& s, DType dtype = DType::f32);
  // An output updated in place (accumulated gradients, optimizer state), holding `init`.
  Tensor out(const HostTensor& init);

  // The row's comparison: `got` (tensors on dev) against the reference's values, one Vec per
  // output in the same order. `want` runs once per row, its result kept for the other devices.
  void check(std::vector<Tensor> got, const std::function<std::vector<Vec>()>& want);

  // After the row ran: what check() received, and the guard regions that were overwritten.
  const std::vector<Tensor>& got() const { return got_; }
  bool checked() const { return checked_; }
  std::size_t guarded_outputs() const { return guards_.size(); }
  std::vector<std::string> broken_guards() const;

 private:
  struct Guard {
    Tensor buffer;  // [before + n + after] elements of the output's dtype
    std::size_t before, n;
  };
  std::vector<Vec>* reference_;
  std::vector<Tensor> got_;
  std::vector<Guard> guards_;
  bool checked_ = false;
};

struct Row {
  Op op;
  std::string name;  // the case
  // Largest |got - want| / (1 + |want|) allowed. 0: equal (NaN where the reference has NaN),
  // for ops whose result is exact (copies, casts, fills, single roundings the reference repeats).
  double tol;
  std::function<void(Case&)> run;
  std::vector<Vec> reference;  // filled by the first device's Case::check
};

std::vector<Row> rows();
// The fused element passes' rows (parity_rows_fused.cpp), which rows() appends.
void add_fused_rows(std::vector<Row>& r);

}  // namespace parity
