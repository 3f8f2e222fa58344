// A cost model of the collectives (issue 32): each link class (intra-host, inter-host) has a time
// per message t(bytes), measured by `cohort-bench --calibrate FILE` (intra-host: two ranks of one
// host; inter-host: two ranks of different hosts, one pair per two hosts, and again with every
// rank of the host crossing at once; each an exchange, both ways at once, over the job's
// communicator, every pair of the pass at once) and kept in a small text file the job can reuse.
// predict_allreduce() gives each algorithm's time for (bytes, ranks, hosts); pick_allreduce() the
// cheapest. cohort-bench --model FILE prints the predictions next to the measured rows.
//
// t(bytes) is alpha + beta bytes (Hockney), or, where the file holds the link measured at several
// sizes, those points joined by straight lines, the last segment's slope beyond them (PLogP:
// Kielmann, Bal and Verstoep, "Fast measurement of LogP parameters for message passing
// platforms", IPDPS 2000, measure the gap per message size for the same reason: TCP's
// small-message handling and a shaper's burst bucket bend the line).
//
// The formulas (S bytes, p ranks, h hosts, l = ceil(p / h) ranks per host, placed host by host;
// a ring crosses hosts whenever h > 1, so its links are the inter-host class then, else
// intra-host; one flow per host crosses in a ring's step and among hier's leaders, t_inter; l
// flows of S bytes each in a flat algorithm's step across hosts, t_shared(l S), the host's bytes):
//   ring                 2 (p - 1) t(S / p)
//   recursive_doubling   one step per distance d = 1, 2, 4, ... < p: t_intra(S) when d < l, else
//                        t_shared(l S) (the host's l ranks all cross at once and share its link)
//   rabenseifner         reduce-scatter by recursive halving (distance p/2, p/4, ..., S/2, S/4,
//                        ... bytes), all-gather the same steps back; each step as above
//   hierarchical         ring on the host's l ranks over intra-host links, the cheaper of ring and
//                        recursive doubling among the h leaders over inter-host links, and a
//                        broadcast back on the host (t_intra(S)); hier's stages
// With t = alpha + beta bytes they are the textbook ones (Thakur, Rabenseifner and Gropp,
// "Optimization of collective communication operations in MPICH", IJHPCA 2005). To each a per-op
// software time is added, once per all-reduce, each algorithm its own (LogP's o; NCCL's tuning
// model has the same term per algorithm, its baseLatencies). --calibrate (-op) measures it as the
// algorithm's all-reduce of one float per rank less the formula's, negative where the links'
// exchanges, timed alone, cost more than the same steps inside the algorithm: either way the
// prediction at that size is the time measured, and the formula gives how it grows with the size. A
// flat algorithm never timed takes flat_op_s, else the first flat one timed (doubling, ring,
// Rabenseifner), else 0; a borrowed term at least 0 (a negative one anchors only its own
// algorithm's formula). Nothing here models a reduction's compute or several ranks sharing cores:
// docs/COLLECTIVES.md says where that shows.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <vector>

namespace cohort::comm {

struct LinkPoint {
  double bytes = 0;
  double s = 0;  // seconds of one message (or exchange) of `bytes`
};

struct LinkCost {
  double alpha_s = 0;  // start-up, seconds
  double beta_s = 0;   // seconds per byte
  // Measured times by increasing size (at least two, else unused): t(bytes) joins them.
  std::vector<LinkPoint> points;
  // Seconds of one message of `bytes`: below the first point, the first point's time; between
  // two, on the line joining them; past the last, beta per byte more (beta joins the first and
  // the last point: the rate at the largest size measured, steadier than the last segment).
  double time(double bytes) const;
};

enum class AllreduceAlgo { ring, recursive_doubling, rabenseifner, hierarchical };
const char* allreduce_algo_name(AllreduceAlgo a);
std::vector<AllreduceAlgo> allreduce_algos();
// The short names of COHORT_UCX_ALLREDUCE and the file's keys: ring, rd, rab, hier.
const char* allreduce_algo_key(AllreduceAlgo a);

struct CostModel {
  LinkCost intra, inter;
  // Several flows across hosts at once (every rank of a host crossing), by the host's bytes: the
  // steps of flat algorithms across hosts. Without points, inter stands for it (t_inter(l S)).
  LinkCost inter_shared;
  // Per-op term of each algorithm (seconds; NaN: not measured, see op_s()).
  static constexpr double kUnmeasured = std::numeric_limits<double>::quiet_NaN();
  double ring_op_s = kUnmeasured, rd_op_s = kUnmeasured, rab_op_s = kUnmeasured;
  double flat_op_s = kUnmeasured;  // any flat algorithm not timed by itself (files before those)
  double hier_op_s = kUnmeasured;  // the hierarchical stages together
  int world = 0;  // the job it was calibrated on
  int hosts = 0;
  std::string note;  // where and when it was calibrated (one line)

  // The per-op term predict_allreduce adds for `a`: its own; for a flat one not timed, flat_op_s,
  // else the first flat one timed (doubling, ring, Rabenseifner), else 0; borrowed, at least 0.
  double op_s(AllreduceAlgo a) const;
  // `a`'s own term (NaN where not measured), no fallback.
  double& own_op_s(AllreduceAlgo a);
  double own_op_s(AllreduceAlgo a) const;
};

// Predicted seconds of one all-reduce of `bytes` over `ranks` ranks on `hosts` hosts (at least 0).
// Throws
// cohort::Error for ranks < 1, hosts < 1 or hosts > ranks.
double predict_allreduce(const CostModel& m, AllreduceAlgo a, double bytes, int ranks, int hosts);
// The algorithm with the least predicted time: ring, recursive doubling or Rabenseifner (flat:
// ucx, COHORT_UCX_ALLREDUCE forces one), hierarchical (hier; only where hosts > 1 and some host
// holds several ranks).
AllreduceAlgo pick_allreduce(const CostModel& m, double bytes, int ranks, int hosts);

// alpha and beta from two timings of one message: `small_s` for `small_bytes`, `large_s` for
// `large_bytes` (times of one message, or of one exchange both ways at once). Throws unless
// large_bytes > small_bytes and the times are positive.
LinkCost fit_link(double small_bytes, double small_s, double large_bytes, double large_s);

// Measured points of one link (bytes increasing): their times made non-decreasing (adjacent
// violators pooled to their mean), alpha and beta joining the first and the last, and the points
// kept for LinkCost::time. Throws naming the link unless there are at least two points, sizes
// increasing, times positive.
LinkCost link_from_points(std::vector<LinkPoint> points, const std::string& what);

// The file: "# note" lines, then "key value" lines: world, hosts, intra_alpha_us,
// intra_beta_ns_per_byte, inter_alpha_us, inter_beta_ns_per_byte; optionally flat_op_us,
// ring_op_us, rd_op_us, rab_op_us and hier_op_us (absent: see CostModel::op_s; files written before
// they existed still load), and "intra_us_at BYTES US", "inter_us_at BYTES US" and
// "inter_shared_us_at BYTES US" lines, the measured points of each link, by increasing size
// (absent: alpha and beta alone).
std::string format_cost_model(const CostModel& m);
// Parses the file's text; errors name `origin` (the path), the line and the key.
CostModel parse_cost_model(const std::string& text, const std::string& origin);
CostModel load_cost_model(const std::string& path);
void save_cost_model(const std::string& path, const CostModel& m);
// Throws naming `path` and both sizes when `m` was calibrated on another job size; the fix is
// recalibrating (cohort-bench --calibrate).
void check_cost_model_fits(const CostModel& m, const std::string& path, int world, int hosts);

}  // namespace cohort::comm
