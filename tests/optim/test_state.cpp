// State save/restore: 3 steps, save, 2 more steps; a fresh optimizer (other hyper-parameters,
// parameters copied from step 3) restored from the saved state and stepped twice must give
// bit-identical parameters and state. Same for every scheduler.
#include <functional>
#include <memory>

#include "cohort/core/ops.hpp"
#include "cohort/optim.hpp"
#include "optim/optim_test_util.hpp"

namespace {

using cohort::Device;
using cohort::ParameterPtr;
using cohort::Tensor;
namespace optim = cohort::optim;
using MakeOpt = std::function<std::unique_ptr<optim::Optimizer>(const std::vector<ParameterPtr>&,
                                                                bool variant)>;

// Each maker builds the optimizer under test, or (variant) one of the same class and group
// structure with other hyper-parameters, which load_state must overwrite.
std::vector<std::pair<std::string, MakeOpt>> makers() {
  return {
      {"SGD nesterov",
       [](const std::vector<ParameterPtr>& ps, bool v) -> std::unique_ptr<optim::Optimizer> {
         optim::SGDOptions o;
         o.lr = v ? 0.5 : 0.1;
         o.momentum = v ? 0.0 : 0.9;
         o.nesterov = !v;
         o.weight_decay = 0.01;
         return std::make_unique<optim::SGD>(ps, o);
       }},
      {"SGD dampening, two groups",
       [](const std::vector<ParameterPtr>& ps, bool v) -> std::unique_ptr<optim::Optimizer> {
         optim::SGDOptions a, b;
         a.lr = 0.1;
         a.momentum = 0.8;
         a.dampening = v ? 0.0 : 0.3;
         b.lr = v ? 1.0 : 0.05;
         auto opt = std::make_unique<optim::SGD>(std::vector<ParameterPtr>{ps[0]}, a);
         opt->add_param_group({ps[1]}, b);
         return opt;
       }},
      {"Adam amsgrad",
       [](const std::vector<ParameterPtr>& ps, bool v) -> std::unique_ptr<optim::Optimizer> {
         optim::AdamOptions o;
         o.lr = 0.01;
         o.amsgrad = !v;
         o.betas = {v ? 0.5 : 0.9, 0.99};
         o.weight_decay = 0.01;
         return std::make_unique<optim::Adam>(ps, o);
       }},
      {"AdamW",
       [](const std::vector<ParameterPtr>& ps, bool v) -> std::unique_ptr<optim::Optimizer> {
         optim::AdamWOptions o;
         o.lr = v ? 0.1 : 0.01;
         o.weight_decay = 0.1;
         return std::make_unique<optim::AdamW>(ps, o);
       }},
      {"Adadelta",
       [](const std::vector<ParameterPtr>& ps, bool v) -> std::unique_ptr<optim::Optimizer> {
         optim::AdadeltaOptions o;
         o.rho = v ? 0.5 : 0.9;
         return std::make_unique<optim::Adadelta>(ps, o);
       }},
      {"RMSprop centered momentum",
       [](const std::vector<ParameterPtr>& ps, bool v) -> std::unique_ptr<optim::Optimizer> {
         optim::RMSpropOptions o;
         o.centered = !v;
         o.momentum = v ? 0.0 : 0.9;
         o.weight_decay = 0.01;
         return std::make_unique<optim::RMSprop>(ps, o);
       }},
  };
}

std::vector<ParameterPtr> clone_params(const std::vector<ParameterPtr>& ps) {
  std::vector<ParameterPtr> out;
  for (const auto& p : ps) out.push_back(cohort::make_parameter(p->value.clone()));
  return out;
}

void check_same_state(const optim::StateDict& a, const optim::StateDict& b) {
  CHECK(a.kind == b.kind);
  CHECK(a.scalars == b.scalars);
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (const auto& [key, t] : a.tensors) {
    CAPTURE(key);
    REQUIRE(b.tensors.count(key) == 1);
    CHECK(optim_test::bit_diff(t, b.tensors.at(key)) == "");
  }
}

}  // namespace

TEST_SUITE("state") {

TEST_CASE("optimizer state: restore after 3 steps, 2 more steps are bit-identical") {
  for (Device* dev : optim_test::test_devices()) {
    for (const auto& [label, make] : makers()) {
      CAPTURE(dev->name());
      CAPTURE(label);
      const std::uint64_t seed = 77;
      auto ps = optim_test::make_params(*dev, seed);
      auto opt = make(ps, false);
      for (int s = 1; s <= 3; ++s) {
        optim_test::set_grads(ps, seed, s);
        opt->step();
      }
      const optim::StateDict saved = opt->state();
      CHECK(saved.kind == opt->name());
      CHECK(saved.scalars.at("state.0.step") == 3.0);
      CHECK(!saved.tensors.empty());
      const auto ps3 = clone_params(ps);
      for (int s = 4; s <= 5; ++s) {
        optim_test::set_grads(ps, seed, s);
        opt->step();
      }

      auto fresh = make(ps3, true);
      fresh->load_state(saved);
      check_same_state(fresh->state(), saved);
      for (int s = 4; s <= 5; ++s) {
        optim_test::set_grads(ps3, seed, s);
        fresh->step();
      }
      for (std::size_t j = 0; j < ps.size(); ++j)
        CHECK(optim_test::bit_diff(ps3[j]->value, ps[j]->value) == "");
      check_same_state(fresh->state(), opt->state());
    }
  }
}

TEST_CASE("optimizer state tensors are snapshots, loaded as copies, on the parameter's device") {
  Device& dev = cohort::host_device();
  auto ps = optim_test::make_params(dev, 5);
  optim::Adam adam(ps);
  optim_test::set_grads(ps, 5, 1);
  adam.step();
  optim::StateDict s = adam.state();
  const Tensor before = s.tensors.at("state.0.exp_avg").clone();
  optim_test::set_grads(ps, 5, 2);
  adam.step();
  CHECK(optim_test::bit_diff(s.tensors.at("state.0.exp_avg"), before) == "");
  auto ps2 = clone_params(ps);
  optim::Adam other(ps2);
  other.load_state(s);
  cohort::ops::fill(s.tensors.at("state.0.exp_avg"), 123.0);  // must not reach `other`
  CHECK(optim_test::bit_diff(other.state().tensors.at("state.0.exp_avg"), before) == "");
  CHECK(other.step_count(0, 0) == 1);
  CHECK(other.state().tensors.at("state.1.exp_avg").device().name() == dev.name());
}

TEST_CASE("a fresh optimizer's state round-trips and has a step per parameter") {
  auto ps = optim_test::make_params(cohort::host_device(), 9);
  optim::RMSprop a(ps);
  const optim::StateDict s = a.state();
  CHECK(s.tensors.empty());
  CHECK(s.scalars.at("state.0.step") == 0.0);
  CHECK(s.scalars.at("state.1.step") == 0.0);
  CHECK(s.scalars.at("param_groups.0.lr") == 0.01);
  CHECK(s.scalars.at("param_groups.0.num_params") == 2.0);
  optim::RMSprop b(clone_params(ps));
  b.load_state(s);
  check_same_state(b.state(), s);
}

using MakeSched =
    std::function<std::unique_ptr<optim::Scheduler>(optim::Optimizer&, bool variant)>;

TEST_CASE("scheduler state: restore after 3 steps, later lrs are bit-identical") {
  const std::vector<std::pair<std::string, MakeSched>> scheds = {
      {"StepLR", [](optim::Optimizer& o, bool v) -> std::unique_ptr<optim::Scheduler> {
         return std::make_unique<optim::StepLR>(o, v ? 7 : 2, 0.5);
       }},
      {"ExponentialLR", [](optim::Optimizer& o, bool v) -> std::unique_ptr<optim::Scheduler> {
         return std::make_unique<optim::ExponentialLR>(o, v ? 0.1 : 0.9);
       }},
      {"CosineAnnealingLR",
       [](optim::Optimizer& o, bool v) -> std::unique_ptr<optim::Scheduler> {
         return std::make_unique<optim::CosineAnnealingLR>(o, v ? 50 : 4, 0.001);
       }},
      {"LinearLR", [](optim::Optimizer& o, bool v) -> std::unique_ptr<optim::Scheduler> {
         return std::make_unique<optim::LinearLR>(o, v ? 1.0 : 0.1, 1.0, 6);
       }},
      {"OneCycleLR", [](optim::Optimizer& o, bool v) -> std::unique_ptr<optim::Scheduler> {
         optim::OneCycleLRArgs a;
         a.max_lr = {v ? 3.0 : 0.3};
         a.total_steps = v ? 100 : 10;
         a.three_phase = !v;
         return std::make_unique<optim::OneCycleLR>(o, a);
       }},
  };
  for (const auto& [label, make] : scheds) {
    CAPTURE(label);
    auto ps = optim_test::make_params(cohort::host_device(), 3);
    optim::SGDOptions o;
    o.lr = 0.2;
    o.momentum = 0.9;
    optim::SGD opt(ps, o);
    auto sched = make(opt, false);
    for (int s = 1; s <= 3; ++s) {
      optim_test::set_grads(ps, 3, s);
      opt.step();
      sched->step();
    }
    const optim::StateDict opt_saved = opt.state();
    const optim::StateDict saved = sched->state();
    CHECK(saved.kind == label);
    CHECK(saved.scalars.at("last_epoch") == 3.0);
    std::vector<double> lrs, moms;
    for (int s = 4; s <= 8; ++s) {
      sched->step();
      lrs.push_back(opt.lr());
      moms.push_back(opt.momentum());
    }

    auto ps2 = clone_params(ps);
    optim::SGDOptions o2;
    o2.lr = 0.7;
    o2.momentum = 0.1;
    optim::SGD opt2(ps2, o2);
    auto sched2 = make(opt2, true);
    opt2.load_state(opt_saved);
    sched2->load_state(saved);
    CHECK(sched2->last_epoch() == 3);
    CHECK(sched2->last_lrs() == std::vector<double>{opt_saved.scalars.at("param_groups.0.lr")});
    CHECK(sched2->state().scalars == saved.scalars);
    for (int s = 4; s <= 8; ++s) {
      sched2->step();
      CHECK(opt2.lr() == lrs[static_cast<std::size_t>(s - 4)]);  // bit-identical
      CHECK(opt2.momentum() == moms[static_cast<std::size_t>(s - 4)]);
    }
  }
}

}  // TEST_SUITE
