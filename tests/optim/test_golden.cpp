// Golden vectors from PyTorch 1.13 (tests/golden/optim.json, written by
// tests/golden/make_optim_golden.py): every optimizer case, 5 steps, parameters compared after
// each step; every scheduler case, the whole lr (and OneCycleLR momentum) sequence. Runs on the
// host and, when one is usable, on the first GPU.
//
// Tolerance for parameters: |got - want| <= 1e-5 * |want| + 1e-6. The absolute floor 1e-6 (about
// 8 float ulps at 1.0) only matters for values within 0.1 of zero, where float rounding of the
// ~10 operations of a step makes the relative error of an almost-cancelled value meaningless.
// Learning rates are doubles on both sides: 1e-12 relative, 1e-15 absolute.
#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "cohort/optim.hpp"
#include "common/golden.hpp"
#include "optim/optim_test_util.hpp"

namespace {

using cohort::Device;
using cohort::ParameterPtr;
using cohort::Tensor;
using cohort::testing::GoldenFile;
using nlohmann::json;
namespace optim = cohort::optim;

constexpr double kRel = 1e-5;
constexpr double kAbs = 1e-6;

const GoldenFile& golden() {
  static const GoldenFile file(cohort::testing::golden_dir() + "/optim.json");
  return file;
}

json raw_config(const std::string& c) { return golden().config(c); }

// A golden tensor's values as the doubles Python wrote (GoldenFile rounds them to f32): the
// schedules are computed in double on both sides.
std::vector<double> golden_doubles(const std::string& c, const std::string& name) {
  static const json all = [] {
    std::ifstream in(cohort::testing::golden_dir() + "/optim.json");
    json j;
    in >> j;
    return j;
  }();
  return all["cases"][c]["tensors"][name]["data"].get<std::vector<double>>();
}

// Options from torch keyword arguments (JSON), starting from `o`: the field names of each options
// struct are torch's ("betas.0" is betas[0]); a keyword the struct lacks fails the test.
template <class Options>
Options options_from(const json& j, Options o) {
  std::vector<std::string> used;
  Options::fields(o, [&](const std::string& key, auto& v) {
    const auto dot = key.find('.');
    const std::string base = key.substr(0, dot);
    if (!j.contains(base)) return;
    used.push_back(base);
    const json& node = dot == std::string::npos ? j[base] : j[base][std::stoi(key.substr(dot + 1))];
    v = node.get<std::decay_t<decltype(v)>>();
  });
  for (auto it = j.begin(); it != j.end(); ++it)
    CHECK_MESSAGE(std::find(used.begin(), used.end(), it.key()) != used.end(),
                  "torch keyword '" << it.key() << "' has no field in the options struct");
  return o;
}

template <class Opt, class Options>
std::unique_ptr<optim::Optimizer> build(const json& cfg, const std::vector<ParameterPtr>& ps,
                                        Options defaults) {
  const Options base = options_from(cfg["options"], defaults);
  const json& groups = cfg["groups"];
  if (groups.empty()) return std::make_unique<Opt>(ps, base);
  REQUIRE(groups.size() == ps.size());
  auto opt = std::make_unique<Opt>(std::vector<ParameterPtr>{ps[0]}, options_from(groups[0], base));
  for (std::size_t i = 1; i < ps.size(); ++i)
    opt->add_param_group({ps[i]}, options_from(groups[i], base));
  return opt;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const json& cfg,
                                                 const std::vector<ParameterPtr>& ps) {
  const std::string name = cfg["optimizer"];
  if (name == "SGD") return build<optim::SGD>(cfg, ps, optim::SGDOptions{});
  if (name == "Adam") return build<optim::Adam>(cfg, ps, optim::AdamOptions{});
  if (name == "AdamW") return build<optim::AdamW>(cfg, ps, optim::AdamWOptions{});
  if (name == "Adadelta") return build<optim::Adadelta>(cfg, ps, optim::AdadeltaOptions{});
  if (name == "RMSprop") return build<optim::RMSprop>(cfg, ps, optim::RMSpropOptions{});
  FAIL("unknown optimizer '" << name << "' in the golden file");
  return nullptr;
}

struct Worst {
  double abs = 0.0, rel = 0.0;  // rel over |want| >= 1e-3
};

void check_close(const std::vector<float>& got, const cohort::testing::GoldenTensor& want,
                 const std::string& what, Worst& worst) {
  REQUIRE(got.size() == want.data.size());
  int bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want.data[i], err = std::fabs(g - w);
    worst.abs = std::max(worst.abs, err);
    if (std::fabs(w) >= 1e-3) worst.rel = std::max(worst.rel, err / std::fabs(w));
    if (!(err <= kRel * std::fabs(w) + kAbs) && bad++ < 3)
      FAIL_CHECK(what << "[" << i << "]: got " << g << ", torch " << w << " (error " << err << ")");
  }
}

std::vector<ParameterPtr> golden_params(const std::string& c, Device& dev) {
  std::vector<ParameterPtr> ps;
  for (int j = 0; golden().has_tensor(c, "param" + std::to_string(j) + ".init"); ++j)
    ps.push_back(
        cohort::make_parameter(golden().load(c, "param" + std::to_string(j) + ".init", dev)));
  return ps;
}

// Feeds the case's gradients, calls `step` after each, compares the parameters with torch's.
template <class Step>
void run_steps(const std::string& c, const std::vector<ParameterPtr>& ps, int steps, Step step,
               Worst& worst) {
  for (int s = 1; s <= steps; ++s) {
    for (std::size_t j = 0; j < ps.size(); ++j)
      ps[j]->grad.copy_from(golden().load(
          c, "grad" + std::to_string(j) + ".step" + std::to_string(s), cohort::host_device()));
    step();
    for (std::size_t j = 0; j < ps.size(); ++j) {
      const std::string name = "param" + std::to_string(j) + ".step" + std::to_string(s);
      check_close(ps[j]->value.to_vector<float>(), golden().tensor(c, name), c + " " + name,
                  worst);
    }
  }
}

std::vector<std::string> cases_of_kind(const std::string& kind) {
  std::vector<std::string> out;
  for (const std::string& c : golden().cases())
    if (raw_config(c)["kind"] == kind) out.push_back(c);
  return out;
}

std::unique_ptr<optim::Scheduler> make_scheduler(const json& cfg, optim::Optimizer& opt) {
  const std::string name = cfg["scheduler"];
  const json& a = cfg["args"];
  if (name == "StepLR") return std::make_unique<optim::StepLR>(opt, a["step_size"], a["gamma"]);
  if (name == "ExponentialLR") return std::make_unique<optim::ExponentialLR>(opt, a["gamma"]);
  if (name == "CosineAnnealingLR")
    return std::make_unique<optim::CosineAnnealingLR>(opt, a["T_max"], a["eta_min"]);
  if (name == "LinearLR")
    return std::make_unique<optim::LinearLR>(opt, a["start_factor"], a["end_factor"],
                                             a["total_iters"]);
  if (name == "OneCycleLR") {
    optim::OneCycleLRArgs o;
    o.max_lr = {a["max_lr"].get<double>()};
    o.total_steps = a["total_steps"];
    if (a.contains("pct_start")) o.pct_start = a["pct_start"];
    if (a.contains("anneal_strategy"))
      o.anneal_strategy = a["anneal_strategy"] == "linear" ? optim::AnnealStrategy::linear
                                                            : optim::AnnealStrategy::cos;
    if (a.contains("cycle_momentum")) o.cycle_momentum = a["cycle_momentum"];
    if (a.contains("base_momentum")) o.base_momentum = a["base_momentum"];
    if (a.contains("max_momentum")) o.max_momentum = a["max_momentum"];
    if (a.contains("div_factor")) o.div_factor = a["div_factor"];
    if (a.contains("final_div_factor")) o.final_div_factor = a["final_div_factor"];
    if (a.contains("three_phase")) o.three_phase = a["three_phase"];
    return std::make_unique<optim::OneCycleLR>(opt, o);
  }
  FAIL("unknown scheduler '" << name << "' in the golden file");
  return nullptr;
}

}  // namespace

TEST_SUITE("golden") {

TEST_CASE("optimizers match PyTorch 1.13 over 5 steps") {
  const auto cases = cases_of_kind("optimizer");
  REQUIRE(cases.size() >= 20);
  for (Device* dev : optim_test::test_devices()) {
    Worst worst;
    for (const std::string& c : cases) {
      CAPTURE(c);
      CAPTURE(dev->name());
      const json cfg = raw_config(c);
      const auto ps = golden_params(c, *dev);
      REQUIRE(ps.size() == 2);
      auto opt = make_optimizer(cfg, ps);
      CHECK(opt->name() == cfg["optimizer"].get<std::string>());
      run_steps(c, ps, cfg["steps"], [&] { opt->step(); }, worst);
      for (std::size_t g = 0; g < opt->num_param_groups(); ++g)
        for (std::size_t i = 0; i < opt->params(g).size(); ++i)
          CHECK(opt->step_count(g, i) == cfg["steps"].get<int>());
    }
    MESSAGE(dev->name() << ": " << cases.size() << " optimizer cases; largest error "
                        << worst.abs << " absolute, " << worst.rel
                        << " relative (values >= 1e-3)");
  }
}

TEST_CASE("OneCycleLR driving SGD's lr and momentum matches PyTorch") {
  const std::string c = "onecycle_sgd_params";
  const json cfg = raw_config(c);
  for (Device* dev : optim_test::test_devices()) {
    CAPTURE(dev->name());
    Worst worst;
    const auto ps = golden_params(c, *dev);
    optim::SGD opt(ps, options_from(cfg["options"], optim::SGDOptions{}));
    CHECK(opt.momentum() == 0.0);
    auto sched = make_scheduler(cfg, opt);
    CHECK(opt.momentum() == doctest::Approx(0.95));  // torch: cycle_momentum sets it at once
    run_steps(c, ps, cfg["steps"], [&] {
      opt.step();
      sched->step();
    }, worst);
  }
}

TEST_CASE("schedulers match PyTorch 1.13's lr sequences") {
  const auto cases = cases_of_kind("scheduler");
  REQUIRE(cases.size() >= 12);
  for (const std::string& c : cases) {
    CAPTURE(c);
    const json cfg = raw_config(c);
    auto p = cohort::make_parameter(Tensor::zeros({1}, cohort::DType::f32, cohort::host_device()));
    std::unique_ptr<optim::Optimizer> opt;
    if (cfg["optimizer"] == "SGD") {
      optim::SGDOptions o;
      o.lr = cfg["base_lr"];
      o.momentum = cfg["momentum"];
      opt = std::make_unique<optim::SGD>(std::vector<ParameterPtr>{p}, o);
    } else {
      optim::AdamOptions o;
      o.lr = cfg["base_lr"];
      opt = std::make_unique<optim::Adam>(std::vector<ParameterPtr>{p}, o);
    }
    auto sched = make_scheduler(cfg, *opt);
    CHECK(sched->name() == cfg["scheduler"].get<std::string>());
    const int steps = cfg["steps"];
    const std::vector<double> want_lr = golden_doubles(c, "lr");
    const bool has_momentum = golden().has_tensor(c, "momentum");
    const std::vector<double> want_m = has_momentum ? golden_doubles(c, "momentum")
                                                    : std::vector<double>{};
    REQUIRE(static_cast<int>(want_lr.size()) == steps + 1);
    for (int e = 0; e <= steps; ++e) {
      if (e > 0) {
        opt->step();
        sched->step();
      }
      CAPTURE(e);
      CHECK(sched->last_epoch() == e);
      CHECK(opt->lr() == sched->last_lr());
      // OneCycleLR's last step may extrapolate to a negative lr in torch; cohort sets 0 there.
      const double want = std::max(want_lr[e], 0.0);
      CHECK(std::fabs(opt->lr() - want) <= 1e-12 * std::fabs(want) + 1e-15);
      if (has_momentum)
        CHECK(std::fabs(opt->momentum() - want_m[e]) <= 1e-12 * std::fabs(want_m[e]) + 1e-15);
    }
  }
}

}  // TEST_SUITE
