// The optimizer base: groups, the checked step loop, zero_grad and state save/restore. The
// per-parameter math lives in each optimizer's file and, below that, in one fused device op.
#include "cohort/core/device.hpp"
#include "cohort/optim/optimizer.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <unordered_set>

#include "cohort/core/ops.hpp"

namespace cohort::optim {
namespace {

std::string param_label(std::size_t flat, std::size_t group, std::size_t index) {
  return "parameter " + std::to_string(flat) + " (group " + std::to_string(group) + ", index " +
         std::to_string(index) + ")";
}

// Parses "state.<i>.<rest>"; false when `key` does not have that form.
bool parse_state_key(const std::string& key, std::size_t& index, std::string& rest) {
  const std::string head = "state.";
  if (key.compare(0, head.size(), head) != 0) return false;
  const std::size_t dot = key.find('.', head.size());
  if (dot == std::string::npos || dot == head.size()) return false;
  const std::string digits = key.substr(head.size(), dot - head.size());
  for (char c : digits)
    if (c < '0' || c > '9') return false;
  errno = 0;
  const unsigned long long v = std::strtoull(digits.c_str(), nullptr, 10);
  if (errno != 0) return false;
  index = static_cast<std::size_t>(v);
  rest = key.substr(dot + 1);
  return !rest.empty();
}

}  // namespace

// ---- groups and parameters ----

void Optimizer::add_group_params(const std::vector<ParameterPtr>& params) {
  COHORT_CHECK(!params.empty(), name_, ": got an empty parameter list (group ", groups_.size(),
               ")");
  std::unordered_set<const Parameter*> seen;
  for (const Group& g : groups_)
    for (const ParameterPtr& p : g.params) seen.insert(p.get());
  std::unordered_set<const Parameter*> mine;
  Group group;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ParameterPtr& p = params[i];
    const std::string label = "parameter " + std::to_string(i) + " of group " +
                              std::to_string(groups_.size());
    COHORT_CHECK(p != nullptr, name_, ": ", label, " is a null ParameterPtr");
    COHORT_CHECK(p->value.defined(), name_, ": ", label, " has an undefined value tensor");
    COHORT_CHECK(p->value.dtype() == DType::f32, name_, ": ", label, " has dtype ",
                 dtype_name(p->value.dtype()), "; optimizers update f32 parameters only");
    COHORT_CHECK(seen.count(p.get()) == 0, name_, ": ", label, " (shape ",
                 p->value.shape().str(), ") already belongs to another parameter group");
    COHORT_CHECK(mine.insert(p.get()).second, name_, ": ", label, " (shape ",
                 p->value.shape().str(), ") appears twice in its group");
    group.params.push_back(p);
    Slot slot;
    slot.param = p;
    group.slots.push_back(std::move(slot));
  }
  groups_.push_back(std::move(group));
}

void Optimizer::check_group(std::size_t group, const char* method) const {
  COHORT_CHECK(group < groups_.size(), where(method), "group ", group, " out of range (",
               groups_.size(), " parameter group", groups_.size() == 1 ? "" : "s", ")");
}

const std::vector<ParameterPtr>& Optimizer::params(std::size_t group) const {
  check_group(group, "params");
  return groups_[group].params;
}

std::size_t Optimizer::num_params() const {
  std::size_t n = 0;
  for (const Group& g : groups_) n += g.params.size();
  return n;
}

// ---- hyper-parameters ----

double Optimizer::lr(std::size_t group) const {
  check_group(group, "lr");
  return group_lr(group);
}

void Optimizer::set_lr(double lr) {
  for (std::size_t g = 0; g < groups_.size(); ++g) set_lr(g, lr);
}

void Optimizer::set_lr(std::size_t group, double lr) {
  check_group(group, "set_lr");
  set_group_lr(group, lr);
}

double Optimizer::momentum(std::size_t group) const {
  check_group(group, "momentum");
  return group_momentum(group);
}

void Optimizer::set_momentum(std::size_t group, double value) {
  check_group(group, "set_momentum");
  set_group_momentum(group, value);
}

std::optional<double> Optimizer::initial_lr(std::size_t group) const {
  check_group(group, "initial_lr");
  return groups_[group].initial_lr;
}

void Optimizer::set_initial_lr(std::size_t group, double lr) {
  check_group(group, "set_initial_lr");
  COHORT_CHECK(std::isfinite(lr) && lr >= 0.0, where("set_initial_lr"), "invalid initial_lr ", lr,
               " for group ", group, " (must be finite and >= 0)");
  groups_[group].initial_lr = lr;
}

std::int64_t Optimizer::step_count(std::size_t group, std::size_t index) const {
  check_group(group, "step_count");
  COHORT_CHECK(index < groups_[group].slots.size(), where("step_count"), "index ", index,
               " out of range (group ", group, " has ", groups_[group].slots.size(),
               " parameters)");
  return groups_[group].slots[index].step;
}

// ---- step ----

Tensor& Optimizer::buffer(Slot& slot, const std::string& name, bool* created) {
  auto it = slot.buffers.find(name);
  const bool fresh = it == slot.buffers.end();
  if (fresh) {
    const Tensor& v = slot.param->value;
    it = slot.buffers.emplace(name, Tensor::zeros(v.shape(), DType::f32, v.device())).first;
  }
  if (created) *created = fresh;
  return it->second;
}

namespace {
using HookList = std::vector<std::pair<int, std::function<void(Optimizer&)>>>;
void erase_hook(HookList& hooks, int id) {
  for (auto it = hooks.begin(); it != hooks.end(); ++it)
    if (it->first == id) {
      hooks.erase(it);
      return;
    }
}
}  // namespace

int Optimizer::register_step_pre_hook(std::function<void(Optimizer&)> hook) {
  COHORT_CHECK(hook != nullptr, where("register_step_pre_hook"), "the hook is empty");
  pre_hooks_.emplace_back(next_hook_id_, std::move(hook));
  return next_hook_id_++;
}

int Optimizer::register_step_post_hook(std::function<void(Optimizer&)> hook) {
  COHORT_CHECK(hook != nullptr, where("register_step_post_hook"), "the hook is empty");
  post_hooks_.emplace_back(next_hook_id_, std::move(hook));
  return next_hook_id_++;
}

void Optimizer::remove_step_pre_hook(int id) { erase_hook(pre_hooks_, id); }
void Optimizer::remove_step_post_hook(int id) { erase_hook(post_hooks_, id); }

void Optimizer::step() {
  for (auto& [id, hook] : pre_hooks_) hook(*this);
  // Check every parameter first, so that a bad one throws before any parameter has changed.
  std::size_t flat = 0;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    for (std::size_t i = 0; i < groups_[g].slots.size(); ++i, ++flat) {
      const Parameter& p = *groups_[g].slots[i].param;
      if (!p.requires_grad) continue;
      const std::string label = param_label(flat, g, i);
      COHORT_CHECK(p.value.defined(), where("step"), label, " has an undefined value tensor");
      COHORT_CHECK(p.grad.defined(), where("step"), label, " (shape ", p.value.shape().str(),
                   ") has no gradient (grad is an undefined tensor); set requires_grad = false "
                   "to freeze it");
      COHORT_CHECK(p.grad.shape() == p.value.shape(), where("step"), label,
                   ": gradient shape ", p.grad.shape().str(), " differs from value shape ",
                   p.value.shape().str());
      COHORT_CHECK(p.value.dtype() == DType::f32 && p.grad.dtype() == DType::f32, where("step"),
                   label, ": value and gradient must be f32, got ", dtype_name(p.value.dtype()),
                   " and ", dtype_name(p.grad.dtype()));
      COHORT_CHECK(&p.grad.device() == &p.value.device(), where("step"), label,
                   ": value is on ", p.value.device().name(), " but gradient is on ",
                   p.grad.device().name());
      // The parameter was re-pointed (a ZeRO DDP rebound onto a group of another size) and the
      // state made for its old shape was not replaced by a load.
      for (const auto& [name, buf] : groups_[g].slots[i].buffers)
        COHORT_CHECK(buf.numel() == p.value.numel(), where("step"), label, " (shape ",
                     p.value.shape().str(), "): its state '", name, "' is of shape ",
                     buf.shape().str(),
                     ", made for another shape; load the state that goes "
                     "with the parameter (after an elastic change of a ZeRO group: its sharded "
                     "checkpoint)");
    }
  }
  for (std::size_t g = 0; g < groups_.size(); ++g)
    for (Slot& slot : groups_[g].slots)
      if (slot.param->requires_grad) update(g, slot);
  for (auto& [id, hook] : post_hooks_) hook(*this);
}

void Optimizer::zero_grad() {
  for (Group& g : groups_)
    for (const ParameterPtr& p : g.params)
      if (p->grad.defined()) ops::fill(p->grad, 0.0);
}

// ---- state ----

StateDict Optimizer::state() const {
  StateDict out;
  out.kind = name_;
  std::size_t flat = 0;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const std::string prefix = "param_groups." + std::to_string(g) + ".";
    save_hyper(g, prefix, out);
    out.scalars[prefix + "num_params"] = static_cast<double>(groups_[g].params.size());
    if (groups_[g].initial_lr) out.scalars[prefix + "initial_lr"] = *groups_[g].initial_lr;
    for (const Slot& slot : groups_[g].slots) {
      const std::string sp = "state." + std::to_string(flat++) + ".";
      out.scalars[sp + "step"] = static_cast<double>(slot.step);
      for (const auto& [name, t] : slot.buffers) out.tensors[sp + name] = t.clone();
    }
  }
  return out;
}

void Optimizer::load_state(const StateDict& in) {
  const std::string who = where("load_state");
  COHORT_CHECK(in.kind == name_, who, "the state was saved by ",
               in.kind.empty() ? std::string("an unnamed writer") : "'" + in.kind + "'",
               ", not by ", name_);
  std::set<std::string> used;

  // Group structure.
  std::size_t saved_groups = 0;
  while (in.scalars.count("param_groups." + std::to_string(saved_groups) + ".num_params"))
    ++saved_groups;
  COHORT_CHECK(saved_groups == groups_.size(), who, "the state has ", saved_groups,
               " parameter group", saved_groups == 1 ? "" : "s", ", this optimizer has ",
               groups_.size());
  std::vector<std::optional<double>> initial_lrs(groups_.size());
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const std::string prefix = "param_groups." + std::to_string(g) + ".";
    const double n = in.scalars.at(prefix + "num_params");
    used.insert(prefix + "num_params");
    COHORT_CHECK(n == static_cast<double>(groups_[g].params.size()), who, "group ", g,
                 " of the state has ", n, " parameters, this optimizer's has ",
                 groups_[g].params.size());
    const auto it = in.scalars.find(prefix + "initial_lr");
    if (it != in.scalars.end()) {
      COHORT_CHECK(std::isfinite(it->second) && it->second >= 0.0, who, "'", it->first, "' is ",
                   it->second, " (must be finite and >= 0)");
      initial_lrs[g] = it->second;
      used.insert(it->first);
    }
  }

  // Hyper-parameters (validated by the derived class).
  std::function<void()> install_hyper = stage_hyper(in, used);

  // Per-parameter state, staged as new slots.
  const std::vector<std::string>& required = required_buffers();
  const std::vector<std::string>& optional = optional_buffers();
  auto known = [&](const std::string& b) {
    for (const auto& r : required)
      if (r == b) return true;
    for (const auto& o : optional)
      if (o == b) return true;
    return false;
  };
  std::vector<std::vector<Slot>> staged(groups_.size());
  std::size_t flat = 0;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    for (std::size_t i = 0; i < groups_[g].slots.size(); ++i, ++flat) {
      const ParameterPtr& p = groups_[g].slots[i].param;
      const std::string sp = "state." + std::to_string(flat) + ".";
      const std::string label = param_label(flat, g, i);
      Slot slot;
      slot.param = p;
      const auto st = in.scalars.find(sp + "step");
      COHORT_CHECK(st != in.scalars.end(), who, "missing key '", sp, "step' for ", label);
      const double step = st->second;
      COHORT_CHECK(std::isfinite(step) && step >= 0.0 && step == std::floor(step) &&
                       step < 9007199254740992.0,
                   who, "'", sp, "step' is ", step, " (must be a whole number >= 0)");
      slot.step = static_cast<std::int64_t>(step);
      used.insert(sp + "step");
      for (const std::string& b : required)
        COHORT_CHECK(slot.step == 0 || in.tensors.count(sp + b), who, "missing tensor '", sp, b,
                     "' for ", label, ", which has taken ", slot.step, " steps");
      staged[g].push_back(std::move(slot));
    }
  }
  for (const auto& [key, t] : in.tensors) {
    std::size_t index = 0;
    std::string buf;
    COHORT_CHECK(parse_state_key(key, index, buf) && known(buf), who, "unknown tensor key '", key,
                 "' (", name_, " keeps 'state.<i>.<buffer>' with buffers ", [&] {
                   std::string s;
                   for (const auto& r : required) s += (s.empty() ? "" : ", ") + r;
                   for (const auto& o : optional) s += (s.empty() ? "" : ", ") + o;
                   return s.empty() ? std::string("(none)") : s;
                 }(), ")");
    COHORT_CHECK(index < flat, who, "'", key, "' names parameter ", index, ", but this optimizer "
                 "has ", flat, " parameters");
    std::size_t g = 0, i = index;
    while (i >= staged[g].size()) i -= staged[g++].size();
    Slot& slot = staged[g][i];
    const Tensor& value = slot.param->value;
    COHORT_CHECK(t.defined(), who, "'", key, "' is an undefined tensor");
    COHORT_CHECK(t.shape() == value.shape(), who, "'", key, "' has shape ", t.shape().str(), ", ",
                 param_label(index, g, i), " has shape ", value.shape().str());
    COHORT_CHECK(t.dtype() == DType::f32, who, "'", key, "' has dtype ", dtype_name(t.dtype()),
                 ", expected f32");
    slot.buffers[buf] = t.to(value.device());  // a copy, on the parameter's device
    used.insert(key);
  }
  for (const auto& [key, v] : in.scalars)
    COHORT_CHECK(used.count(key), who, "unknown key '", key, "' (value ", v, ")");

  // Everything checked: install.
  install_hyper();
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    groups_[g].slots = std::move(staged[g]);
    groups_[g].initial_lr = initial_lrs[g];
  }
}

// ---- helpers for the derived classes ----

namespace detail {

void read_scalar(const std::string& who, const StateDict& in, const std::string& key, double& v) {
  const auto it = in.scalars.find(key);
  COHORT_CHECK(it != in.scalars.end(), who, ".load_state: missing key '", key, "'");
  v = it->second;
}

void read_scalar(const std::string& who, const StateDict& in, const std::string& key, bool& v) {
  const auto it = in.scalars.find(key);
  COHORT_CHECK(it != in.scalars.end(), who, ".load_state: missing key '", key, "'");
  COHORT_CHECK(it->second == 0.0 || it->second == 1.0, who, ".load_state: '", key, "' is ",
               it->second, ", expected 0 or 1 (a flag)");
  v = it->second != 0.0;
}

}  // namespace detail
}  // namespace cohort::optim
