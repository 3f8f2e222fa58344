// Bad input: every refusal is a cohort::Error that names the class, the argument and the values.
#include <cmath>
#include <limits>

#include "cohort/optim.hpp"
#include "optim/optim_test_util.hpp"

namespace {

using cohort::Device;
using cohort::DType;
using cohort::ParameterPtr;
using cohort::Tensor;
namespace optim = cohort::optim;

std::vector<ParameterPtr> params() { return optim_test::make_params(cohort::host_device(), 1); }

optim::SGDOptions sgd_lr(double lr) {
  optim::SGDOptions o;
  o.lr = lr;
  return o;
}

}  // namespace

TEST_SUITE("errors") {

TEST_CASE("invalid hyper-parameters are refused with the optimizer, argument and value") {
  const auto ps = params();
  CHECK_ERROR_MENTIONS("SGD|lr|-0.1", [&] { optim::SGD(ps, sgd_lr(-0.1)); });
  CHECK_ERROR_MENTIONS("SGD|lr is required", [&] { optim::SGD(ps, optim::SGDOptions{}); });
  CHECK_ERROR_MENTIONS("SGD|lr", [&] { optim::SGD(ps, sgd_lr(std::nan(""))); });
  CHECK_ERROR_MENTIONS("SGD|momentum|-0.5", [&] {
    auto o = sgd_lr(0.1);
    o.momentum = -0.5;
    optim::SGD(ps, o);
  });
  CHECK_ERROR_MENTIONS("SGD|weight_decay|-0.0001", [&] {
    auto o = sgd_lr(0.1);
    o.weight_decay = -1e-4;
    optim::SGD(ps, o);
  });
  CHECK_ERROR_MENTIONS("SGD|Nesterov|dampening = 0.1", [&] {
    auto o = sgd_lr(0.1);
    o.momentum = 0.9;
    o.dampening = 0.1;
    o.nesterov = true;
    optim::SGD(ps, o);
  });
  CHECK_ERROR_MENTIONS("SGD|Nesterov|momentum = 0", [&] {
    auto o = sgd_lr(0.1);
    o.nesterov = true;
    optim::SGD(ps, o);
  });

  CHECK_ERROR_MENTIONS("Adam|betas.0|= 1|[0, 1)", [&] {
    optim::AdamOptions o;
    o.betas = {1.0, 0.999};
    optim::Adam(ps, o);
  });
  CHECK_ERROR_MENTIONS("Adam|betas.1|-0.1", [&] {
    optim::AdamOptions o;
    o.betas = {0.9, -0.1};
    optim::Adam(ps, o);
  });
  CHECK_ERROR_MENTIONS("Adam|eps|-1e-08", [&] {
    optim::AdamOptions o;
    o.eps = -1e-8;
    optim::Adam(ps, o);
  });
  CHECK_ERROR_MENTIONS("AdamW|lr|-1", [&] {
    optim::AdamWOptions o;
    o.lr = -1.0;
    optim::AdamW(ps, o);
  });
  CHECK_ERROR_MENTIONS("Adadelta|rho|1.5", [&] {
    optim::AdadeltaOptions o;
    o.rho = 1.5;
    optim::Adadelta(ps, o);
  });
  CHECK_ERROR_MENTIONS("Adadelta|eps|-1", [&] {
    optim::AdadeltaOptions o;
    o.eps = -1.0;
    optim::Adadelta(ps, o);
  });
  CHECK_ERROR_MENTIONS("RMSprop|alpha|-0.9", [&] {
    optim::RMSpropOptions o;
    o.alpha = -0.9;
    optim::RMSprop(ps, o);
  });
  CHECK_ERROR_MENTIONS("RMSprop|momentum|inf", [&] {
    optim::RMSpropOptions o;
    o.momentum = std::numeric_limits<double>::infinity();
    optim::RMSprop(ps, o);
  });
}

TEST_CASE("later changes are validated too: set_lr, set_momentum, add_param_group") {
  const auto ps = params();
  optim::Adam adam({ps[0]});
  CHECK_ERROR_MENTIONS("Adam|lr|-0.5", [&] { adam.set_lr(-0.5); });
  CHECK_ERROR_MENTIONS("Adam|betas.0|1", [&] { adam.set_momentum(0, 1.0); });
  CHECK_ERROR_MENTIONS("Adam|group 3|1 parameter group", [&] { adam.set_lr(3, 0.1); });
  optim::AdamOptions bad;
  bad.betas = {0.9, 1.0};
  CHECK_ERROR_MENTIONS("Adam|betas.1", [&] { adam.add_param_group({ps[1]}, bad); });
  CHECK(adam.num_param_groups() == 1);
  CHECK(adam.lr() == 1e-3);  // unchanged by the refused calls
  optim::Adadelta adadelta(ps);
  CHECK(adadelta.momentum_kind() == optim::MomentumKind::none);
  CHECK_ERROR_MENTIONS("Adadelta|no momentum", [&] { adadelta.set_momentum(0, 0.9); });
}

TEST_CASE("bad parameter lists") {
  const auto ps = params();
  CHECK_ERROR_MENTIONS("Adam|empty parameter list",
                       [&] { optim::Adam(std::vector<ParameterPtr>{}); });
  CHECK_ERROR_MENTIONS("Adam|parameter 1|null", [&] { optim::Adam({ps[0], nullptr}); });
  CHECK_ERROR_MENTIONS("Adam|parameter 2|twice", [&] { optim::Adam({ps[0], ps[1], ps[0]}); });
  optim::SGD sgd({ps[0]}, sgd_lr(0.1));
  CHECK_ERROR_MENTIONS("SGD|parameter 1 of group 1|another parameter group", [&] {
    sgd.add_param_group({ps[1], ps[0]}, sgd_lr(0.1));
  });
  auto p64 = std::make_shared<cohort::Parameter>();
  p64->value = Tensor::zeros({2}, DType::f64, cohort::host_device());
  CHECK_ERROR_MENTIONS("RMSprop|f64|f32", [&] { optim::RMSprop({p64}); });
  auto undefined = std::make_shared<cohort::Parameter>();
  CHECK_ERROR_MENTIONS("RMSprop|undefined value", [&] { optim::RMSprop({undefined}); });
}

TEST_CASE("bad gradients at step(): nothing changes") {
  auto ps = params();
  optim_test::set_grads(ps, 1, 1);
  const Tensor before0 = ps[0]->value.clone();
  optim::SGDOptions o = sgd_lr(0.1);
  o.momentum = 0.9;
  optim::SGD sgd(ps, o);

  ps[1]->grad = Tensor::zeros({4}, DType::f32, cohort::host_device());  // [5] expected
  CHECK_ERROR_MENTIONS("SGD.step|parameter 1|[4]|[5]", [&] { sgd.step(); });
  CHECK(optim_test::bit_diff(ps[0]->value, before0) == "");  // parameter 0 untouched too
  CHECK(sgd.step_count(0, 0) == 0);

  ps[1]->grad = Tensor();
  CHECK_ERROR_MENTIONS("SGD.step|parameter 1|no gradient", [&] { sgd.step(); });

  ps[1]->grad = Tensor::zeros({5}, DType::f64, cohort::host_device());
  CHECK_ERROR_MENTIONS("SGD.step|parameter 1|f64", [&] { sgd.step(); });

  // A frozen parameter (requires_grad false) is skipped, gradient or not, as torch skips
  // parameters without .grad.
  ps[1]->requires_grad = false;
  const Tensor before1 = ps[1]->value.clone();
  sgd.step();
  CHECK(optim_test::bit_diff(ps[1]->value, before1) == "");
  CHECK(optim_test::bit_diff(ps[0]->value, before0) != "");
  CHECK(sgd.step_count(0, 0) == 1);
  CHECK(sgd.step_count(0, 1) == 0);
  CHECK(sgd.state().tensors.count("state.1.momentum_buffer") == 0);
}

TEST_CASE("state made for another shape (a re-pointed parameter) is refused before any update") {
  // What a ZeRO DDP's rebind onto a group of another size does to the optimizer's pieces.
  auto ps = params();
  optim_test::set_grads(ps, 1, 1);
  optim::SGDOptions o = sgd_lr(0.1);
  o.momentum = 0.9;
  optim::SGD sgd(ps, o);
  sgd.step();  // momentum buffers of [3, 4] and [5]
  ps[1]->value = Tensor::zeros({3}, DType::f32, cohort::host_device());
  ps[1]->grad = Tensor::zeros({3}, DType::f32, cohort::host_device());
  const Tensor before0 = ps[0]->value.clone();
  CHECK_ERROR_MENTIONS("SGD.step|parameter 1|[3]|momentum_buffer|[5]|load the state",
                       [&] { sgd.step(); });
  CHECK(optim_test::bit_diff(ps[0]->value, before0) == "");  // nothing updated
  // Its state loaded for the new shape: it steps again.
  optim::StateDict st = sgd.state();
  st.tensors["state.1.momentum_buffer"] = Tensor::zeros({3}, DType::f32, cohort::host_device());
  sgd.load_state(st);
  sgd.step();
  CHECK(sgd.step_count(0, 1) == 2);
}

TEST_CASE("step hooks: pre-hooks before any update, post-hooks after every one, removable") {
  const auto ps = params();
  for (auto& p : ps) p->grad.copy_from(Tensor::full(p->value.shape(), 1.0, DType::f32, p->value.device()));
  optim::SGD opt(ps, sgd_lr(0.5));
  std::vector<float> seen_pre, seen_post;
  const float before = ps[0]->value.to_vector<float>()[0];
  const int pre = opt.register_step_pre_hook(
      [&](optim::Optimizer&) { seen_pre.push_back(ps[0]->value.to_vector<float>()[0]); });
  const int post = opt.register_step_post_hook(
      [&](optim::Optimizer&) { seen_post.push_back(ps.back()->value.to_vector<float>()[0]); });
  opt.step();
  REQUIRE(seen_pre.size() == 1);
  REQUIRE(seen_post.size() == 1);
  CHECK(seen_pre[0] == before);                                  // nothing updated yet
  CHECK(seen_post[0] == ps.back()->value.to_vector<float>()[0]);  // the last one updated
  opt.remove_step_post_hook(post);
  opt.remove_step_pre_hook(pre);
  opt.remove_step_post_hook(12345);  // unknown ids are ignored
  opt.step();
  CHECK(seen_pre.size() == 1);
  CHECK(seen_post.size() == 1);
  CHECK_ERROR_MENTIONS("SGD.register_step_post_hook: |the hook is empty",
                       [&] { opt.register_step_post_hook(nullptr); });
}

TEST_CASE("zero_grad zeroes every defined gradient") {
  auto ps = params();
  optim_test::set_grads(ps, 2, 1);
  optim::Adam adam(ps);
  adam.zero_grad();
  for (const auto& p : ps)
    for (float v : p->grad.to_vector<float>()) CHECK(v == 0.0f);
}

TEST_CASE("loading a state that does not fit is refused, and changes nothing") {
  auto ps = params();
  optim::AdamOptions o;
  o.amsgrad = true;
  optim::Adam adam(ps, o);
  optim_test::set_grads(ps, 4, 1);
  adam.step();
  const optim::StateDict good = adam.state();

  auto other = params();
  optim::Adam target(other);
  const optim::StateDict target_before = target.state();
  auto unchanged = [&] {
    const optim::StateDict now = target.state();
    CHECK(now.scalars == target_before.scalars);
    CHECK(now.tensors.size() == target_before.tensors.size());
  };

  {  // another optimizer's state
    optim::SGD sgd(params(), sgd_lr(0.1));
    CHECK_ERROR_MENTIONS("Adam.load_state|'SGD'", [&] { target.load_state(sgd.state()); });
  }
  {  // different parameters: one fewer
    optim::Adam small({params()[0]});
    CHECK_ERROR_MENTIONS("Adam.load_state|group 0|1 parameters|2",
                         [&] { target.load_state(small.state()); });
  }
  {  // different parameters: another shape
    optim::StateDict s = good;
    s.tensors["state.1.exp_avg"] = Tensor::zeros({6}, DType::f32, cohort::host_device());
    CHECK_ERROR_MENTIONS("Adam.load_state|state.1.exp_avg|[6]|[5]", [&] { target.load_state(s); });
  }
  {  // a buffer of another optimizer
    optim::StateDict s = good;
    s.tensors["state.0.momentum_buffer"] = good.tensors.at("state.0.exp_avg");
    CHECK_ERROR_MENTIONS("Adam.load_state|unknown tensor key 'state.0.momentum_buffer'|exp_avg",
                         [&] { target.load_state(s); });
  }
  {  // a parameter index out of range
    optim::StateDict s = good;
    s.tensors["state.2.exp_avg"] = good.tensors.at("state.1.exp_avg");
    CHECK_ERROR_MENTIONS("Adam.load_state|state.2.exp_avg|2 parameters",
                         [&] { target.load_state(s); });
  }
  {  // a missing buffer after steps
    optim::StateDict s = good;
    s.tensors.erase("state.0.exp_avg_sq");
    CHECK_ERROR_MENTIONS("Adam.load_state|state.0.exp_avg_sq|1 steps",
                         [&] { target.load_state(s); });
  }
  {  // an invalid hyper-parameter
    optim::StateDict s = good;
    s.scalars["param_groups.0.betas.1"] = 1.5;
    CHECK_ERROR_MENTIONS("Adam|betas.1|1.5", [&] { target.load_state(s); });
  }
  {  // a missing hyper-parameter, an unknown scalar, a bad flag, a bad step
    optim::StateDict s = good;
    s.scalars.erase("param_groups.0.eps");
    CHECK_ERROR_MENTIONS("Adam|missing key|param_groups.0.eps", [&] { target.load_state(s); });
    s = good;
    s.scalars["param_groups.0.momentum"] = 0.9;
    CHECK_ERROR_MENTIONS("Adam.load_state|unknown key 'param_groups.0.momentum'",
                         [&] { target.load_state(s); });
    s = good;
    s.scalars["param_groups.0.amsgrad"] = 0.5;
    CHECK_ERROR_MENTIONS("Adam|amsgrad|0.5", [&] { target.load_state(s); });
    s = good;
    s.scalars["state.1.step"] = -2;
    CHECK_ERROR_MENTIONS("Adam.load_state|state.1.step|-2", [&] { target.load_state(s); });
  }
  {  // a buffer of another dtype
    optim::StateDict s = good;
    s.tensors["state.0.exp_avg"] = Tensor::zeros({3, 4}, DType::f64, cohort::host_device());
    CHECK_ERROR_MENTIONS("Adam.load_state|state.0.exp_avg|f64", [&] { target.load_state(s); });
  }
  unchanged();
  target.load_state(good);  // and the good one loads
  CHECK(target.step_count(0, 1) == 1);
  CHECK(target.options().amsgrad);
}

TEST_CASE("scheduler arguments and stepping limits") {
  auto ps = params();
  optim::SGD sgd(ps, sgd_lr(0.1));
  CHECK_ERROR_MENTIONS("StepLR|step_size = 0", [&] { optim::StepLR(sgd, 0); });
  CHECK_ERROR_MENTIONS("StepLR|gamma|-0.5", [&] { optim::StepLR(sgd, 3, -0.5); });
  CHECK_ERROR_MENTIONS("ExponentialLR|gamma|nan", [&] { optim::ExponentialLR(sgd, std::nan("")); });
  CHECK_ERROR_MENTIONS("CosineAnnealingLR|T_max = 0", [&] { optim::CosineAnnealingLR(sgd, 0); });
  CHECK_ERROR_MENTIONS("CosineAnnealingLR|eta_min|-1",
                       [&] { optim::CosineAnnealingLR(sgd, 10, -1.0); });
  CHECK_ERROR_MENTIONS("LinearLR|start_factor = 0", [&] { optim::LinearLR(sgd, 0.0); });
  CHECK_ERROR_MENTIONS("LinearLR|start_factor = 1.5", [&] { optim::LinearLR(sgd, 1.5); });
  CHECK_ERROR_MENTIONS("LinearLR|end_factor = 2", [&] { optim::LinearLR(sgd, 0.5, 2.0); });
  CHECK_ERROR_MENTIONS("LinearLR|total_iters = 0", [&] { optim::LinearLR(sgd, 0.5, 1.0, 0); });
  CHECK(sgd.lr() == 0.1);                 // refused schedulers did not touch the optimizer
  CHECK(!sgd.initial_lr(0).has_value());

  optim::OneCycleLRArgs a;
  CHECK_ERROR_MENTIONS("OneCycleLR|total_steps", [&] { optim::OneCycleLR(sgd, a); });
  a.total_steps = 10;
  CHECK_ERROR_MENTIONS("OneCycleLR|max_lr", [&] { optim::OneCycleLR(sgd, a); });
  a.max_lr = {0.1, 0.2};
  CHECK_ERROR_MENTIONS("OneCycleLR|1 values for max_lr|got 2", [&] { optim::OneCycleLR(sgd, a); });
  a.max_lr = {0.1};
  a.pct_start = 1.5;
  CHECK_ERROR_MENTIONS("OneCycleLR|pct_start = 1.5", [&] { optim::OneCycleLR(sgd, a); });
  a.pct_start = 0.1;  // phase 1 ends at step 0.1 * 10 - 1 = 0, where it starts
  CHECK_ERROR_MENTIONS("OneCycleLR|phase 1|empty", [&] { optim::OneCycleLR(sgd, a); });
  a.pct_start = 0.3;
  {
    optim::Adadelta adadelta(params());
    CHECK_ERROR_MENTIONS("OneCycleLR|Adadelta|cycle_momentum",
                         [&] { optim::OneCycleLR(adadelta, a); });
    a.cycle_momentum = false;
    optim::OneCycleLR ok(adadelta, a);  // fine without momentum cycling
    CHECK(adadelta.lr() == doctest::Approx(0.1 / 25));
    a.cycle_momentum = true;
  }
  a.epochs = 2;
  a.steps_per_epoch = 3;
  a.total_steps = 0;  // from epochs * steps_per_epoch
  optim::OneCycleLR s(sgd, a);
  CHECK(s.total_steps() == 6);
  for (int i = 0; i < 6; ++i) s.step();  // torch allows total_steps steps after construction
  const double lr = sgd.lr();
  CHECK_ERROR_MENTIONS("OneCycleLR|tried to step 8 times|6", [&] { s.step(); });
  CHECK(s.last_epoch() == 6);  // the refused step changed nothing
  CHECK(sgd.lr() == lr);

  optim::StepLR step(sgd, 2);
  CHECK_ERROR_MENTIONS("StepLR.load_state|'OneCycleLR'", [&] { step.load_state(s.state()); });
  optim::StateDict st = step.state();
  st.scalars["step_size"] = 0;
  CHECK_ERROR_MENTIONS("StepLR|step_size = 0", [&] { step.load_state(st); });
  st = step.state();
  st.scalars["gamma2"] = 0.5;
  CHECK_ERROR_MENTIONS("StepLR.load_state|unknown key 'gamma2'", [&] { step.load_state(st); });
  st = step.state();
  st.scalars["base_lrs.1"] = 0.5;
  CHECK_ERROR_MENTIONS("StepLR.load_state|2 parameter groups|1", [&] { step.load_state(st); });
}

}  // TEST_SUITE
