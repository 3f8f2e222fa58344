// An exponential moving average of a model's weights, as torchvision's reference script keeps it
// (utils.ExponentialMovingAverage: torch.optim.swa_utils.AveragedModel with use_buffers=True and
// avg = decay * avg + (1 - decay) * value): parameters and buffers are averaged (a buffer of
// integers, num_batches_tracked, too, truncated back to an integer as torch's copy_ does); the
// first update after construction or reset() copies the model. The averages live beside the
// model (no second model is built): swap() exchanges them with the model's values, which is how
// the Trainer evaluates the averaged weights ("Acc@1 EMA") and puts its own back.
//
// The Trainer drives it (TrainerOptions::ema): an update every `ema_steps` optimizer steps of an
// epoch (step 0, N, 2N, ...), and during the first `ema_warmup_epochs` epochs each update is
// followed by reset(), so the average keeps copying the weights while the learning rate warms up.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cohort/layers/module.hpp"

namespace cohort::train {

class ExponentialMovingAverage {
 public:
  // Averages of `model`'s parameters and buffers (state_dict order), on the model's devices,
  // starting as copies of them; decay in [0, 1].
  ExponentialMovingAverage(const nn::Module& model, double decay);

  // AveragedModel.update_parameters(model): the first update (n_averaged() == 0) copies, the
  // others average. `model` must have the constructor's model's names and shapes.
  void update(const nn::Module& model);
  void reset() { n_averaged_ = 0; }  // n_averaged.fill_(0)
  std::int64_t n_averaged() const { return n_averaged_; }
  double decay() const { return decay_; }

  // Exchanges the averages with `model`'s values (call it twice to undo).
  void swap(nn::Module& model);

  // The averages as "module.<state_dict name>" entries, and "n_averaged" (i64, shape []): the
  // keys of the reference script's checkpoint["model_ema"].
  std::vector<nn::NamedTensor> state_dict() const;

  // For checkpoints: the averages as "model_ema.<state_dict name>" tensors (TrainingProgress::
  // extra) and the count (its run entry "model_ema.n_averaged"); load() takes them back, every
  // entry present with the model's shapes, else an error naming the entry.
  std::map<std::string, Tensor> checkpoint_tensors() const;
  void load(const std::map<std::string, Tensor>& extra, std::int64_t n_averaged);

  // train.py's decay adjustment: alpha = min(1, (1 - decay) x world x batch x ema_steps /
  // epochs), decay' = 1 - alpha.
  static double adjusted_decay(double decay, int world_size, std::int64_t batch_size,
                               std::int64_t ema_steps, std::int64_t epochs);

 private:
  double decay_;
  std::int64_t n_averaged_ = 0;
  std::vector<std::string> names_;
  std::vector<Tensor> avg_;
};

}  // namespace cohort::train
