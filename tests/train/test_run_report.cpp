// RunReport: what cohort-swap reads from every run. Written and read back exactly; hand-written
// files in another key order or with unknown keys read; every missing, mistyped or malformed part
// is an error naming the file and the key; the Trainer's report matches the run it describes
// (steps, last loss, the model's digest, the phase table's per-step total), from the option or
// from COHORT_RUN_REPORT, and an unwritable path fails at construction, before any training.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "../common/testing.hpp"
#include "cohort/data/synthetic.hpp"
#include "cohort/devices.hpp"
#include "cohort/layers.hpp"
#include "cohort/optim.hpp"
#include "cohort/parallel/ddp.hpp"
#include "cohort/train/run_report.hpp"
#include "cohort/train/trainer.hpp"

namespace nn = cohort::nn;
namespace data = cohort::data;
namespace train = cohort::train;
using cohort::testing::error_of;
using cohort::testing::TempDir;

namespace {
cohort::optim::SGDOptions sgd_options() {
  cohort::optim::SGDOptions o;
  o.lr = 0.1;
  return o;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

const char* const kGood =
    R"({"zzz_future": [1, 2], "digest": "00ff", "weights_identical": true, "deterministic": false,
        "final_loss": 2.25, "overlap_ms": 0.5, "comm_ms": 1.5, "step_ms": 12.0,
        "images_per_s": 640.0, "steps": 7, "world_size": 3, "backend": "ucx"})";
}  // namespace

TEST_CASE("run report: written and read back exactly; key order and unknown keys do not matter") {
  TempDir d("cohort_run_report");
  train::RunReport r;
  r.backend = "hier";
  r.world_size = 4;
  r.steps = 123;
  r.images_per_s = 1234.5678901234567;
  r.step_ms = 0.1 + 0.2;  // not a short decimal: must survive the text exactly
  r.comm_ms = 1e-9;
  r.overlap_ms = 3.0;
  r.final_loss = 2.302585092994046;
  r.deterministic = true;
  r.digest = "a1b2c3d4e5f60718";
  r.weights_identical = false;
  train::write_run_report(d.file("r.json"), r);
  const auto b = train::read_run_report(d.file("r.json"));
  CHECK(b.backend == r.backend);
  CHECK(b.world_size == 4);
  CHECK(b.steps == 123);
  CHECK(b.images_per_s == r.images_per_s);
  CHECK(b.step_ms == r.step_ms);
  CHECK(b.comm_ms == r.comm_ms);
  CHECK(b.overlap_ms == 3.0);
  CHECK(b.final_loss == r.final_loss);
  CHECK(b.deterministic);
  CHECK(b.digest == r.digest);
  CHECK_FALSE(b.weights_identical);
  CHECK_FALSE(std::ifstream(d.file("r.json.tmp")).good());  // renamed into place

  write_text(d.file("h.json"), kGood);
  const auto h = train::read_run_report(d.file("h.json"));
  CHECK(h.backend == "ucx");
  CHECK(h.world_size == 3);
  CHECK(h.steps == 7);
  CHECK(h.step_ms == 12.0);
  CHECK(h.comm_ms == 1.5);
  CHECK(h.digest == "00ff");
  CHECK(h.weights_identical);
}

TEST_CASE("run report: bad files and values are errors naming the file and the key") {
  TempDir d("cohort_run_report_bad");
  const std::string p = d.file("bad.json");
  const auto read_err = [&](const std::string& text) {
    write_text(p, text);
    return error_of([&] { train::read_run_report(p); });
  };
  CHECK(error_of([&] { train::read_run_report(d.file("absent.json")); })
            .find("absent.json: cannot open") != std::string::npos);
  CHECK(read_err("").find("bad.json: not JSON") != std::string::npos);
  CHECK(read_err("{\"backend\": \"shm\",").find("bad.json: not JSON") != std::string::npos);
  CHECK(read_err("[1, 2]").find("bad.json: not a JSON object") != std::string::npos);
  const std::string good = kGood;
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const auto at = t.find(from);
    REQUIRE(at != std::string::npos);
    return t.replace(at, from.size(), to);
  };
  CHECK(read_err(with("\"digest\": \"00ff\", ", "")).find("bad.json: no \"digest\"") !=
        std::string::npos);
  CHECK(read_err(with("\"world_size\": 3", "\"world_size\": \"3\""))
            .find("\"world_size\" is not a count: \"3\"") != std::string::npos);
  CHECK(read_err(with("\"steps\": 7", "\"steps\": -7")).find("\"steps\" is not a count: -7") !=
        std::string::npos);
  CHECK(read_err(with("\"world_size\": 3", "\"world_size\": 0"))
            .find("world_size 0 < 1") != std::string::npos);
  CHECK(read_err(with("\"step_ms\": 12.0", "\"step_ms\": null"))
            .find("\"step_ms\" is not a number: null") != std::string::npos);
  CHECK(read_err(with("\"deterministic\": false", "\"deterministic\": \"no\""))
            .find("\"deterministic\" is not true or false") != std::string::npos);
  CHECK(read_err(with("\"backend\": \"ucx\"", "\"backend\": 5"))
            .find("\"backend\" is not a string: 5") != std::string::npos);

  train::RunReport r;
  r.step_ms = std::nan("");
  CHECK(error_of([&] { train::write_run_report(d.file("nan.json"), r); })
            .find("nan.json: a figure is not finite") != std::string::npos);
  CHECK_FALSE(std::ifstream(d.file("nan.json")).good());
  r.step_ms = 1;
  CHECK(error_of([&] { train::write_run_report(d.file("no/such/dir/r.json"), r); })
            .find("cannot write " + d.file("no/such/dir/r.json.tmp")) != std::string::npos);
}

TEST_CASE("the Trainer's report describes its run; COHORT_RUN_REPORT; a bad path fails first") {
  auto& dev = cohort::host_device();
  TempDir d("cohort_run_report_trainer");
  auto ds = std::make_shared<data::SyntheticDataset>(64, cohort::Shape{1, 8, 8}, 10, 5);
  const auto make_net = [&] {
    nn::manual_seed(3);
    return nn::make<nn::Sequential>(std::vector<std::pair<std::string, nn::ModulePtr>>{
        {"flatten", nn::make<nn::Flatten>()},
        {"fc", nn::make<nn::Linear>(64, 10, dev)},
        {"logp", nn::make<nn::LogSoftmax>(1)}});
  };
  data::DataLoaderOptions lo;
  lo.batch_size = 16;
  train::TrainerOptions to;
  to.show_progress = false;
  to.epochs = 2;

  SUBCASE("from TrainerOptions::report_path") {
    auto m = make_net();
    cohort::optim::SGD opt(m->parameters(), sgd_options());
    nn::NLLLoss loss;
    data::DataLoader l(ds, lo, {}, dev);
    to.report_path = d.file("opt.json");
    train::Trainer t(*m, loss, opt, nullptr, to);
    t.fit(l, nullptr);
    const auto r = train::read_run_report(to.report_path);
    CHECK(r.backend == "none");
    CHECK(r.world_size == 1);
    CHECK(r.steps == 8);  // 64 samples / 16, two epochs
    CHECK(r.final_loss == t.loss_history().back());
    CHECK(r.digest == cohort::parallel::weights_digest(*m));
    CHECK(r.images_per_s == t.images_per_s());
    double sum = 0;  // no DDP: every phase is top-level, so the step is their sum
    for (const auto& [phase, ms] : t.timer().mean_ms()) sum += ms;
    CHECK(r.step_ms == doctest::Approx(sum).epsilon(1e-12));
    CHECK(r.step_ms > 0);
    CHECK(r.comm_ms == 0);
    CHECK_FALSE(r.deterministic);
    CHECK(r.weights_identical);
  }
  SUBCASE("from COHORT_RUN_REPORT") {
    const std::string path = d.file("env.json");
    ::setenv("COHORT_RUN_REPORT", path.c_str(), 1);
    auto m = make_net();
    cohort::optim::SGD opt(m->parameters(), sgd_options());
    nn::NLLLoss loss;
    data::DataLoader l(ds, lo, {}, dev);
    train::Trainer t(*m, loss, opt, nullptr, to);
    ::unsetenv("COHORT_RUN_REPORT");
    t.fit(l, nullptr);
    CHECK(train::read_run_report(path).digest == cohort::parallel::weights_digest(*m));
  }
  SUBCASE("an unwritable path: the constructor throws naming it, nothing trains") {
    auto m = make_net();
    const auto before = cohort::parallel::weights_digest(*m);
    cohort::optim::SGD opt(m->parameters(), sgd_options());
    nn::NLLLoss loss;
    to.report_path = d.file("missing/dir/r.json");
    CHECK(error_of([&] { train::Trainer t(*m, loss, opt, nullptr, to); })
              .find("is the directory of " + to.report_path + " there and writable?") !=
          std::string::npos);
    CHECK(cohort::parallel::weights_digest(*m) == before);
  }
}
