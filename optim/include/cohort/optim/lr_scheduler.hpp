// Learning-rate schedulers: PyTorch 1.13's StepLR, ExponentialLR, CosineAnnealingLR, LinearLR
// (linear warm-up), OneCycleLR and SequentialLR (one schedule after another: warm-up, then any), in
// C++.
//
// Use as in torch: construct the scheduler on an optimizer (which sets epoch 0's learning rate at
// once), then call step() once per epoch (or per batch for OneCycleLR) after optimizer.step().
//
// Each schedule is its closed form, a pure function lr_at(group, epoch) of the base learning rate
// (torch's group['initial_lr']) and the epoch, evaluated in double. torch's step() evaluates a
// recurrence on the optimizer's current lr instead (its "chainable form"); the two agree to
// rounding (tests/golden checks it against torch over several periods, CosineAnnealingLR past
// T_max included, where it rises again: period 2 * T_max), as long as nothing else changes the
// lr. Difference: two schedulers stepping the same optimizer compose multiplicatively in torch;
// here the last one to step sets the lr.
//
// Lifetime: a scheduler keeps a reference to its optimizer, which must outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cohort/optim/optimizer.hpp"

namespace cohort::optim {

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // "StepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR", "OneCycleLR", "SequentialLR".
  const std::string& name() const { return name_; }
  Optimizer& optimizer() const { return optimizer_; }

  // Advances one epoch and sets every group's learning rate (and, for OneCycleLR, momentum) to the
  // schedule's value there. A step the schedule does not allow (OneCycleLR past total_steps)
  // throws and changes nothing.
  void step();
  // Epochs stepped so far: 0 right after construction.
  std::int64_t last_epoch() const { return last_epoch_; }
  // The learning rates set by the last step (torch's get_last_lr()).
  double last_lr(std::size_t group = 0) const;
  const std::vector<double>& last_lrs() const { return last_lrs_; }
  // The learning rates the schedule starts from (torch's base_lrs, one per group).
  const std::vector<double>& base_lrs() const { return base_lrs_; }

  // The schedule: group `group`'s learning rate at `epoch` (>= 0); no side effects.
  virtual double lr_at(std::size_t group, std::int64_t epoch) const = 0;

  // Progress and arguments as scalars (see StateDict): "last_epoch", "base_lrs.<g>",
  // "last_lrs.<g>" and the constructor's arguments by torch's names. load_state restores them
  // all (as torch's load_state_dict does, arguments included) after checking the kind, the
  // number of groups, that no key is missing or unknown and that every value is valid; on error
  // nothing changes. It does not touch the optimizer: restore the optimizer's own state (its
  // learning rates included) with Optimizer::load_state.
  StateDict state() const;
  void load_state(const StateDict& state);

 protected:
  Scheduler(Optimizer& optimizer, std::string name);
  // The derived constructor calls it last, once its arguments are checked: records the base
  // learning rates (each group's initial_lr, set to its current lr if unset) and steps to epoch 0
  // (torch's _initial_step).
  void start();

  // Throws when the schedule does not allow `epoch` (OneCycleLR past total_steps).
  virtual void check_epoch(std::int64_t /*epoch*/) const {}
  // Applies what else the schedule sets at `epoch`, before the learning rates (OneCycleLR's
  // momentum); throws before changing anything when a value is invalid.
  virtual void apply_extra(std::int64_t /*epoch*/) {}
  virtual void save_args(StateDict& out) const = 0;
  // Reads and checks the arguments from `in` (recording the keys in `used`) and returns the
  // function that installs them.
  virtual std::function<void()> stage_args(const StateDict& in, std::set<std::string>& used) = 0;

  std::string where(const char* method) const { return name_ + "." + method + ": "; }

 private:
  friend class SequentialLR;  // drives its schedulers' hooks at their own epochs
  Optimizer& optimizer_;
  std::string name_;
  std::int64_t last_epoch_ = -1;
  std::vector<double> base_lrs_;
  std::vector<double> last_lrs_;
};

namespace detail {

// A scheduler whose arguments are a struct `Args` with
//   template <class Self, class F> static void fields(Self& a, F&& f);  f(name, field) per field
//   void check(const std::string& scheduler, std::size_t groups) const;
template <class Args>
class SchedulerWith : public Scheduler {
 public:
  const Args& args() const { return args_; }

 protected:
  SchedulerWith(Optimizer& optimizer, std::string name, const Args& args)
      : Scheduler(optimizer, std::move(name)), args_(args) {
    args_.check(this->name(), optimizer.num_param_groups());
  }
  void save_args(StateDict& out) const override;
  std::function<void()> stage_args(const StateDict& in, std::set<std::string>& used) override;

  Args args_;
};

}  // namespace detail

// lr = base_lr * gamma^floor(epoch / step_size): decays by gamma every step_size epochs.
struct StepLRArgs {
  std::int64_t step_size = 0;  // >= 1, required
  double gamma = 0.1;          // finite, >= 0

  void check(const std::string& scheduler, std::size_t groups) const;
  template <class Self, class F>
  static void fields(Self& a, F&& f) {
    f("step_size", a.step_size);
    f("gamma", a.gamma);
  }
};
class StepLR final : public detail::SchedulerWith<StepLRArgs> {
 public:
  StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma = 0.1);
  double lr_at(std::size_t group, std::int64_t epoch) const override;
};

// lr = base_lr * gamma^epoch.
struct ExponentialLRArgs {
  double gamma = 0.0;  // finite, >= 0, required

  void check(const std::string& scheduler, std::size_t groups) const;
  template <class Self, class F>
  static void fields(Self& a, F&& f) {
    f("gamma", a.gamma);
  }
};
class ExponentialLR final : public detail::SchedulerWith<ExponentialLRArgs> {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);
  double lr_at(std::size_t group, std::int64_t epoch) const override;
};

// lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2 (SGDR without restarts):
// base_lr at 0, eta_min at T_max, and back up to base_lr at 2 T_max if stepped further, as torch.
struct CosineAnnealingLRArgs {
  std::int64_t T_max = 0;  // >= 1, required
  double eta_min = 0.0;    // finite, >= 0

  void check(const std::string& scheduler, std::size_t groups) const;
  template <class Self, class F>
  static void fields(Self& a, F&& f) {
    f("T_max", a.T_max);
    f("eta_min", a.eta_min);
  }
};
class CosineAnnealingLR final : public detail::SchedulerWith<CosineAnnealingLRArgs> {
 public:
  CosineAnnealingLR(Optimizer& optimizer, std::int64_t T_max, double eta_min = 0.0);
  double lr_at(std::size_t group, std::int64_t epoch) const override;
};

// Linear warm-up: lr = base_lr * (start_factor + (end_factor - start_factor)
//                                  * min(epoch, total_iters) / total_iters).
struct LinearLRArgs {
  double start_factor = 1.0 / 3.0;  // in (0, 1]
  double end_factor = 1.0;          // in [0, 1]
  std::int64_t total_iters = 5;     // >= 1

  void check(const std::string& scheduler, std::size_t groups) const;
  template <class Self, class F>
  static void fields(Self& a, F&& f) {
    f("start_factor", a.start_factor);
    f("end_factor", a.end_factor);
    f("total_iters", a.total_iters);
  }
};
class LinearLR final : public detail::SchedulerWith<LinearLRArgs> {
 public:
  explicit LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3.0, double end_factor = 1.0,
                    std::int64_t total_iters = 5);
  double lr_at(std::size_t group, std::int64_t epoch) const override;
};

enum class AnnealStrategy { cos = 0, linear = 1 };

// The 1cycle policy (Smith & Topin 2017), torch.optim.lr_scheduler.OneCycleLR: from
// max_lr / div_factor up to max_lr over the first pct_start of total_steps, then down to
// max_lr / div_factor / final_div_factor (three_phase: back to the initial lr first, then down).
// With cycle_momentum the optimizer's momentum (SGD, RMSprop) or beta1 (Adam, AdamW) moves the
// opposite way between max_momentum and base_momentum; Adadelta has neither and is refused.
// step() may be called total_steps times after construction (torch allows exactly that too);
// the last of those steps lies one past the cycle, where torch extrapolates the final phase and a
// linear anneal may give a negative lr: cohort sets 0 there (the only deviation from torch).
struct OneCycleLRArgs {
  std::vector<double> max_lr;      // one value (every group) or one per group; required
  std::int64_t total_steps = 0;    // > 0, or 0 to use epochs * steps_per_epoch
  std::int64_t epochs = 0;
  std::int64_t steps_per_epoch = 0;
  double pct_start = 0.3;          // in [0, 1]
  AnnealStrategy anneal_strategy = AnnealStrategy::cos;
  bool cycle_momentum = true;
  double base_momentum = 0.85;
  double max_momentum = 0.95;
  double div_factor = 25.0;        // > 0
  double final_div_factor = 1e4;   // > 0
  bool three_phase = false;

  // The constructor first resolves total_steps = epochs * steps_per_epoch when total_steps is 0
  // and repeats a single max_lr for every group; check() then wants max_lr.size() == groups.
  void check(const std::string& scheduler, std::size_t groups) const;
  template <class Self, class F>
  static void fields(Self& a, F&& f) {
    for (std::size_t g = 0; g < a.max_lr.size(); ++g) f("max_lr." + std::to_string(g), a.max_lr[g]);
    f("total_steps", a.total_steps);
    f("epochs", a.epochs);
    f("steps_per_epoch", a.steps_per_epoch);
    f("pct_start", a.pct_start);
    f("anneal_strategy", a.anneal_strategy);
    f("cycle_momentum", a.cycle_momentum);
    f("base_momentum", a.base_momentum);
    f("max_momentum", a.max_momentum);
    f("div_factor", a.div_factor);
    f("final_div_factor", a.final_div_factor);
    f("three_phase", a.three_phase);
  }
};
class OneCycleLR final : public detail::SchedulerWith<OneCycleLRArgs> {
 public:
  OneCycleLR(Optimizer& optimizer, const OneCycleLRArgs& args);
  double lr_at(std::size_t group, std::int64_t epoch) const override;
  // The momentum (or beta1) the schedule sets at `epoch`; throws without cycle_momentum.
  double momentum_at(std::size_t group, std::int64_t epoch) const;
  std::int64_t total_steps() const { return args_.total_steps; }

 private:
  void check_epoch(std::int64_t epoch) const override;
  void apply_extra(std::int64_t epoch) override;
  // Anneals between per-phase endpoints chosen by `pick` (lr or momentum) at `epoch`.
  template <class Pick>
  double anneal_at(std::int64_t epoch, Pick pick) const;
};

// torch.optim.lr_scheduler.SequentialLR: schedulers[0] until epoch milestones[0], then
// schedulers[1] restarted at its own epoch 0 until milestones[1], and so on. The usual warm-up:
//
//   std::vector<std::unique_ptr<Scheduler>> parts;
//   parts.push_back(std::make_unique<LinearLR>(opt, 0.01, 1.0, warmup));
//   parts.push_back(std::make_unique<CosineAnnealingLR>(opt, total - warmup));
//   SequentialLR sched(opt, std::move(parts), {warmup});
//
// lr_at(g, e) = schedulers[i].lr_at(g, e - milestones[i-1]) for the i with milestones[i-1] <= e <
// milestones[i]. Every scheduler must be built on `optimizer` (so all share its initial_lr as
// base lr, as in torch) and is owned and stepped by the SequentialLR alone: their own last_epoch
// and last_lr stay as their construction left them. Construction sets epoch 0 of schedulers[0]
// (torch resets the lr and repeats the first scheduler's initial step). The state holds
// "milestones.<i>" and each scheduler's state under "schedulers.<i>."; load_state wants the same
// number of schedulers and milestones, and each part's keys to match its kind.
class SequentialLR final : public Scheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::unique_ptr<Scheduler>> schedulers,
               std::vector<std::int64_t> milestones);
  double lr_at(std::size_t group, std::int64_t epoch) const override;
  const std::vector<std::int64_t>& milestones() const { return milestones_; }
  std::size_t num_schedulers() const { return schedulers_.size(); }
  const Scheduler& scheduler(std::size_t i) const;

 private:
  // The scheduler in charge at `epoch` and the epoch in its own count.
  std::pair<const Scheduler*, std::int64_t> locate(std::int64_t epoch) const;
  void check_epoch(std::int64_t epoch) const override;
  void apply_extra(std::int64_t epoch) override;
  void save_args(StateDict& out) const override;
  std::function<void()> stage_args(const StateDict& in, std::set<std::string>& used) override;

  std::vector<std::unique_ptr<Scheduler>> schedulers_;
  std::vector<std::int64_t> milestones_;
};

}  // namespace cohort::optim
