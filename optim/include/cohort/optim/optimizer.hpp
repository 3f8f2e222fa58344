// The optimizer interface: PyTorch 1.13's torch.optim.Optimizer in C++.
//
// An optimizer holds parameter groups (a list of cohort::ParameterPtr with one set of
// hyper-parameters each), per-parameter state (a step count and named buffers such as Adam's
// exp_avg) and updates every parameter in place through one fused device op per parameter tensor
// (cohort/core/optim_ops.hpp), so the same code runs on the host and on a GPU.
//
// Differences from torch, on purpose:
//  - a parameter whose requires_grad is false is skipped (torch's "grad is None"); one that
//    requires a gradient but has none (undefined tensor), or whose gradient differs in shape,
//    dtype or device from its value, is an error: step() checks every parameter before it
//    changes any, so a bad one leaves the model untouched;
//  - hyper-parameters are validated whenever they change (construction, add_param_group,
//    set_lr, set_momentum, load_state), not only at construction; non-finite values are refused;
//  - a parameter listed twice (torch warns) is an error, as is one in two groups (torch too);
//  - state buffers that the current hyper-parameters need but the state lacks (amsgrad switched
//    on after a few steps, RMSprop momentum turned on by OneCycleLR, ...) start at zero where torch
//    raises a KeyError.
//
// Lifetime and threads: an optimizer shares its parameters with the model (ParameterPtr) and must
// outlive the schedulers attached to it. It is not thread-safe; one thread drives it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cohort/core/parameter.hpp"
#include "cohort/core/tensor.hpp"

namespace cohort::optim {

// A saved optimizer or scheduler state: named tensors and named scalars, flat, ready for a
// safetensors file (tensors as tensors, scalars as metadata). Key layout, torch's state_dict
// flattened (parameters are numbered 0..N-1 across groups, in group order, as torch numbers them):
//   kind                              "SGD", "Adam", ..., "StepLR", ... (which class wrote it)
//   tensors["state.<i>.<buffer>"]     parameter i's buffers (momentum_buffer, exp_avg, ...)
//   scalars["state.<i>.step"]         updates applied to parameter i (every parameter has one)
//   scalars["param_groups.<g>.<hp>"]  group g's hyper-parameters by torch's names ("lr",
//                                     "betas.0", "betas.1", bools as 0/1), "num_params" and,
//                                     once a scheduler set it, "initial_lr"
//   schedulers: scalars only ("last_epoch", "base_lrs.<g>", "last_lrs.<g>", their arguments).
// Tensors returned by state() are snapshots (copies) on the parameters' device.
struct StateDict {
  std::string kind;
  std::map<std::string, Tensor> tensors;
  std::map<std::string, double> scalars;
};

// Which hyper-parameter OneCycleLR cycles (torch: 'momentum' in the defaults, else 'betas').
enum class MomentumKind { none, momentum, beta1 };

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // "SGD", "Adam", "AdamW", "Adadelta", "RMSprop": the torch class name, used in every error.
  const std::string& name() const { return name_; }

  // One update of every parameter that requires a gradient, group by group, in order. Enqueues
  // device ops and returns (on a GPU they may still be running). Throws cohort::Error naming the
  // optimizer and the parameter when a gradient is missing or does not match its parameter.
  void step();
  // Sets every defined gradient to zero (torch's zero_grad(set_to_none=False), its 1.13 default).
  void zero_grad();

  // Runs `hook(*this)` at the start of every step(), before gradients are checked or parameters
  // change (torch's register_step_pre_hook): what parallel::DistributedOptimizer averages
  // gradients in. Hooks run in registration order; returns an id for remove_step_pre_hook.
  int register_step_pre_hook(std::function<void(Optimizer&)> hook);
  void remove_step_pre_hook(int id);  // unknown ids are ignored
  // Runs `hook(*this)` at the end of every step(), after every parameter is updated (torch's
  // register_step_post_hook): what a sharded DDP (DDPOptions::zero_stage) all-gathers the
  // updated shards in. Ids are shared with the pre-hooks; remove_step_post_hook.
  int register_step_post_hook(std::function<void(Optimizer&)> hook);
  void remove_step_post_hook(int id);  // unknown ids are ignored

  std::size_t num_param_groups() const { return groups_.size(); }
  // Parameters of group `group`, in the order given.
  const std::vector<ParameterPtr>& params(std::size_t group = 0) const;
  std::size_t num_params() const;  // over all groups

  // The learning rate of one group; set_lr(lr) sets every group's. Negative or non-finite values
  // throw.
  double lr(std::size_t group = 0) const;
  void set_lr(double lr);
  void set_lr(std::size_t group, double lr);

  // The momentum-like hyper-parameter (SGD and RMSprop: momentum; Adam and AdamW: beta1; none
  // for Adadelta, whose momentum() throws). Used by OneCycleLR's momentum cycling.
  virtual MomentumKind momentum_kind() const = 0;
  double momentum(std::size_t group = 0) const;
  void set_momentum(std::size_t group, double value);

  // torch's group['initial_lr']: the base learning rate schedulers start from. The first
  // scheduler attached sets it to the group's lr if unset; OneCycleLR overwrites it.
  std::optional<double> initial_lr(std::size_t group) const;
  void set_initial_lr(std::size_t group, double lr);

  // Updates applied so far to parameter `index` of group `group` (torch's state[p]['step']).
  std::int64_t step_count(std::size_t group, std::size_t index) const;

  // A snapshot of everything step() depends on besides the parameters: per-parameter steps and
  // buffers (copied) and every group's hyper-parameters; see StateDict for the keys.
  StateDict state() const;
  // Restores a state saved by an optimizer of the same class over parameters of the same shapes,
  // in the same group structure (torch's load_state_dict: hyper-parameters included; tensors are
  // copied to each parameter's device). Everything is checked before anything changes: a state
  // of another kind, a different number of groups or parameters, a buffer whose shape or dtype
  // differs from its parameter's, a missing or unknown key or an invalid hyper-parameter throws
  // cohort::Error naming the optimizer, the key and the values, and leaves the optimizer as it was.
  void load_state(const StateDict& state);

 protected:
  // One parameter and its state.
  struct Slot {
    ParameterPtr param;
    std::int64_t step = 0;
    std::map<std::string, Tensor> buffers;  // lazily created by update()
  };

  explicit Optimizer(std::string name) : name_(std::move(name)) {}

  // Appends a group after checking its parameters (non-empty list, non-null, defined f32 values,
  // none already in this optimizer). The derived class appends the group's options right after.
  void add_group_params(const std::vector<ParameterPtr>& params);

  // The buffer `name` of a slot, created as zeros like the parameter if absent; `created` (when
  // given) says whether it was just created.
  static Tensor& buffer(Slot& slot, const std::string& name, bool* created = nullptr);

  // --- hooks of the derived classes ---
  // Updates one parameter whose gradient step() has checked (increments slot.step itself).
  virtual void update(std::size_t group, Slot& slot) = 0;
  // Buffer names this optimizer keeps: `required` exist once a parameter has been stepped;
  // `optional` ones only under some hyper-parameters.
  virtual const std::vector<std::string>& required_buffers() const = 0;
  virtual const std::vector<std::string>& optional_buffers() const = 0;
  // Hyper-parameters of one group, by torch's names.
  virtual double group_lr(std::size_t group) const = 0;
  virtual void set_group_lr(std::size_t group, double lr) = 0;  // validates
  virtual double group_momentum(std::size_t group) const = 0;
  virtual void set_group_momentum(std::size_t group, double value) = 0;  // validates
  virtual void save_hyper(std::size_t group, const std::string& prefix, StateDict& out) const = 0;
  // Reads every group's hyper-parameters from `in` (keys "param_groups.<g>.<name>"), validates
  // them, records the keys it read in `used`, and returns the function that installs them.
  virtual std::function<void()> stage_hyper(const StateDict& in, std::set<std::string>& used) = 0;

  // "SGD.step: " etc.
  std::string where(const char* method) const { return name_ + "." + method + ": "; }

 private:
  struct Group {
    std::vector<ParameterPtr> params;
    std::vector<Slot> slots;
    std::optional<double> initial_lr;
  };
  void check_group(std::size_t group, const char* method) const;

  std::string name_;
  std::vector<Group> groups_;
  std::vector<std::pair<int, std::function<void(Optimizer&)>>> pre_hooks_, post_hooks_;
  int next_hook_id_ = 0;
};

namespace detail {

// Reads scalars["<prefix><key>"] into a double or bool field; throws naming the optimizer when the
// key is missing or a bool is not 0 or 1.
void read_scalar(const std::string& who, const StateDict& in, const std::string& key, double& v);
void read_scalar(const std::string& who, const StateDict& in, const std::string& key, bool& v);

template <class O, class = void>
struct has_momentum : std::false_type {};
template <class O>
struct has_momentum<O, std::void_t<decltype(std::declval<O&>().momentum)>> : std::true_type {};
template <class O>
inline constexpr bool has_momentum_v = has_momentum<O>::value;
template <class O, class = void>
struct has_betas : std::false_type {};
template <class O>
struct has_betas<O, std::void_t<decltype(std::declval<O&>().betas)>> : std::true_type {};
template <class O>
inline constexpr bool has_betas_v = has_betas<O>::value;

// The common part of every concrete optimizer: groups of `Options`. Options provides
//   double lr;                                   the group's learning rate
//   template <class Self, class F> static void fields(Self& o, F&& f);  f(name, field) per field
//   void check(const std::string& optimizer) const;  throws cohort::Error on a bad value
// and, for momentum cycling, a `momentum` field or a `betas` array.
template <class Options>
class OptimizerWith : public Optimizer {
 public:
  // Adds a parameter group with its own hyper-parameters (torch's add_param_group).
  void add_param_group(const std::vector<ParameterPtr>& params, const Options& options) {
    options.check(name());
    add_group_params(params);
    options_.push_back(options);
  }
  const Options& options(std::size_t group = 0) const {
    COHORT_CHECK(group < options_.size(), where("options"), "group ", group, " out of range (",
                 options_.size(), " groups)");
    return options_[group];
  }
  // Replaces a group's hyper-parameters (validated first).
  void set_options(std::size_t group, const Options& options) {
    COHORT_CHECK(group < options_.size(), where("set_options"), "group ", group,
                 " out of range (", options_.size(), " groups)");
    options.check(name());
    options_[group] = options;
  }

  MomentumKind momentum_kind() const override {
    if constexpr (has_momentum_v<Options>) return MomentumKind::momentum;
    if constexpr (has_betas_v<Options>) return MomentumKind::beta1;
    return MomentumKind::none;
  }

 protected:
  OptimizerWith(std::string name, const std::vector<ParameterPtr>& params, const Options& options)
      : Optimizer(std::move(name)) {
    add_param_group(params, options);
  }

  double group_lr(std::size_t group) const override { return options_[group].lr; }
  void set_group_lr(std::size_t group, double lr) override {
    Options o = options_[group];
    o.lr = lr;
    o.check(name());
    options_[group] = o;
  }
  double group_momentum(std::size_t group) const override {
    if constexpr (has_momentum_v<Options>) return options_[group].momentum;
    if constexpr (has_betas_v<Options>) return options_[group].betas[0];
    COHORT_FAIL(name(), " has no momentum or beta1 hyper-parameter");
  }
  void set_group_momentum(std::size_t group, double value) override {
    Options o = options_[group];
    if constexpr (has_momentum_v<Options>) {
      o.momentum = value;
    } else if constexpr (has_betas_v<Options>) {
      o.betas[0] = value;
    } else {
      COHORT_FAIL(name(), " has no momentum or beta1 hyper-parameter (", value, " given)");
    }
    o.check(name());
    options_[group] = o;
  }
  void save_hyper(std::size_t group, const std::string& prefix, StateDict& out) const override {
    Options::fields(options_[group], [&](const char* key, const auto& v) {
      out.scalars[prefix + key] = static_cast<double>(v);
    });
  }
  std::function<void()> stage_hyper(const StateDict& in, std::set<std::string>& used) override {
    std::vector<Options> staged = options_;
    for (std::size_t g = 0; g < staged.size(); ++g) {
      const std::string prefix = "param_groups." + std::to_string(g) + ".";
      Options::fields(staged[g], [&](const char* key, auto& v) {
        read_scalar(name(), in, prefix + key, v);
        used.insert(prefix + key);
      });
      staged[g].check(name() + ".load_state");
    }
    return [this, staged] { options_ = staged; };
  }

  std::vector<Options> options_;
};

}  // namespace detail
}  // namespace cohort::optim
