// SequentialLR: lr sequences against PyTorch 1.13 (tests/golden/recipe.json, written by
// tests/golden/make_recipe_golden.py; PyTorch 2.15 gives the same values), a state round trip in
// the middle of the second part, and its bad inputs.
#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cohort/optim.hpp"
#include "common/golden.hpp"
#include "optim/optim_test_util.hpp"

namespace {

using cohort::ParameterPtr;
using cohort::Tensor;
using nlohmann::json;
namespace optim = cohort::optim;

const json& recipe() {
  static const json all = [] {
    std::ifstream in(cohort::testing::golden_dir() + "/recipe.json");
    json j;
    in >> j;
    return j;
  }();
  return all["cases"];
}

std::unique_ptr<optim::Scheduler> part(optim::Optimizer& opt, const json& p) {
  const std::string name = p[0];
  const json& kw = p[1];
  if (name == "LinearLR")
    return std::make_unique<optim::LinearLR>(opt, kw["start_factor"], kw["end_factor"],
                                             kw["total_iters"]);
  if (name == "CosineAnnealingLR")
    return std::make_unique<optim::CosineAnnealingLR>(opt, kw["T_max"], kw["eta_min"]);
  if (name == "StepLR") return std::make_unique<optim::StepLR>(opt, kw["step_size"], kw["gamma"]);
  if (name == "ExponentialLR") return std::make_unique<optim::ExponentialLR>(opt, kw["gamma"]);
  FAIL("no such part " << name);
  return nullptr;
}

struct Setup {
  ParameterPtr p =
      cohort::make_parameter(Tensor::zeros({1}, cohort::DType::f32, cohort::host_device()));
  std::unique_ptr<optim::SGD> opt;
  std::unique_ptr<optim::SequentialLR> sched;
  explicit Setup(const json& cfg) {
    optim::SGDOptions o;
    o.lr = cfg["base_lr"];
    opt = std::make_unique<optim::SGD>(std::vector<ParameterPtr>{p}, o);
    std::vector<std::unique_ptr<optim::Scheduler>> parts;
    for (const json& pj : cfg["parts"]) parts.push_back(part(*opt, pj));
    sched = std::make_unique<optim::SequentialLR>(*opt, std::move(parts),
                                                  cfg["milestones"].get<std::vector<std::int64_t>>());
  }
};

bool same_lr(double got, double want) { return std::fabs(got - want) <= 1e-12 * want + 1e-15; }

}  // namespace

TEST_SUITE("sequential") {
TEST_CASE("SequentialLR matches PyTorch's lr sequences (warm-up + cosine; three parts)") {
  for (const std::string c : {"sequential.warmup_cosine", "sequential.three_parts"}) {
    CAPTURE(c);
    const json& cfg = recipe()[c]["config"];
    const auto want = recipe()[c]["tensors"]["lr"]["data"].get<std::vector<double>>();
    Setup s(cfg);
    CHECK(s.sched->name() == "SequentialLR");
    for (int e = 0; e <= cfg["steps"].get<int>(); ++e) {
      CAPTURE(e);
      if (e > 0) s.sched->step();
      CHECK(s.sched->last_epoch() == e);
      CHECK(same_lr(s.opt->lr(), want[e]));
      CHECK(same_lr(s.sched->lr_at(0, e), want[e]));
    }
  }
}

TEST_CASE("SequentialLR state: saved in the second part, restored into a fresh one, continues") {
  const json& cfg = recipe()["sequential.three_parts"]["config"];
  const auto want = recipe()["sequential.three_parts"]["tensors"]["lr"]["data"].get<std::vector<double>>();
  Setup a(cfg);
  for (int e = 1; e <= 5; ++e) a.sched->step();
  const optim::StateDict st = a.sched->state();
  CHECK(st.scalars.at("milestones.1") == 8);
  CHECK(st.scalars.count("schedulers.1.step_size") == 1);
  Setup b(cfg);
  b.sched->load_state(st);
  b.opt->load_state(a.opt->state());
  CHECK(b.sched->last_epoch() == 5);
  for (int e = 6; e <= cfg["steps"].get<int>(); ++e) {
    a.sched->step();
    b.sched->step();
    CHECK(b.opt->lr() == a.opt->lr());
    CHECK(same_lr(b.opt->lr(), want[e]));
  }
}

TEST_CASE("SequentialLR refuses bad parts, milestones and states, and changes nothing") {
  const json& cfg = recipe()["sequential.warmup_cosine"]["config"];
  Setup s(cfg);
  auto other = cohort::make_parameter(Tensor::zeros({1}, cohort::DType::f32, cohort::host_device()));
  optim::SGDOptions oo;
  oo.lr = 0.1;
  optim::SGD other_opt({other}, oo);
  auto two = [&](optim::Optimizer& second) {
    std::vector<std::unique_ptr<optim::Scheduler>> v;
    v.push_back(std::make_unique<optim::LinearLR>(*s.opt, 0.5, 1.0, 2));
    v.push_back(std::make_unique<optim::StepLR>(second, 2));
    return v;
  };
  CHECK_ERROR_MENTIONS("2 schedulers need 1 milestones, got 2",
                       [&] { optim::SequentialLR(*s.opt, two(*s.opt), {2, 4}); });
  CHECK_ERROR_MENTIONS("milestones must be increasing and >= 1; milestone 0 is 0",
                       [&] { optim::SequentialLR(*s.opt, two(*s.opt), {0}); });
  CHECK_ERROR_MENTIONS("scheduler 1 (StepLR) steps another optimizer",
                       [&] { optim::SequentialLR(*s.opt, two(other_opt), {2}); });
  CHECK_ERROR_MENTIONS("needs at least one scheduler", [&] {
    optim::SequentialLR(*s.opt, std::vector<std::unique_ptr<optim::Scheduler>>{}, {});
  });
  // A state whose second part has another kind's keys, or other milestones: refused whole.
  for (int e = 0; e < 7; ++e) s.sched->step();
  const double lr = s.opt->lr();
  optim::StateDict bad = s.sched->state();
  bad.scalars.erase("schedulers.1.T_max");
  bad.scalars["schedulers.1.step_size"] = 3;
  CHECK_ERROR_MENTIONS("SequentialLR.load_state: scheduler 1", [&] { s.sched->load_state(bad); });
  optim::StateDict bad2 = s.sched->state();
  bad2.scalars["milestones.1"] = 9;
  CHECK_ERROR_MENTIONS("more than 1 milestones", [&] { s.sched->load_state(bad2); });
  CHECK(s.sched->last_epoch() == 7);
  s.sched->step();
  Setup fresh(cfg);
  for (int e = 0; e < 8; ++e) fresh.sched->step();
  CHECK(s.opt->lr() == fresh.opt->lr());
  CHECK(lr != s.opt->lr());
}
}  // TEST_SUITE
