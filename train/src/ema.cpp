// ExponentialMovingAverage (ema.hpp): torch's arithmetic per element, on the host copies of the
// tensors: f32 averages as decay_f * avg + (1 - decay)_f * value, two float32 products and a
// float32 sum (no fused multiply-add: compiled with -ffp-contract=off), the Python float decay
// and 1 - decay each rounded to float32 as a tensor op takes them; integer buffers averaged in
// float32 and truncated back, as copy_ into an int64 tensor does.
#include "cohort/train/ema.hpp"

#include <algorithm>
#include <cmath>

#include "cohort/core/error.hpp"

namespace cohort::train {

ExponentialMovingAverage::ExponentialMovingAverage(const nn::Module& model, double decay)
    : decay_(decay) {
  COHORT_CHECK(decay >= 0.0 && decay <= 1.0, "ExponentialMovingAverage: decay ", decay,
               " outside [0, 1]");
  for (const auto& e : model.state_dict()) {
    names_.push_back(e.name);
    avg_.push_back(e.tensor.clone());
  }
  COHORT_CHECK(!avg_.empty(), "ExponentialMovingAverage: the model has no parameters or buffers");
}

void ExponentialMovingAverage::update(const nn::Module& model) {
  const auto state = model.state_dict();
  COHORT_CHECK(state.size() == avg_.size(), "ExponentialMovingAverage::update: the model has ",
               state.size(), " state entries, the average ", avg_.size());
  const float d = static_cast<float>(decay_), e = static_cast<float>(1.0 - decay_);
  for (std::size_t i = 0; i < state.size(); ++i) {
    const Tensor& v = state[i].tensor;
    Tensor& a = avg_[i];
    COHORT_CHECK(state[i].name == names_[i] && v.shape() == a.shape() && v.dtype() == a.dtype(),
                 "ExponentialMovingAverage::update: entry ", i, " is ", state[i].name, " ",
                 v.shape(), ", the average's ", names_[i], " ", a.shape());
    if (n_averaged_ == 0) {
      a.copy_from(v);
      continue;
    }
    if (v.dtype() == DType::f32) {
      std::vector<float> av = a.to_vector<float>();
      const std::vector<float> vv = v.to_vector<float>();
      for (std::size_t k = 0; k < av.size(); ++k) {
        const float x = d * av[k];
        const float y = e * vv[k];
        av[k] = x + y;
      }
      a.copy_from(Tensor::from_vector(av, a.shape(), a.device()));
    } else if (v.dtype() == DType::i64) {
      std::vector<std::int64_t> av = a.to_vector<std::int64_t>();
      const std::vector<std::int64_t> vv = v.to_vector<std::int64_t>();
      for (std::size_t k = 0; k < av.size(); ++k) {
        const float x = d * static_cast<float>(av[k]);
        const float y = e * static_cast<float>(vv[k]);
        av[k] = static_cast<std::int64_t>(std::trunc(x + y));
      }
      a.copy_from(Tensor::from_vector(av, a.shape(), a.device()));
    } else {
      COHORT_FAIL("ExponentialMovingAverage: ", names_[i], " has dtype ", dtype_name(v.dtype()),
                  " (f32 and i64 are averaged)");
    }
  }
  ++n_averaged_;
}

void ExponentialMovingAverage::swap(nn::Module& model) {
  const auto state = model.state_dict();
  COHORT_CHECK(state.size() == avg_.size(), "ExponentialMovingAverage::swap: the model has ",
               state.size(), " state entries, the average ", avg_.size());
  for (std::size_t i = 0; i < state.size(); ++i) {
    Tensor live = state[i].tensor;  // shares the model's storage
    const Tensor keep = live.clone();
    live.copy_from(avg_[i]);
    avg_[i].copy_from(keep);
  }
  model.notify_state_loaded();
}

std::vector<nn::NamedTensor> ExponentialMovingAverage::state_dict() const {
  std::vector<nn::NamedTensor> out;
  for (std::size_t i = 0; i < avg_.size(); ++i) out.push_back({"module." + names_[i], avg_[i]});
  Device& dev = avg_.front().device();
  out.push_back({"n_averaged", Tensor::from_vector(std::vector<std::int64_t>{n_averaged_},
                                                   Shape{}, dev)});
  return out;
}

std::map<std::string, Tensor> ExponentialMovingAverage::checkpoint_tensors() const {
  std::map<std::string, Tensor> out;
  for (std::size_t i = 0; i < avg_.size(); ++i) out["model_ema." + names_[i]] = avg_[i];
  return out;
}

void ExponentialMovingAverage::load(const std::map<std::string, Tensor>& extra,
                                    std::int64_t n_averaged) {
  COHORT_CHECK(n_averaged >= 0, "ExponentialMovingAverage::load: n_averaged ", n_averaged,
               " is negative");
  for (std::size_t i = 0; i < avg_.size(); ++i) {  // check all before changing any
    const auto it = extra.find("model_ema." + names_[i]);
    COHORT_CHECK(it != extra.end(), "ExponentialMovingAverage::load: no entry model_ema.",
                 names_[i]);
    COHORT_CHECK(it->second.shape() == avg_[i].shape() && it->second.dtype() == avg_[i].dtype(),
                 "ExponentialMovingAverage::load: model_ema.", names_[i], " is ",
                 it->second.shape(), " ", dtype_name(it->second.dtype()), ", the model's ",
                 avg_[i].shape(), " ", dtype_name(avg_[i].dtype()));
  }
  for (std::size_t i = 0; i < avg_.size(); ++i)
    avg_[i].copy_from(extra.at("model_ema." + names_[i]));
  n_averaged_ = n_averaged;
}

double ExponentialMovingAverage::adjusted_decay(double decay, int world_size,
                                                std::int64_t batch_size, std::int64_t ema_steps,
                                                std::int64_t epochs) {
  COHORT_CHECK(world_size >= 1 && batch_size >= 1 && ema_steps >= 1 && epochs >= 1,
               "ExponentialMovingAverage::adjusted_decay: world size ", world_size, ", batch ",
               batch_size, ", EMA steps ", ema_steps, " and epochs ", epochs, " must be >= 1");
  const double adjust = static_cast<double>(world_size) * static_cast<double>(batch_size) *
                        static_cast<double>(ema_steps) / static_cast<double>(epochs);
  return 1.0 - std::min(1.0, (1.0 - decay) * adjust);
}

}  // namespace cohort::train
