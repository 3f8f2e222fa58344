// The Trainer's step losses on their way to the host (internal: trainer.cpp's train_epoch).
#pragma once

#include <cstdint>
#include <vector>

#include "cohort/core/error.hpp"
#include "cohort/core/tensor.hpp"

namespace cohort::train {

// The step losses of an epoch on their way to the host. Each micro-batch's loss (a [] tensor on
// the model's device) is copied into `values`, a small tensor on the same device, by a 4-byte
// device copy; read_back() fetches every value since the last call in one copy and turns them
// into step losses exactly as reading each one at once would (the same floats, summed in double
// in the same order). On the host it is read every step, as before; on a device the host cannot
// address (a GPU) only at log points and at the epoch's end, so the steps between do not wait
// for the device.
struct PendingLosses {
  Tensor values;                    // [capacity] f32
  std::int64_t count = 0;           // values written since the last read_back
  std::vector<std::int64_t> steps;  // micro-batches of each step not yet read back

  void add(const Tensor& loss, std::int64_t capacity) {
    if (!values.defined()) values = Tensor::empty({capacity}, DType::f32, loss.device());
    COHORT_CHECK(count < values.numel(), "Trainer: more than ", values.numel(),
                 " losses between two read-backs (internal error)");
    values.slice(count, count + 1).copy_from(loss);
    ++count;
  }
  void end_step(std::int64_t micro) { steps.push_back(micro); }

  // The pending step losses in order (one device-to-host copy).
  std::vector<double> read_back() {
    std::vector<double> out;
    if (steps.empty()) return out;
    const std::vector<float> v = values.slice(0, count).to_vector<float>();
    std::size_t i = 0;
    for (const std::int64_t micro : steps) {
      double step_loss = 0;
      for (std::int64_t k = 0; k < micro; ++k) step_loss += v[i++];
      out.push_back(step_loss / static_cast<double>(micro));
    }
    count = 0;
    steps.clear();
    return out;
  }
};

}  // namespace cohort::train
