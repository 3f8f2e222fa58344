// The scheduler base (epoch bookkeeping, state save/restore) and the five schedules, each its
// closed form in double (see lr_scheduler.hpp for why the closed form).
#include "cohort/optim/lr_scheduler.hpp"

#include <algorithm>
#include <cmath>

#include "checks.hpp"

namespace cohort::optim {
namespace {

constexpr double kPi = 3.14159265358979323846;  // Python's math.pi

void read_value(const std::string& who, const StateDict& in, const std::string& key, double& v) {
  detail::read_scalar(who, in, key, v);
}
void read_value(const std::string& who, const StateDict& in, const std::string& key, bool& v) {
  detail::read_scalar(who, in, key, v);
}
void read_value(const std::string& who, const StateDict& in, const std::string& key,
                std::int64_t& v) {
  double d = 0.0;
  detail::read_scalar(who, in, key, d);
  COHORT_CHECK(d == std::floor(d) && std::fabs(d) < 9007199254740992.0, who, ".load_state: '",
               key, "' is ", d, ", expected a whole number");
  v = static_cast<std::int64_t>(d);
}
void read_value(const std::string& who, const StateDict& in, const std::string& key,
                AnnealStrategy& v) {
  double d = 0.0;
  detail::read_scalar(who, in, key, d);
  COHORT_CHECK(d == 0.0 || d == 1.0, who, ".load_state: '", key, "' is ", d,
               ", expected 0 (cos) or 1 (linear)");
  v = d == 0.0 ? AnnealStrategy::cos : AnnealStrategy::linear;
}

}  // namespace

// ---- the base ----

Scheduler::Scheduler(Optimizer& optimizer, std::string name)
    : optimizer_(optimizer), name_(std::move(name)) {}

void Scheduler::start() {
  base_lrs_.clear();
  for (std::size_t g = 0; g < optimizer_.num_param_groups(); ++g) {
    if (!optimizer_.initial_lr(g)) optimizer_.set_initial_lr(g, optimizer_.lr(g));
    base_lrs_.push_back(*optimizer_.initial_lr(g));
  }
  step();
}

double Scheduler::last_lr(std::size_t group) const {
  COHORT_CHECK(group < last_lrs_.size(), where("last_lr"), "group ", group, " out of range (",
               last_lrs_.size(), " groups)");
  return last_lrs_[group];
}

void Scheduler::step() {
  const std::size_t groups = base_lrs_.size();
  COHORT_CHECK(optimizer_.num_param_groups() == groups, where("step"), "the optimizer now has ",
               optimizer_.num_param_groups(), " parameter groups, the scheduler was made for ",
               groups);
  const std::int64_t epoch = last_epoch_ + 1;
  check_epoch(epoch);
  std::vector<double> lrs(groups);
  for (std::size_t g = 0; g < groups; ++g) {
    lrs[g] = lr_at(g, epoch);
    COHORT_CHECK(std::isfinite(lrs[g]) && lrs[g] >= 0.0, where("step"), "the schedule gives lr ",
                 lrs[g], " for group ", g, " at epoch ", epoch);
  }
  apply_extra(epoch);
  for (std::size_t g = 0; g < groups; ++g) optimizer_.set_lr(g, lrs[g]);
  last_epoch_ = epoch;
  last_lrs_ = lrs;
}

StateDict Scheduler::state() const {
  StateDict out;
  out.kind = name_;
  out.scalars["last_epoch"] = static_cast<double>(last_epoch_);
  for (std::size_t g = 0; g < base_lrs_.size(); ++g) {
    out.scalars["base_lrs." + std::to_string(g)] = base_lrs_[g];
    out.scalars["last_lrs." + std::to_string(g)] = last_lrs_.at(g);
  }
  save_args(out);
  return out;
}

void Scheduler::load_state(const StateDict& in) {
  const std::string who = where("load_state");
  COHORT_CHECK(in.kind == name_, who, "the state was saved by ",
               in.kind.empty() ? std::string("an unnamed writer") : "'" + in.kind + "'",
               ", not by ", name_);
  COHORT_CHECK(in.tensors.empty(), who, "a scheduler state holds no tensors, this one has ",
               in.tensors.size(), " (first '", in.tensors.empty() ? "" : in.tensors.begin()->first,
               "')");
  std::set<std::string> used;
  std::size_t saved_groups = 0;
  while (in.scalars.count("base_lrs." + std::to_string(saved_groups))) ++saved_groups;
  COHORT_CHECK(saved_groups == base_lrs_.size(), who, "the state has ", saved_groups,
               " parameter groups, this scheduler has ", base_lrs_.size());
  std::int64_t last_epoch = 0;
  read_value(name_, in, "last_epoch", last_epoch);
  used.insert("last_epoch");
  COHORT_CHECK(last_epoch >= 0, who, "'last_epoch' is ", last_epoch, " (must be >= 0)");
  std::vector<double> base(saved_groups), last(saved_groups);
  for (std::size_t g = 0; g < saved_groups; ++g) {
    const std::string b = "base_lrs." + std::to_string(g), l = "last_lrs." + std::to_string(g);
    read_value(name_, in, b, base[g]);
    read_value(name_, in, l, last[g]);
    detail::check_nonnegative(name_ + ".load_state", b.c_str(), base[g]);
    detail::check_nonnegative(name_ + ".load_state", l.c_str(), last[g]);
    used.insert(b);
    used.insert(l);
  }
  std::function<void()> install_args = stage_args(in, used);
  for (const auto& [key, v] : in.scalars)
    COHORT_CHECK(used.count(key), who, "unknown key '", key, "' (value ", v, ")");
  install_args();
  last_epoch_ = last_epoch;
  base_lrs_ = base;
  last_lrs_ = last;
}

namespace detail {

template <class Args>
void SchedulerWith<Args>::save_args(StateDict& out) const {
  Args::fields(args_, [&](const std::string& key, const auto& v) {
    out.scalars[key] = static_cast<double>(v);
  });
}

template <class Args>
std::function<void()> SchedulerWith<Args>::stage_args(const StateDict& in,
                                                      std::set<std::string>& used) {
  Args staged = args_;
  Args::fields(staged, [&](const std::string& key, auto& v) {
    read_value(name(), in, key, v);
    used.insert(key);
  });
  staged.check(name() + ".load_state", optimizer().num_param_groups());
  return [this, staged] { args_ = staged; };
}

template class SchedulerWith<StepLRArgs>;
template class SchedulerWith<ExponentialLRArgs>;
template class SchedulerWith<CosineAnnealingLRArgs>;
template class SchedulerWith<LinearLRArgs>;
template class SchedulerWith<OneCycleLRArgs>;

}  // namespace detail

// ---- StepLR ----

void StepLRArgs::check(const std::string& who, std::size_t) const {
  COHORT_CHECK(step_size >= 1, who, ": invalid step_size = ", step_size, " (must be >= 1)");
  detail::check_nonnegative(who, "gamma", gamma);
}

StepLR::StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma)
    : SchedulerWith(optimizer, "StepLR", StepLRArgs{step_size, gamma}) {
  start();
}

double StepLR::lr_at(std::size_t group, std::int64_t epoch) const {
  return base_lrs().at(group) *
         std::pow(args_.gamma, static_cast<double>(epoch / args_.step_size));
}

// ---- ExponentialLR ----

void ExponentialLRArgs::check(const std::string& who, std::size_t) const {
  detail::check_nonnegative(who, "gamma", gamma);
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma)
    : SchedulerWith(optimizer, "ExponentialLR", ExponentialLRArgs{gamma}) {
  start();
}

double ExponentialLR::lr_at(std::size_t group, std::int64_t epoch) const {
  return base_lrs().at(group) * std::pow(args_.gamma, static_cast<double>(epoch));
}

// ---- CosineAnnealingLR ----

void CosineAnnealingLRArgs::check(const std::string& who, std::size_t) const {
  COHORT_CHECK(T_max >= 1, who, ": invalid T_max = ", T_max, " (must be >= 1)");
  detail::check_nonnegative(who, "eta_min", eta_min);
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, std::int64_t T_max, double eta_min)
    : SchedulerWith(optimizer, "CosineAnnealingLR", CosineAnnealingLRArgs{T_max, eta_min}) {
  start();
}

double CosineAnnealingLR::lr_at(std::size_t group, std::int64_t epoch) const {
  const double base = base_lrs().at(group);
  // torch's _get_closed_form_lr, term for term.
  return args_.eta_min + (base - args_.eta_min) *
                             (1.0 + std::cos(kPi * static_cast<double>(epoch) /
                                             static_cast<double>(args_.T_max))) /
                             2.0;
}

// ---- LinearLR ----

void LinearLRArgs::check(const std::string& who, std::size_t) const {
  COHORT_CHECK(start_factor > 0.0 && start_factor <= 1.0, who, ": invalid start_factor = ",
               start_factor, " (must be in (0, 1])");
  COHORT_CHECK(end_factor >= 0.0 && end_factor <= 1.0, who, ": invalid end_factor = ", end_factor,
               " (must be in [0, 1])");
  COHORT_CHECK(total_iters >= 1, who, ": invalid total_iters = ", total_iters, " (must be >= 1)");
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor,
                   std::int64_t total_iters)
    : SchedulerWith(optimizer, "LinearLR", LinearLRArgs{start_factor, end_factor, total_iters}) {
  start();
}

double LinearLR::lr_at(std::size_t group, std::int64_t epoch) const {
  // torch's _get_closed_form_lr, term for term.
  return base_lrs().at(group) *
         (args_.start_factor + (args_.end_factor - args_.start_factor) *
                                   static_cast<double>(std::min(args_.total_iters, epoch)) /
                                   static_cast<double>(args_.total_iters));
}

// ---- OneCycleLR ----

void OneCycleLRArgs::check(const std::string& who, std::size_t groups) const {
  COHORT_CHECK(max_lr.size() == groups, who, ": expected ", groups, " values for max_lr (one per "
               "parameter group, or one for all), got ", max_lr.size());
  for (std::size_t g = 0; g < max_lr.size(); ++g)
    COHORT_CHECK(std::isfinite(max_lr[g]) && max_lr[g] >= 0.0, who, ": invalid max_lr[", g,
                 "] = ", max_lr[g], " (must be finite and >= 0)");
  COHORT_CHECK(total_steps > 0, who, ": expected a positive total_steps (or positive epochs and "
               "steps_per_epoch), got total_steps = ", total_steps, ", epochs = ", epochs,
               ", steps_per_epoch = ", steps_per_epoch);
  COHORT_CHECK(pct_start >= 0.0 && pct_start <= 1.0, who, ": invalid pct_start = ", pct_start,
               " (must be in [0, 1])");
  COHORT_CHECK(std::isfinite(div_factor) && div_factor > 0.0, who, ": invalid div_factor = ",
               div_factor, " (must be finite and > 0)");
  COHORT_CHECK(std::isfinite(final_div_factor) && final_div_factor > 0.0, who,
               ": invalid final_div_factor = ", final_div_factor, " (must be finite and > 0)");
  if (cycle_momentum) {
    detail::check_nonnegative(who, "base_momentum", base_momentum);
    detail::check_nonnegative(who, "max_momentum", max_momentum);
  }
}

namespace {

OneCycleLRArgs resolve(OneCycleLRArgs a, const Optimizer& optimizer) {
  const std::string who = "OneCycleLR";
  const std::size_t groups = optimizer.num_param_groups();
  COHORT_CHECK(!a.cycle_momentum || optimizer.momentum_kind() != MomentumKind::none, who,
               ": optimizer ", optimizer.name(), " has no momentum or beta1 to cycle; set "
               "cycle_momentum = false");
  if (a.total_steps == 0) {
    COHORT_CHECK(a.epochs > 0 && a.steps_per_epoch > 0, who, ": define either total_steps or "
                 "(epochs and steps_per_epoch), got total_steps = 0, epochs = ", a.epochs,
                 ", steps_per_epoch = ", a.steps_per_epoch);
    a.total_steps = a.epochs * a.steps_per_epoch;
  }
  COHORT_CHECK(!a.max_lr.empty(), who, ": max_lr is required (one value, or one per group)");
  if (a.max_lr.size() == 1 && groups > 1) a.max_lr.assign(groups, a.max_lr[0]);
  return a;
}

struct Phase {
  double end_step;
  int start, end;  // endpoints: 0 initial lr, 1 max lr, 2 min lr (momentum: 0 max, 1 base)
  int start_m, end_m;
};

}  // namespace

OneCycleLR::OneCycleLR(Optimizer& optimizer, const OneCycleLRArgs& args)
    : SchedulerWith(optimizer, "OneCycleLR", resolve(args, optimizer)) {
  // The schedule at step 0 first, so that an empty first phase throws before the optimizer
  // changes.
  for (std::size_t g = 0; g < args_.max_lr.size(); ++g) {
    (void)lr_at(g, 0);
    if (args_.cycle_momentum) (void)momentum_at(g, 0);
  }
  // As torch: momentum (or beta1) starts at max_momentum and every group's initial_lr is
  // max_lr / div_factor, whatever was there before.
  if (args_.cycle_momentum)
    for (std::size_t g = 0; g < args_.max_lr.size(); ++g)
      optimizer.set_momentum(g, args_.max_momentum);
  for (std::size_t g = 0; g < args_.max_lr.size(); ++g)
    optimizer.set_initial_lr(g, args_.max_lr[g] / args_.div_factor);
  start();
}

template <class Pick>
double OneCycleLR::anneal_at(std::int64_t epoch, Pick pick) const {
  const double total = static_cast<double>(args_.total_steps);
  const double pct_total = args_.pct_start * total;
  // torch's _schedule_phases; endpoint codes as in Phase.
  const Phase two[2] = {{pct_total - 1.0, 0, 1, 0, 1}, {total - 1.0, 1, 2, 1, 0}};
  const Phase three[3] = {{pct_total - 1.0, 0, 1, 0, 1},
                          {2.0 * pct_total - 2.0, 1, 0, 1, 0},
                          {total - 1.0, 0, 2, 0, 0}};
  const Phase* phases = args_.three_phase ? three : two;
  const std::size_t count = args_.three_phase ? 3 : 2;
  const double step = static_cast<double>(epoch);
  double start_step = 0.0;
  for (std::size_t i = 0; i < count; ++i) {
    const Phase& ph = phases[i];
    if (step <= ph.end_step || i + 1 == count) {
      COHORT_CHECK(ph.end_step != start_step, "OneCycleLR: phase ", i + 1, " of ", count,
                   " is empty (it ends at step ", ph.end_step, " where it starts; total_steps = ",
                   args_.total_steps, ", pct_start = ", args_.pct_start,
                   "), so step ", epoch, " has no defined value (torch divides by zero here)");
      const double pct = (step - start_step) / (ph.end_step - start_step);
      double a = 0.0, b = 0.0;
      pick(ph, a, b);
      if (args_.anneal_strategy == AnnealStrategy::cos)
        return b + (a - b) / 2.0 * (std::cos(kPi * pct) + 1.0);
      return (b - a) * pct + a;
    }
    start_step = ph.end_step;
  }
  return 0.0;  // not reached: the last phase always matches
}

double OneCycleLR::lr_at(std::size_t group, std::int64_t epoch) const {
  const double initial = args_.max_lr.at(group) / args_.div_factor;
  const double lrs[3] = {initial, args_.max_lr.at(group), initial / args_.final_div_factor};
  const double lr = anneal_at(epoch, [&](const Phase& ph, double& a, double& b) {
    a = lrs[ph.start];
    b = lrs[ph.end];
  });
  // At epoch total_steps, one past the cycle's last step (the usual loop's final
  // scheduler.step() reaches it), torch extrapolates the last phase; a linear anneal can go
  // below zero there, which no optimizer accepts. The one deviation from torch: 0 instead.
  return lr < 0.0 ? 0.0 : lr;
}

double OneCycleLR::momentum_at(std::size_t group, std::int64_t epoch) const {
  COHORT_CHECK(args_.cycle_momentum, "OneCycleLR.momentum_at: cycle_momentum is off");
  COHORT_CHECK(group < args_.max_lr.size(), "OneCycleLR.momentum_at: group ", group,
               " out of range (", args_.max_lr.size(), " groups)");
  const double ms[2] = {args_.max_momentum, args_.base_momentum};
  return anneal_at(epoch, [&](const Phase& ph, double& a, double& b) {
    a = ms[ph.start_m];
    b = ms[ph.end_m];
  });
}

void OneCycleLR::check_epoch(std::int64_t epoch) const {
  COHORT_CHECK(epoch <= args_.total_steps, "OneCycleLR.step: tried to step ", epoch + 1,
               " times; the specified number of total steps is ", args_.total_steps);
}

void OneCycleLR::apply_extra(std::int64_t epoch) {
  if (!args_.cycle_momentum) return;
  Optimizer& opt = optimizer();
  std::vector<double> ms(args_.max_lr.size());
  for (std::size_t g = 0; g < ms.size(); ++g) ms[g] = momentum_at(g, epoch);
  for (std::size_t g = 0; g < ms.size(); ++g) opt.set_momentum(g, ms[g]);
}

// ---- SequentialLR ----

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::unique_ptr<Scheduler>> schedulers,
                           std::vector<std::int64_t> milestones)
    : Scheduler(optimizer, "SequentialLR"),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  COHORT_CHECK(!schedulers_.empty(), "SequentialLR: needs at least one scheduler");
  COHORT_CHECK(milestones_.size() + 1 == schedulers_.size(), "SequentialLR: ", schedulers_.size(),
               " schedulers need ", schedulers_.size() - 1, " milestones, got ",
               milestones_.size());
  for (std::size_t i = 0; i < schedulers_.size(); ++i) {
    COHORT_CHECK(schedulers_[i] != nullptr, "SequentialLR: scheduler ", i, " is null");
    COHORT_CHECK(&schedulers_[i]->optimizer() == &optimizer, "SequentialLR: scheduler ", i, " (",
                 schedulers_[i]->name(), ") steps another optimizer than the SequentialLR's");
  }
  for (std::size_t i = 0; i < milestones_.size(); ++i)
    COHORT_CHECK(milestones_[i] >= 1 && (i == 0 || milestones_[i] > milestones_[i - 1]),
                 "SequentialLR: milestones must be increasing and >= 1; milestone ", i, " is ",
                 milestones_[i], i ? " after " + std::to_string(milestones_[i - 1]) : "");
  start();
}

const Scheduler& SequentialLR::scheduler(std::size_t i) const {
  COHORT_CHECK(i < schedulers_.size(), "SequentialLR.scheduler: index ", i, " out of range (",
               schedulers_.size(), " schedulers)");
  return *schedulers_[i];
}

std::pair<const Scheduler*, std::int64_t> SequentialLR::locate(std::int64_t epoch) const {
  const auto at = std::upper_bound(milestones_.begin(), milestones_.end(), epoch);
  const auto i = static_cast<std::size_t>(at - milestones_.begin());
  return {schedulers_[i].get(), i == 0 ? epoch : epoch - milestones_[i - 1]};
}

double SequentialLR::lr_at(std::size_t group, std::int64_t epoch) const {
  const auto [s, e] = locate(epoch);
  return s->lr_at(group, e);
}

void SequentialLR::check_epoch(std::int64_t epoch) const {
  const auto [s, e] = locate(epoch);
  s->check_epoch(e);
}

void SequentialLR::apply_extra(std::int64_t epoch) {
  const auto [s, e] = locate(epoch);
  const_cast<Scheduler*>(s)->apply_extra(e);
}

void SequentialLR::save_args(StateDict& out) const {
  for (std::size_t i = 0; i < milestones_.size(); ++i)
    out.scalars["milestones." + std::to_string(i)] = static_cast<double>(milestones_[i]);
  for (std::size_t i = 0; i < schedulers_.size(); ++i)
    for (const auto& [k, v] : schedulers_[i]->state().scalars)
      out.scalars["schedulers." + std::to_string(i) + "." + k] = v;
}

std::function<void()> SequentialLR::stage_args(const StateDict& in, std::set<std::string>& used) {
  const std::string who = where("load_state");
  std::vector<std::int64_t> milestones(milestones_.size());
  for (std::size_t i = 0; i < milestones.size(); ++i) {
    const std::string key = "milestones." + std::to_string(i);
    read_value(name(), in, key, milestones[i]);
    used.insert(key);
    COHORT_CHECK(milestones[i] >= 1 && (i == 0 || milestones[i] > milestones[i - 1]), who,
                 "'", key, "' is ", milestones[i], " (milestones must be increasing and >= 1)");
  }
  COHORT_CHECK(!in.scalars.count("milestones." + std::to_string(milestones.size())), who,
               "the state has more than ", milestones.size(), " milestones");
  std::vector<StateDict> parts(schedulers_.size());
  for (std::size_t i = 0; i < schedulers_.size(); ++i) {
    const std::string prefix = "schedulers." + std::to_string(i) + ".";
    parts[i].kind = schedulers_[i]->name();
    for (const auto& [k, v] : in.scalars)
      if (k.rfind(prefix, 0) == 0) {
        parts[i].scalars[k.substr(prefix.size())] = v;
        used.insert(k);
      }
  }
  // Each part checks its own keys by loading them; the parts are then put back, so that nothing
  // changes until the whole state has been checked (the returned function installs it).
  std::vector<StateDict> saved;
  try {
    for (std::size_t i = 0; i < schedulers_.size(); ++i) {
      saved.push_back(schedulers_[i]->state());
      with_context("SequentialLR.load_state: scheduler " + std::to_string(i),
                   [&] { schedulers_[i]->load_state(parts[i]); });
    }
  } catch (...) {
    for (std::size_t i = 0; i < saved.size(); ++i) schedulers_[i]->load_state(saved[i]);
    throw;
  }
  for (std::size_t i = 0; i < saved.size(); ++i) schedulers_[i]->load_state(saved[i]);
  return [this, milestones, parts] {
    milestones_ = milestones;
    for (std::size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->load_state(parts[i]);
  };
}

}  // namespace cohort::optim
