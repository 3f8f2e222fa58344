// The alpha-beta cost model (cohort/collectives/cost_model.hpp): each algorithm's prediction
// against the formula worked by hand, the pick, the fit of a link from two message sizes, and the
// calibration file (round trip, and every bad input named with the file and line).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "cohort/collectives/cost_model.hpp"
#include "cohort/core/error.hpp"

using namespace cohort::comm;

namespace {
CostModel model() {
  CostModel m;
  m.intra = {1e-6, 1e-9};   // 1 us, 1 GB/s
  m.inter = {10e-6, 1e-8};  // 10 us, 100 MB/s
  m.world = 4;
  m.hosts = 2;
  return m;
}
double us(AllreduceAlgo a, double bytes, int p, int h) {
  return predict_allreduce(model(), a, bytes, p, h) * 1e6;
}
}  // namespace

TEST_SUITE("cost_model") {
  TEST_CASE("each algorithm's time, worked by hand: 1 MB on 4 ranks, 2 hosts") {
    using doctest::Approx;
    // ring over inter-host links: 2*3*10 us + 2*3/4 * 1e6 B * 10 ns = 60 us + 15000 us
    CHECK(us(AllreduceAlgo::ring, 1e6, 4, 2) == Approx(15060));
    // recursive doubling, ranks 0 1 on host 0 and 2 3 on host 1: distance 1 on the host (1 us +
    // 1000 us), distance 2 across with both ranks of a host on its link (10 us + 2 * 10000 us)
    CHECK(us(AllreduceAlgo::recursive_doubling, 1e6, 4, 2) == Approx(21011));
    // Rabenseifner: halving at distance 2 across (10 us + 2 * 0.5e6 B * 10 ns) then distance 1
    // on the host (1 us + 0.25e6 B * 1 ns), and the all-gather back the same: 2 * 10261 us
    CHECK(us(AllreduceAlgo::rabenseifner, 1e6, 4, 2) == Approx(20522));
    // hierarchical: host ring of 2 (2 us + 1000 us), leaders' doubling of 2 (10 us + 10000 us,
    // cheaper than their ring's 20 us + 10000 us), broadcast back (1 us + 1000 us)
    CHECK(us(AllreduceAlgo::hierarchical, 1e6, 4, 2) == Approx(12013));
    CHECK(pick_allreduce(model(), 1e6, 4, 2) == AllreduceAlgo::hierarchical);
  }

  TEST_CASE("one host: flat algorithms on the intra-host link; hierarchical never picked") {
    using doctest::Approx;
    CHECK(us(AllreduceAlgo::ring, 1e6, 4, 1) == Approx(2 * 3 * 1 + 1.5 * 1000));
    CHECK(us(AllreduceAlgo::recursive_doubling, 8, 4, 1) == Approx(2 * (1 + 0.008)));
    CHECK(pick_allreduce(model(), 8, 4, 1) == AllreduceAlgo::recursive_doubling);
    CHECK(pick_allreduce(model(), 1e8, 4, 1) != AllreduceAlgo::hierarchical);
    // One rank per host: nothing to do on a host, so hierarchical is not offered either.
    CHECK(pick_allreduce(model(), 1e6, 4, 4) != AllreduceAlgo::hierarchical);
    CHECK(us(AllreduceAlgo::ring, 1e6, 1, 1) == 0);
  }

  TEST_CASE("the per-op software time: once per all-reduce, flat and hierarchical apart") {
    using doctest::Approx;
    CostModel m = model();
    m.flat_op_s = 500e-6;
    m.hier_op_s = 20e-6;
    auto t = [&](AllreduceAlgo a, double bytes) {
      return predict_allreduce(m, a, bytes, 4, 2) * 1e6;
    };
    // The hand-worked times of the first case, each plus its own term.
    CHECK(t(AllreduceAlgo::ring, 1e6) == Approx(15060 + 500));
    CHECK(t(AllreduceAlgo::recursive_doubling, 1e6) == Approx(21011 + 500));
    CHECK(t(AllreduceAlgo::rabenseifner, 1e6) == Approx(20522 + 500));
    CHECK(t(AllreduceAlgo::hierarchical, 1e6) == Approx(12013 + 20));
    // 8 B: doubling's two steps (1.008 us on the host, 10.16 us across: 11.168 us) beat hier's
    // stages (host ring 2.008 us, leaders' doubling 10.08 us, back 1.008 us: 13.096 us) without
    // the terms; a flat op 480 us dearer than hier's turns the pick.
    CHECK(us(AllreduceAlgo::recursive_doubling, 8, 4, 2) == Approx(11.168));
    CHECK(us(AllreduceAlgo::hierarchical, 8, 4, 2) == Approx(13.096));
    CHECK(pick_allreduce(model(), 8, 4, 2) == AllreduceAlgo::recursive_doubling);
    CHECK(pick_allreduce(m, 8, 4, 2) == AllreduceAlgo::hierarchical);
    // One rank: nothing to do, no op time either.
    CHECK(predict_allreduce(m, AllreduceAlgo::ring, 1e6, 1, 1) == 0);
  }

  TEST_CASE("small messages favour few steps, large ones few bytes") {
    CHECK(pick_allreduce(model(), 8, 16, 16) == AllreduceAlgo::recursive_doubling);
    CHECK(pick_allreduce(model(), 64e6, 16, 16) != AllreduceAlgo::recursive_doubling);
  }

  TEST_CASE("a job that is not one is refused") {
    CHECK_THROWS_WITH_AS(predict_allreduce(model(), AllreduceAlgo::ring, 8, 2, 3),
                         doctest::Contains("2 ranks on 3 hosts"), cohort::Error);
    CHECK_THROWS_AS(predict_allreduce(model(), AllreduceAlgo::ring, 8, 0, 1), cohort::Error);
  }

  TEST_CASE("a link from two message sizes") {
    using doctest::Approx;
    const LinkCost l = fit_link(8, 2e-6 + 8 * 4e-10, 4 << 20, 2e-6 + (4 << 20) * 4e-10);
    CHECK(l.alpha_s == Approx(2e-6));
    CHECK(l.beta_s == Approx(4e-10));
    CHECK_THROWS_AS(fit_link(8, 1e-6, 8, 1e-6), cohort::Error);
    CHECK_THROWS_AS(fit_link(8, 0, 4096, 1e-6), cohort::Error);
  }

  TEST_CASE("the file: round trip, and bad input named with the file and line") {
    using doctest::Approx;
    CostModel m = model();
    m.note = "2026-11-26, backend hier, 4 ranks on 2 host(s)";
    const CostModel back = parse_cost_model(format_cost_model(m), "m.txt");
    CHECK(back.world == 4);
    CHECK(back.hosts == 2);
    CHECK(back.intra.alpha_s == Approx(1e-6));
    CHECK(back.inter.beta_s == Approx(1e-8));
    CHECK(back.note == m.note);
    CHECK(back.flat_op_s == 0);
    m.flat_op_s = 812.5e-6;
    m.hier_op_s = 11.25e-6;
    const CostModel with_op = parse_cost_model(format_cost_model(m), "m.txt");
    CHECK(with_op.flat_op_s == Approx(812.5e-6));
    CHECK(with_op.hier_op_s == Approx(11.25e-6));

    const std::string ok =
        "world 4\nhosts 2\nintra_alpha_us 1\nintra_beta_ns_per_byte 1\n"
        "inter_alpha_us 10\ninter_beta_ns_per_byte 10\n";
    // A file from before the op terms existed loads, with both 0.
    const CostModel old = parse_cost_model(ok, "m.txt");
    CHECK(old.flat_op_s == 0);
    CHECK(old.hier_op_s == 0);
    CHECK_THROWS_WITH_AS(parse_cost_model(ok + "hier_op_us -2\n", "m.txt"),
                         doctest::Contains("line 7: hier_op_us must be a finite number >= 0"),
                         cohort::Error);
    CHECK_THROWS_WITH_AS(parse_cost_model(ok + "speed 3\n", "m.txt"),
                         doctest::Contains("m.txt, line 7: unknown key 'speed'"), cohort::Error);
    CHECK_THROWS_WITH_AS(parse_cost_model("world four\n", "m.txt"),
                         doctest::Contains("m.txt, line 1: expected 'key number'"), cohort::Error);
    CHECK_THROWS_WITH_AS(parse_cost_model("world 4\nhosts -1\n", "m.txt"),
                         doctest::Contains("line 2: hosts must be a finite number >= 0"),
                         cohort::Error);
    CHECK_THROWS_WITH_AS(parse_cost_model("world 4\nhosts 2\n", "m.txt"),
                         doctest::Contains("no 'intra_alpha_us' (recalibrate"), cohort::Error);
    CHECK_THROWS_WITH_AS(parse_cost_model("world 2\nhosts 3\nintra_alpha_us 1\n"
                                          "intra_beta_ns_per_byte 1\ninter_alpha_us 1\n"
                                          "inter_beta_ns_per_byte 1\n",
                                          "m.txt"),
                         doctest::Contains("world 2 on 3 hosts is not a job"), cohort::Error);
    CHECK_THROWS_WITH_AS(load_cost_model("/nonexistent/m.txt"),
                         doctest::Contains("/nonexistent/m.txt: cannot read it"), cohort::Error);
  }

  TEST_CASE("a model calibrated on another job size is refused, naming both") {
    const std::string path = "/tmp/cohort_cost_model_test_" + std::to_string(::getpid()) + ".txt";
    save_cost_model(path, model());
    const CostModel m = load_cost_model(path);
    std::remove(path.c_str());
    check_cost_model_fits(m, path, 4, 2);
    CHECK_THROWS_WITH_AS(check_cost_model_fits(m, path, 8, 4),
                         doctest::Contains("calibrated on 4 ranks on 2 host(s); this job has 8 "
                                           "ranks on 4 host(s)"),
                         cohort::Error);
  }
}
