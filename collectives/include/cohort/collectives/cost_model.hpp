// An alpha-beta cost model of the collectives (issue 32): each link class has a start-up time
// alpha and a time per byte beta, measured by `cohort-bench --calibrate FILE` (intra-host: two
// ranks of one host; inter-host: two ranks of different hosts, each an exchange (both ways at once)
// over the job's communicator) and kept in a small text file the job can reuse. predict_allreduce()
// gives each algorithm's time for (bytes, ranks, hosts); pick_allreduce() the cheapest.
// cohort-bench
// --model FILE prints the predictions next to the measured rows.
//
// The formulas (S bytes, p ranks, h hosts, l = ceil(p / h) ranks per host, placed host by host;
// a ring crosses hosts whenever h > 1, so its links are the inter-host class then, else
// intra-host):
//   ring                 2 (p - 1) alpha + 2 (p - 1) / p  S beta
//   recursive_doubling   one step per distance d = 1, 2, 4, ... < p: alpha + S beta on the
//                        intra-host link when d < l, else alpha + l S beta on the inter-host link
//                        (the host's l ranks all cross at once and share it)
//   rabenseifner         reduce-scatter by recursive halving (distance p/2, p/4, ..., S/2, S/4,
//                        ... bytes), all-gather the same steps back; each step as above
//   hierarchical         ring on the host's l ranks over intra-host links, the cheaper of ring and
//                        recursive doubling among the h leaders over inter-host links, and a
//                        broadcast back on the host (alpha + S beta, intra-host); hier's stages
// They are the textbook ones (Thakur, Rabenseifner and Gropp, "Optimization of collective
// communication operations in MPICH", IJHPCA 2005). To each a per-op software time is added, once
// per all-reduce: flat_op for the flat algorithms, hier_op for the hierarchical stages (LogP's o;
// NCCL's tuning model has the same term, its baseLatencies). --calibrate measures it as an 8-byte
// all-reduce's time less the formula's; 0 where not measured. Nothing here models contention, a
// reduction's compute, or a link shared by several flows: docs/COLLECTIVES.md says where that
// shows.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace cohort::comm {

struct LinkCost {
  double alpha_s = 0;  // start-up, seconds
  double beta_s = 0;   // seconds per byte
  double time(double bytes) const { return alpha_s + bytes * beta_s; }
};

struct CostModel {
  LinkCost intra, inter;
  double flat_op_s = 0;  // per-op software time of a flat all-reduce (ring, doubling, Rabenseifner)
  double hier_op_s = 0;  // per-op software time of the hierarchical stages together
  int world = 0;  // the job it was calibrated on
  int hosts = 0;
  std::string note;  // where and when it was calibrated (one line)
};

enum class AllreduceAlgo { ring, recursive_doubling, rabenseifner, hierarchical };
const char* allreduce_algo_name(AllreduceAlgo a);
std::vector<AllreduceAlgo> allreduce_algos();

// Predicted seconds of one all-reduce of `bytes` over `ranks` ranks on `hosts` hosts. Throws
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

// The file: "# note" lines, then "key value" lines: world, hosts, intra_alpha_us,
// intra_beta_ns_per_byte, inter_alpha_us, inter_beta_ns_per_byte, and optionally flat_op_us and
// hier_op_us (0 when absent: files written before they existed still load).
std::string format_cost_model(const CostModel& m);
// Parses the file's text; errors name `origin` (the path), the line and the key.
CostModel parse_cost_model(const std::string& text, const std::string& origin);
CostModel load_cost_model(const std::string& path);
void save_cost_model(const std::string& path, const CostModel& m);
// Throws naming `path` and both sizes when `m` was calibrated on another job size; the fix is
// recalibrating (cohort-bench --calibrate).
void check_cost_model_fits(const CostModel& m, const std::string& path, int world, int hosts);

}  // namespace cohort::comm
