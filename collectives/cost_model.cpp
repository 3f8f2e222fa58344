// The cost model (see cost_model.hpp): a link's time per message, each algorithm's formula, the
// fit of one link class from its measured sizes, and the calibration file.
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
  return 2.0 * (p - 1) * l.time(bytes / p);
}
double doubling(const LinkCost& l, double bytes, int p) {
  if (p <= 1) return 0;
  return log2_ceil(p) * l.time(bytes);
}

// One step of a flat algorithm between ranks `distance` apart, `bytes` each way, ranks placed
// host by host (`local` per host, as launchers place them): within a host when the distance is
// less than `local`, else across hosts with all `local` ranks of the host crossing at once, so
// together they move `local` times the bytes over the host's link.
double flat_step(const CostModel& m, int hosts, int local, double distance, double bytes) {
  if (hosts > 1 && distance >= local)
    return (m.inter_shared.points.size() >= 2 ? m.inter_shared : m.inter).time(local * bytes);
  return m.intra.time(bytes);
}

}  // namespace

double LinkCost::time(double bytes) const {
  if (points.size() < 2) return alpha_s + bytes * beta_s;
  if (bytes <= points.front().bytes) return points.front().s;
  std::size_t i = 1;
  while (i + 1 < points.size() && bytes > points[i].bytes) ++i;
  const LinkPoint& a = points[i - 1];
  const LinkPoint& b = points[i];
  if (bytes > b.bytes) return b.s + (bytes - b.bytes) * beta_s;
  return a.s + (bytes - a.bytes) * (b.s - a.s) / (b.bytes - a.bytes);
}

const char* allreduce_algo_key(AllreduceAlgo a) {
  switch (a) {
    case AllreduceAlgo::ring:
      return "ring";
    case AllreduceAlgo::recursive_doubling:
      return "rd";
    case AllreduceAlgo::rabenseifner:
      return "rab";
    case AllreduceAlgo::hierarchical:
      return "hier";
  }
  return "?";
}

namespace {
template <class Model>
auto& own_op_of(Model& m, AllreduceAlgo a) {
  switch (a) {
    case AllreduceAlgo::ring:
      return m.ring_op_s;
    case AllreduceAlgo::recursive_doubling:
      return m.rd_op_s;
    case AllreduceAlgo::rabenseifner:
      return m.rab_op_s;
    case AllreduceAlgo::hierarchical:
      break;
  }
  return m.hier_op_s;
}
}  // namespace

double& CostModel::own_op_s(AllreduceAlgo a) { return own_op_of(*this, a); }
double CostModel::own_op_s(AllreduceAlgo a) const { return own_op_of(*this, a); }

double CostModel::op_s(AllreduceAlgo a) const {
  const double own = own_op_s(a);
  if (!std::isnan(own)) return own;
  // Borrowed terms only add: a negative one anchors its own algorithm's formula, not another's.
  if (a == AllreduceAlgo::hierarchical) return 0;
  if (!std::isnan(flat_op_s)) return std::max(0.0, flat_op_s);
  for (const double t : {rd_op_s, ring_op_s, rab_op_s})
    if (!std::isnan(t)) return std::max(0.0, t);
  return 0;
}

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
  double t = m.op_s(a);
  switch (a) {
    case AllreduceAlgo::ring:
      t += ring(flat, bytes, p);
      break;
    case AllreduceAlgo::recursive_doubling:
      for (int k = 0; k < steps; ++k) t += flat_step(m, hosts, local, std::ldexp(1.0, k), bytes);
      break;
    case AllreduceAlgo::rabenseifner:
      // Reduce-scatter by recursive halving (distance and bytes halve each step), then the
      // all-gather by recursive doubling: the same steps in reverse.
      for (int k = 1; k <= steps; ++k)
        t += 2 * flat_step(m, hosts, local, std::ldexp(p, -k), std::ldexp(bytes, -k));
      break;
    case AllreduceAlgo::hierarchical: {
      const double host = ring(m.intra, bytes, local);
      const double leaders =
          hosts > 1 ? std::min(ring(m.inter, bytes, hosts), doubling(m.inter, bytes, hosts)) : 0;
      const double back = hosts > 1 && local > 1 ? m.intra.time(bytes) : 0;
      t += host + leaders + back;
      break;
    }
  }
  // A negative op term (see cost_model.hpp) never makes a time below 0.
  return std::max(0.0, t);
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

LinkCost link_from_points(std::vector<LinkPoint> points, const std::string& what) {
  COHORT_CHECK(points.size() >= 2, "cost model: the ", what, " link has ", points.size(),
               " measured size(s); it needs at least 2");
  for (std::size_t i = 0; i < points.size(); ++i) {
    COHORT_CHECK(points[i].s > 0 && std::isfinite(points[i].s), "cost model: the ", what,
                 " link's time at ", points[i].bytes, " B is ", points[i].s, " s (need > 0)");
    COHORT_CHECK(i == 0 || points[i].bytes > points[i - 1].bytes, "cost model: the ", what,
                 " link's sizes must increase: ", points[i].bytes, " B after ", points[i - 1].bytes,
                 " B");
  }
  // A larger message never takes less time: the times are made non-decreasing by pooling
  // adjacent violators (isotonic regression: each run of points out of order gets the run's
  // mean). Points measured on shared cores are noisy enough to invert, and an inverted pair turns
  // into a negative per-byte cost between them.
  std::vector<std::pair<double, std::size_t>> blocks;  // (mean time, points in the block)
  for (const LinkPoint& p : points) {
    blocks.push_back({p.s, 1});
    while (blocks.size() >= 2 && blocks[blocks.size() - 2].first > blocks.back().first) {
      const auto [t2, n2] = blocks.back();
      blocks.pop_back();
      auto& [t1, n1] = blocks.back();
      t1 = (t1 * static_cast<double>(n1) + t2 * static_cast<double>(n2)) /
           static_cast<double>(n1 + n2);
      n1 += n2;
    }
  }
  std::size_t i = 0;
  for (const auto& [t, n] : blocks)
    for (std::size_t k = 0; k < n; ++k) points[i++].s = t;
  LinkCost l =
      fit_link(points.front().bytes, points.front().s, points.back().bytes, points.back().s);
  l.points = std::move(points);
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
                "inter_beta_ns_per_byte %.6f\n",
                m.intra.alpha_s * 1e6, m.intra.beta_s * 1e9, m.inter.alpha_s * 1e6,
                m.inter.beta_s * 1e9);
  o << buf;
  // Only the terms measured: an absent one keeps its fallback (CostModel::op_s) on reading.
  const auto op = [&](const char* key, double s) {
    if (std::isnan(s)) return;
    std::snprintf(buf, sizeof buf, "%s %.4f\n", key, s * 1e6);
    o << buf;
  };
  op("flat_op_us", m.flat_op_s);
  op("ring_op_us", m.ring_op_s);
  op("rd_op_us", m.rd_op_s);
  op("rab_op_us", m.rab_op_s);
  op("hier_op_us", m.hier_op_s);
  for (const auto& [key, link] : {std::pair<const char*, const LinkCost*>{"intra_us_at", &m.intra},
                                  {"inter_us_at", &m.inter},
                                  {"inter_shared_us_at", &m.inter_shared}})
    if (link->points.size() >= 2)
      for (const LinkPoint& p : link->points) {
        std::snprintf(buf, sizeof buf, "%s %.0f %.4f\n", key, p.bytes, p.s * 1e6);
        o << buf;
      }
  return o.str();
}

CostModel parse_cost_model(const std::string& text, const std::string& origin) {
  static const char* const kKeys[] = {"world",          "hosts",
                                      "intra_alpha_us", "intra_beta_ns_per_byte",
                                      "inter_alpha_us", "inter_beta_ns_per_byte"};
  static const char* const kOptional[] = {"flat_op_us", "ring_op_us", "rd_op_us", "rab_op_us",
                                          "hier_op_us"};
  std::map<std::string, double> v;
  std::map<std::string, std::vector<LinkPoint>> points;  // intra_us_at, inter_us_at
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
    double x = 0, y = 0;
    COHORT_CHECK(static_cast<bool>(f >> key >> x), "cost model ", origin, ", line ", n,
                 ": expected 'key number', got '", line, "'");
    if (key == "intra_us_at" || key == "inter_us_at" || key == "inter_shared_us_at") {
      COHORT_CHECK(static_cast<bool>(f >> y) && !(f >> rest), "cost model ", origin, ", line ", n,
                   ": expected '", key, " BYTES US', got '", line, "'");
      auto& got = points[key];
      COHORT_CHECK(std::isfinite(x) && x > 0 && std::isfinite(y) && y > 0, "cost model ", origin,
                   ", line ", n, ": ", key, " needs a size and a time > 0, got '", line, "'");
      COHORT_CHECK(got.empty() || x > got.back().bytes, "cost model ", origin, ", line ", n, ": ",
                   key, " ", x, " after ", got.back().bytes, " (sizes must increase)");
      got.push_back({x, y * 1e-6});
      continue;
    }
    COHORT_CHECK(!(f >> rest), "cost model ", origin, ", line ", n,
                 ": expected 'key number', got '", line, "'");
    bool known = false, op = false;
    for (const char* k : kKeys) known = known || key == k;
    for (const char* k : kOptional) op = op || key == k;
    COHORT_CHECK(known || op, "cost model ", origin, ", line ", n, ": unknown key '", key, "'");
    // An op term may be negative (cost_model.hpp); everything else is a size or a time.
    COHORT_CHECK(std::isfinite(x) && (op || x >= 0), "cost model ", origin, ", line ", n, ": ", key,
                 op ? " must be a finite number" : " must be a finite number >= 0", ", got ", x);
    v[key] = x;
  }
  for (const char* k : kKeys)
    COHORT_CHECK(v.count(k), "cost model ", origin, ": no '", k,
                 "' (recalibrate: cohort-bench --calibrate ", origin, ")");
  m.world = static_cast<int>(v["world"]);
  m.hosts = static_cast<int>(v["hosts"]);
  COHORT_CHECK(m.world >= 1 && m.hosts >= 1 && m.hosts <= m.world, "cost model ", origin,
               ": world ", m.world, " on ", m.hosts, " hosts is not a job");
  m.intra = {v["intra_alpha_us"] * 1e-6, v["intra_beta_ns_per_byte"] * 1e-9, {}};
  m.inter = {v["inter_alpha_us"] * 1e-6, v["inter_beta_ns_per_byte"] * 1e-9, {}};
  for (auto [key, link] : {std::pair<const char*, LinkCost*>{"intra_us_at", &m.intra},
                           {"inter_us_at", &m.inter},
                           {"inter_shared_us_at", &m.inter_shared}}) {
    auto& got = points[key];
    COHORT_CHECK(got.size() != 1, "cost model ", origin, ": one ", key,
                 " line; a link's measured sizes need at least two (recalibrate: cohort-bench "
                 "--calibrate ",
                 origin, ")");
    // The points pooled as written (a file this wrote is already non-decreasing); alpha and beta
    // as the keys say (re-fitting from the rounded points would move their last digits), but
    // inter_shared, which has no keys, joins its ends.
    if (got.empty()) continue;
    const LinkCost keys = *link;
    *link = link_from_points(std::move(got), key);
    if (link != &m.inter_shared) link->alpha_s = keys.alpha_s, link->beta_s = keys.beta_s;
  }
  const auto op = [&](const char* key) {
    return v.count(key) ? v[key] * 1e-6 : CostModel::kUnmeasured;
  };
  m.flat_op_s = op("flat_op_us");
  m.ring_op_s = op("ring_op_us");
  m.rd_op_s = op("rd_op_us");
  m.rab_op_s = op("rab_op_us");
  m.hier_op_s = op("hier_op_us");
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
