// The cost model (cohort/collectives/cost_model.hpp): each algorithm's prediction against the
// formula worked by hand, the pick, a link from two message sizes and from measured points, each
// algorithm's op term and its fallbacks, and the calibration file (round trip, and every bad
// input named with the file and line).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "cohort/collectives/cost_model.hpp"
#include "cohort/core/error.hpp"

using namespace cohort::comm;

namespace {
CostModel model() {
  CostModel m;
  m.intra = {1e-6, 1e-9, {}};   // 1 us, 1 GB/s
  m.inter = {10e-6, 1e-8, {}};  // 10 us, 100 MB/s
  m.world = 4;
  m.hosts = 2;
  return m;
}
// Relative closeness: doctest's Approx adds 1.0 to its scale, so against times in seconds
// (1e-6) any two are "equal".
doctest::Approx rel(double v, double eps = 1e-9) {
  return doctest::Approx(v).scale(0).epsilon(eps);
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

  TEST_CASE("each algorithm's own op term, and the fallbacks of those not timed") {
    using doctest::Approx;
    CostModel m = model();
    auto op = [&](AllreduceAlgo a) { return m.op_s(a) * 1e6; };
    // Nothing measured: 0 for all.
    for (AllreduceAlgo a : allreduce_algos()) CHECK(op(a) == 0);
    // Doubling timed alone: every flat algorithm takes its term; hier keeps its own (0).
    m.rd_op_s = 40e-6;
    CHECK(op(AllreduceAlgo::ring) == Approx(40));
    CHECK(op(AllreduceAlgo::rabenseifner) == Approx(40));
    CHECK(op(AllreduceAlgo::hierarchical) == 0);
    // A file's flat_op_us comes before another algorithm's term; each algorithm's own before both.
    m.flat_op_s = 70e-6;
    m.ring_op_s = 25e-6;
    CHECK(op(AllreduceAlgo::ring) == Approx(25));
    CHECK(op(AllreduceAlgo::recursive_doubling) == Approx(40));
    CHECK(op(AllreduceAlgo::rabenseifner) == Approx(70));
    m.hier_op_s = 5e-6;
    CHECK(op(AllreduceAlgo::hierarchical) == Approx(5));
    // A negative term is its own algorithm's; borrowed, it counts as 0.
    CostModel n = model();
    n.rd_op_s = -30e-6;
    CHECK(n.op_s(AllreduceAlgo::recursive_doubling) * 1e6 == Approx(-30));
    CHECK(n.op_s(AllreduceAlgo::ring) == 0);
    n.flat_op_s = -1e-6;
    CHECK(n.op_s(AllreduceAlgo::rabenseifner) == 0);
    // Added once per all-reduce: ring's 8 B over 4 ranks on 2 hosts is 6 steps of 10.02 us + 25.
    CHECK(predict_allreduce(m, AllreduceAlgo::ring, 8, 4, 2) * 1e6 == Approx(6 * 10.02 + 25));
    // A negative term (a ring measured at 30 us against its formula's 60.12) anchors the
    // prediction at 8 B on the measured time; the formula adds the growth; never below 0.
    m.ring_op_s = -30.12e-6;
    CHECK(predict_allreduce(m, AllreduceAlgo::ring, 8, 4, 2) * 1e6 == Approx(30));
    CHECK(predict_allreduce(m, AllreduceAlgo::ring, 1e6, 4, 2) * 1e6 == Approx(15060 - 30.12));
    m.ring_op_s = -1;
    CHECK(predict_allreduce(m, AllreduceAlgo::ring, 8, 4, 2) == 0);
  }

  TEST_CASE("a link from measured points: joined by straight lines, the ends' rate beyond") {
    using doctest::Approx;
    // 10 us up to a 16 KiB bucket, then 10 ns per byte past it (a shaper's burst).
    const LinkCost l = link_from_points(
        {{8, 10e-6}, {16384, 12e-6}, {65536, 12e-6 + 49152 * 1e-8}, {1 << 20, 12e-6 + 1032192e-8}},
        "inter-host");
    CHECK(l.time(1) * 1e6 == Approx(10));  // below the first point: its time
    CHECK(l.time(8) * 1e6 == Approx(10));
    CHECK(l.time(8196) * 1e6 == Approx(11));  // half way to 16 KiB
    CHECK(l.time(32768) * 1e6 == Approx(12 + 16384 * 1e-2));
    // alpha and beta join the ends; past the last point, beta per byte more (the rate at the
    // largest size measured, not the last segment's, which two noisy points make).
    const double beta = (l.points.back().s - 10e-6) / ((1 << 20) - 8);
    CHECK(l.beta_s == rel(beta));
    CHECK(l.time(2 << 20) == rel(l.points.back().s + (1 << 20) * beta));
    // Times out of order (noise) are pooled to their mean: never a negative cost per byte.
    const LinkCost down = link_from_points(
        {{8, 30e-6}, {64, 12e-6}, {512, 15e-6}, {4096, 20e-6}, {8192, 14e-6}}, "x");
    REQUIRE(down.points.size() == 5);
    // 30, 12, 15 pool to 19; 20, 14 to 17, below 19, so all five pool to 18.2.
    for (const LinkPoint& p : down.points) CHECK(p.s == rel(18.2e-6));
    CHECK(down.time(1000) == rel(18.2e-6));
    const LinkCost up = link_from_points({{8, 1e-6}, {64, 3e-6}, {512, 2e-6}, {4096, 9e-6}}, "x");
    CHECK(up.points[1].s == rel(2.5e-6));
    CHECK(up.points[2].s == rel(2.5e-6));
    CHECK(up.points[3].s == rel(9e-6));
    // The formulas use the points: ring's 6 steps of S / 4 over the inter-host link.
    CostModel m = model();
    m.inter = l;
    CHECK(predict_allreduce(m, AllreduceAlgo::ring, 32768, 4, 2) == rel(6 * l.time(8192)));
    // Doubling's cross-host step moves both ranks' bytes over the host's link: t(2 S), from the
    // shared link where it was measured, else from the one-flow link.
    CHECK(predict_allreduce(m, AllreduceAlgo::recursive_doubling, 32768, 4, 2) ==
          rel(m.intra.time(32768) + l.time(65536)));
    m.inter_shared = link_from_points({{16, 50e-6}, {1 << 21, 0.01}}, "inter-host (shared)");
    CHECK(predict_allreduce(m, AllreduceAlgo::recursive_doubling, 32768, 4, 2) ==
          rel(m.intra.time(32768) + m.inter_shared.time(65536)));
    // A ring's step and hier's leaders are one flow per host: the one-flow link still.
    CHECK(predict_allreduce(m, AllreduceAlgo::ring, 32768, 4, 2) == rel(6 * l.time(8192)));
    CHECK_THROWS_WITH_AS(link_from_points({{8, 1e-6}}, "intra-host"),
                         doctest::Contains("the intra-host link has 1 measured size(s)"),
                         cohort::Error);
    CHECK_THROWS_WITH_AS(link_from_points({{64, 1e-6}, {8, 2e-6}}, "inter-host"),
                         doctest::Contains("sizes must increase: 8 B after 64 B"), cohort::Error);
    CHECK_THROWS_WITH_AS(link_from_points({{8, 1e-6}, {64, 0}}, "inter-host"),
                         doctest::Contains("time at 64 B is 0 s"), cohort::Error);
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
    CHECK(l.alpha_s == rel(2e-6));
    CHECK(l.beta_s == rel(4e-10));
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
    CHECK(back.intra.alpha_s == rel(1e-6));
    CHECK(back.inter.beta_s == rel(1e-8, 1e-6));
    CHECK(back.note == m.note);
    CHECK(std::isnan(back.flat_op_s));  // absent: not measured
    CHECK(back.op_s(AllreduceAlgo::ring) == 0);
    CHECK(back.intra.points.empty());
    m.flat_op_s = 812.5e-6;
    m.hier_op_s = 11.25e-6;
    m.rab_op_s = 60e-6;
    m.inter = link_from_points({{16, 30e-6}, {4096, 35.5e-6}, {1 << 22, 0.04}}, "inter-host");
    const std::string text = format_cost_model(m);
    CHECK(text.find("rab_op_us 60.0000\n") != std::string::npos);
    CHECK(text.find("inter_us_at 4096 35.5000\n") != std::string::npos);
    CHECK(text.find("ring_op_us") == std::string::npos);  // not measured: not written
    const CostModel with_op = parse_cost_model(text, "m.txt");
    CHECK(with_op.flat_op_s == rel(812.5e-6));
    CHECK(with_op.hier_op_s == rel(11.25e-6));
    CHECK(with_op.rab_op_s == rel(60e-6));
    CHECK(std::isnan(with_op.ring_op_s));
    REQUIRE(with_op.inter.points.size() == 3);
    CHECK(with_op.inter.points[1].bytes == 4096);
    CHECK(with_op.inter.time(2048) == rel(m.inter.time(2048), 1e-6));
    CHECK(with_op.intra.points.empty());
    CHECK(with_op.inter_shared.points.empty());
    m.inter_shared = link_from_points({{32, 40e-6}, {1 << 23, 0.08}}, "inter-host (shared)");
    const CostModel shared = parse_cost_model(format_cost_model(m), "m.txt");
    REQUIRE(shared.inter_shared.points.size() == 2);
    CHECK(shared.inter_shared.time(1 << 22) == rel(m.inter_shared.time(1 << 22), 1e-6));
    CHECK(shared.inter_shared.beta_s == rel(m.inter_shared.beta_s, 1e-6));

    const std::string ok =
        "world 4\nhosts 2\nintra_alpha_us 1\nintra_beta_ns_per_byte 1\n"
        "inter_alpha_us 10\ninter_beta_ns_per_byte 10\n";
    // A file from before the op terms existed loads, with both 0.
    const CostModel old = parse_cost_model(ok, "m.txt");
    CHECK(old.op_s(AllreduceAlgo::recursive_doubling) == 0);
    CHECK(old.op_s(AllreduceAlgo::hierarchical) == 0);
    CHECK_THROWS_WITH_AS(parse_cost_model(ok + "inter_us_at 64 5\ninter_us_at 8 4\n", "m.txt"),
                         doctest::Contains("line 8: inter_us_at 8 after 64 (sizes must increase)"),
                         cohort::Error);
    CHECK_THROWS_WITH_AS(parse_cost_model(ok + "intra_us_at 64\n", "m.txt"),
                         doctest::Contains("line 7: expected 'intra_us_at BYTES US'"),
                         cohort::Error);
    CHECK_THROWS_WITH_AS(parse_cost_model(ok + "intra_us_at 64 -3\n", "m.txt"),
                         doctest::Contains("line 7: intra_us_at needs a size and a time > 0"),
                         cohort::Error);
    CHECK_THROWS_WITH_AS(parse_cost_model(ok + "intra_us_at 64 3\n", "m.txt"),
                         doctest::Contains("m.txt: one intra_us_at line"), cohort::Error);
    // An op term may be negative (the links' exchanges alone cost more than the steps).
    CHECK(parse_cost_model(ok + "hier_op_us -2\n", "m.txt").hier_op_s == rel(-2e-6));
    CHECK_THROWS_WITH_AS(parse_cost_model(ok + "hier_op_us nan\n", "m.txt"),
                         doctest::Contains("line 7: expected 'key number'"), cohort::Error);
    CHECK_THROWS_WITH_AS(parse_cost_model(ok + "inter_alpha_us -2\n", "m.txt"),
                         doctest::Contains("line 7: inter_alpha_us must be a finite number >= 0"),
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
