// The alpha-beta cost model (see cost_model.hpp): each algorithm's formula, the fit of one link
// class from two message sizes, and the calibration file.
#include "cohort/collectives/cost_model.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "cohort/core/error.hpp"

namespace cohort::comm {
namespace {

double log2_ceil(int p) { return std::ceil(std::log2(static_cast<double>(p))); }

double ring(const LinkCost& l, double bytes, int p) {
  if (p <= 1) return 0;
  return 2.0 * (p - 1) * l.alpha_s + 2.0 * (p - 1) / p * bytes * l.beta_s;
}
double doubling(const LinkCost& l, double bytes, int p) {
  if (p <= 1) return 0;
  return log2_ceil(p) * l.time(bytes);
}

// One step of a flat algorithm between ranks `distance` apart, `bytes` each way, ranks placed
// host by host (`local` per host, as launchers place them): within a host when the distance is
// less than `local`, else across hosts with all `local` ranks of the host crossing at once, so
// each gets 1/local of the host's link.
double flat_step(const CostModel& m, int hosts, int local, double distance, double bytes) {
  if (hosts > 1 && distance >= local) return m.inter.alpha_s + local * bytes * m.inter.beta_s;
  return m.intra.time(bytes);
}

}  // namespace

const char* allreduce_algo_name(AllreduceAlgo a) {
  switch (a) {
    case AllreduceAlgo::ring:
      return "ring";
    case AllreduceAlgo::recursive_doubling:
      return "recursive_doubling";
    case AllreduceAlgo::rabenseifner:
      return "rabenseifner";
    case AllreduceAlgo::hierarchical:
      return "hierarchical";
  }
  return "?";
}

std::vector<AllreduceAlgo> allreduce_algos() {
  return {AllreduceAlgo::ring, AllreduceAlgo::recursive_doubling, AllreduceAlgo::rabenseifner,
          AllreduceAlgo::hierarchical};
}

double predict_allreduce(const CostModel& m, AllreduceAlgo a, double bytes, int ranks, int hosts) {
  COHORT_CHECK(ranks >= 1 && hosts >= 1 && hosts <= ranks, "cost model: ", ranks, " ranks on ",
               hosts, " hosts is not a job (need 1 <= hosts <= ranks)");
  const LinkCost& flat = hosts > 1 ? m.inter : m.intra;
  const int p = ranks;
  if (p == 1) return 0;
  const int local = (ranks + hosts - 1) / hosts;
  const int steps = static_cast<int>(log2_ceil(p));
  switch (a) {
    case AllreduceAlgo::ring:
      return m.flat_op_s + ring(flat, bytes, p);
    case AllreduceAlgo::recursive_doubling: {
      double t = m.flat_op_s;
      for (int k = 0; k < steps; ++k) t += flat_step(m, hosts, local, std::ldexp(1.0, k), bytes);
      return t;
    }
    case AllreduceAlgo::rabenseifner: {
      // Reduce-scatter by recursive halving (distance and bytes halve each step), then the
      // all-gather by recursive doubling: the same steps in reverse.
      double t = m.flat_op_s;
      for (int k = 1; k <= steps; ++k)
        t += 2 * flat_step(m, hosts, local, std::ldexp(p, -k), std::ldexp(bytes, -k));
      return t;
    }
    case AllreduceAlgo::hierarchical: {
      const int l = (ranks + hosts - 1) / hosts;
      const double local = ring(m.intra, bytes, l);
      const double leaders =
          hosts > 1 ? std::min(ring(m.inter, bytes, hosts), doubling(m.inter, bytes, hosts)) : 0;
      const double back = hosts > 1 && l > 1 ? m.intra.time(bytes) : 0;
      return m.hier_op_s + local + leaders + back;
    }
  }
  return std::numeric_limits<double>::infinity();
}

AllreduceAlgo pick_allreduce(const CostModel& m, double bytes, int ranks, int hosts) {
  const bool hier_applies = hosts > 1 && ranks > hosts;
  AllreduceAlgo best = AllreduceAlgo::ring;
  double best_t = std::numeric_limits<double>::infinity();
  for (AllreduceAlgo a : allreduce_algos()) {
    if (a == AllreduceAlgo::hierarchical && !hier_applies) continue;
    const double t = predict_allreduce(m, a, bytes, ranks, hosts);
    if (t < best_t) best = a, best_t = t;
  }
  return best;
}

LinkCost fit_link(double small_bytes, double small_s, double large_bytes, double large_s) {
  COHORT_CHECK(large_bytes > small_bytes && small_s > 0 && large_s > 0,
               "cost model: cannot fit a link from ", small_bytes, " B in ", small_s, " s and ",
               large_bytes, " B in ", large_s, " s");
  LinkCost l;
  l.beta_s = std::max(0.0, (large_s - small_s) / (large_bytes - small_bytes));
  l.alpha_s = std::max(0.0, small_s - small_bytes * l.beta_s);
  return l;
}

std::string format_cost_model(const CostModel& m) {
  std::ostringstream o;
  o << "# cohort cost model (cohort-bench --calibrate)";
  if (!m.note.empty()) o << ": " << m.note;
  o << "\nworld " << m.world << "\nhosts " << m.hosts;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "\nintra_alpha_us %.4f\nintra_beta_ns_per_byte %.6f\ninter_alpha_us %.4f\n"
                "inter_beta_ns_per_byte %.6f\nflat_op_us %.4f\nhier_op_us %.4f\n",
                m.intra.alpha_s * 1e6, m.intra.beta_s * 1e9, m.inter.alpha_s * 1e6,
                m.inter.beta_s * 1e9, m.flat_op_s * 1e6, m.hier_op_s * 1e6);
  o << buf;
  return o.str();
}

CostModel parse_cost_model(const std::string& text, const std::string& origin) {
  static const char* const kKeys[] = {"world",          "hosts",
                                      "intra_alpha_us", "intra_beta_ns_per_byte",
                                      "inter_alpha_us", "inter_beta_ns_per_byte"};
  static const char* const kOptional[] = {"flat_op_us", "hier_op_us"};
  std::map<std::string, double> v;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  CostModel m;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (m.note.empty() && line.find(": ") != std::string::npos)
        m.note = line.substr(line.find(": ") + 2);
      continue;
    }
    std::istringstream f(line);
    std::string key, rest;
    double x = 0;
    COHORT_CHECK(static_cast<bool>(f >> key >> x) && !(f >> rest), "cost model ", origin, ", line ",
                 n, ": expected 'key number', got '", line, "'");
    bool known = false;
    for (const char* k : kKeys) known = known || key == k;
    for (const char* k : kOptional) known = known || key == k;
    COHORT_CHECK(known, "cost model ", origin, ", line ", n, ": unknown key '", key, "'");
    COHORT_CHECK(std::isfinite(x) && x >= 0, "cost model ", origin, ", line ", n, ": ", key,
                 " must be a finite number >= 0, got ", x);
    v[key] = x;
  }
  for (const char* k : kKeys)
    COHORT_CHECK(v.count(k), "cost model ", origin, ": no '", k,
                 "' (recalibrate: cohort-bench --calibrate ", origin, ")");
  m.world = static_cast<int>(v["world"]);
  m.hosts = static_cast<int>(v["hosts"]);
  COHORT_CHECK(m.world >= 1 && m.hosts >= 1 && m.hosts <= m.world, "cost model ", origin,
               ": world ", m.world, " on ", m.hosts, " hosts is not a job");
  m.intra = {v["intra_alpha_us"] * 1e-6, v["intra_beta_ns_per_byte"] * 1e-9};
  m.inter = {v["inter_alpha_us"] * 1e-6, v["inter_beta_ns_per_byte"] * 1e-9};
  m.flat_op_s = v.count("flat_op_us") ? v["flat_op_us"] * 1e-6 : 0;
  m.hier_op_s = v.count("hier_op_us") ? v["hier_op_us"] * 1e-6 : 0;
  return m;
}

CostModel load_cost_model(const std::string& path) {
  std::ifstream f(path);
  COHORT_CHECK(f.good(), "cost model ", path,
               ": cannot read it (make one: cohort-bench --calibrate ", path, ")");
  std::stringstream s;
  s << f.rdbuf();
  return parse_cost_model(s.str(), path);
}

void save_cost_model(const std::string& path, const CostModel& m) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    COHORT_CHECK(f.good(), "cost model ", path, ": cannot write '", tmp, "'");
    f << format_cost_model(m);
    COHORT_CHECK(f.good(), "cost model ", path, ": writing '", tmp, "' failed");
  }
  COHORT_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "cost model ", path, ": cannot move '",
               tmp, "' into place");
}

void check_cost_model_fits(const CostModel& m, const std::string& path, int world, int hosts) {
  COHORT_CHECK(m.world == world && m.hosts == hosts, "cost model ", path, " was calibrated on ",
               m.world, " ranks on ", m.hosts, " host(s); this job has ", world, " ranks on ",
               hosts, " host(s) (recalibrate: cohort-bench --calibrate ", path, ")");
}

}  // namespace cohort::comm
