// torch.amp.GradScaler: dynamic loss scaling, so that small gradients of reduced-precision (f16)
// compute do not flush to zero. The loss is multiplied by scale() before backward; unscale()
// divides the gradients by it again (before clipping) and notes whether any is inf or NaN; step()
// runs the optimizer only when none was; update() then halves the scale after a skipped step
// (backoff_factor) and doubles it after growth_interval good steps in a row (growth_factor).
// PyTorch's semantics to the bit: the scale is a float32 (each change computed in double and
// rounded), its reciprocal is float32(1 / double(scale)), growth past float32's range is not
// taken, and the state dict has torch's keys. tests/golden/grad_scaler.json is torch's own
// sequence for the same patterns of inf and NaN steps.
//
// Under data parallelism, unscale() runs on gradients already averaged over the ranks, so an inf
// on any rank is an inf on every rank and all of them skip the same steps. Under ZeRO each rank
// holds only its shard of the averaged gradients: set_found_inf_reduction makes the verdict the
// group's.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

#include "cohort/optim/optimizer.hpp"

namespace cohort::optim {

struct GradScalerOptions {
  double init_scale = 65536.0;        // 2^16
  double growth_factor = 2.0;         // > 1
  double backoff_factor = 0.5;        // in (0, 1)
  std::int64_t growth_interval = 2000;
  bool enabled = true;                // false: scale() is 1 and step() always steps
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  bool enabled() const { return options_.enabled; }
  // What the loss is multiplied by (1 when disabled).
  float scale() const { return options_.enabled ? scale_ : 1.0f; }
  // Multiplies every gradient of `optimizer`'s parameters by float32(1 / scale), in place, and
  // notes whether any element is inf or NaN. At most once per optimizer step (torch's rule:
  // "unscale_() has already been called on this optimizer since the last update()").
  void unscale(Optimizer& optimizer);
  // optimizer.step() unless the unscaled gradients held an inf or NaN (unscale() first if not
  // done this step); returns whether it stepped.
  bool step(Optimizer& optimizer);
  // Ends the step: a skipped step multiplies the scale by backoff_factor and restarts the count
  // of good steps; growth_interval good steps in a row multiply it by growth_factor. Needs
  // unscale() or step() since the last update().
  void update();

  // Gradients split over ranks (ZeRO; DistributedDataParallel::shard_grad_scaler sets this): each
  // rank's unscale() sees only its shard, so `any_rank` gets this rank's verdict and returns the
  // group's (true when any rank found an inf or NaN). unscale() then calls it once on every rank,
  // also on a rank without gradients: it is collective. Empty: the verdict is this rank's own.
  void set_found_inf_reduction(std::function<bool(bool)> any_rank) {
    any_rank_ = std::move(any_rank);
  }

  bool found_inf() const { return found_inf_; }  // of the current (or last) step
  std::int64_t growth_tracker() const { return growth_tracker_; }
  std::int64_t skipped_steps() const { return skipped_; }  // over the scaler's life

  // torch's state_dict keys: scale, growth_factor, backoff_factor, growth_interval,
  // _growth_tracker (kind "GradScaler").
  StateDict state() const;
  void load_state(const StateDict& state);

 private:
  GradScalerOptions options_;
  float scale_;
  std::int64_t growth_tracker_ = 0;
  std::int64_t skipped_ = 0;
  bool unscaled_ = false, found_inf_ = false;
  std::function<bool(bool)> any_rank_;
};

}  // namespace cohort::optim
