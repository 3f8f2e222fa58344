// One parity test over every device and every op (after ggml's test-backend-ops): the table of
// op cases in parity_rows.cpp, each run through the op front ends on every device under test and
// compared with the independent reference (reference/: naive loops in double, no cohort code),
// never with another device. Adding an op adds its rows and its reference; the program fails
// when any op of cohort/backend/op_list.hpp has no row.
//
//   test_parity                 every device of this build, the host included, plus the test
//                               devices: partial support and, where CCCL was found, thrust-host
//                               (the CUDA device's Thrust executor on Thrust's CPP system)
//   test_parity --device cuda   one device; exits 77 (skipped) when it is not available
//   --op NAME[,NAME...]         only the rows of these ops (as ggml's -o)
//   -p REGEX                    only the cases whose name matches (as ggml's -p)
//
// The partial device (partial_device.hpp) supports only part of the table: its denied cases run
// on the host by fallback ("partial>host" below). Prints one line per row and device, a count per
// op of the comparisons that set a device against the reference, and "N passed, N failed, ...".
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cohort/backend/dispatch.hpp"
#include "cohort/devices.hpp"
#include "parity_case.hpp"
#include "partial_device.hpp"
#if COHORT_TEST_THRUST_HOST
#include "thrust_host_device.hpp"
#endif

using namespace cohort;
using parity::Case;
using parity::Row;
using parity::Vec;

namespace {

// max |got - want| / (1 + |want|) over every element of every output; a NaN must meet a NaN.
// Sets *why and returns INFINITY when the outputs do not line up with the reference's.
double difference(const std::vector<Tensor>& got, const std::vector<Vec>& want, std::string* why) {
  if (got.size() != want.size()) {
    *why =
        std::to_string(got.size()) + " outputs, the reference has " + std::to_string(want.size());
    return INFINITY;
  }
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const Vec g = parity::values(got[i]);
    if (g.size() != want[i].size()) {
      *why = "output " + std::to_string(i) + " has " + std::to_string(g.size()) +
             " elements, the reference " + std::to_string(want[i].size());
      return INFINITY;
    }
    for (std::size_t k = 0; k < g.size(); ++k) {
      const double a = g[k], b = want[i][k];
      if (std::isnan(a) || std::isnan(b)) {
        if (std::isnan(a) != std::isnan(b)) {
          *why = "output " + std::to_string(i) + "[" + std::to_string(k) + "] NaN mismatch";
          return INFINITY;
        }
        continue;
      }
      if (a == b) continue;  // also infinities of one sign, and -0 == 0
      const double d = std::fabs(a - b) / (1.0 + std::fabs(b));
      if (d > worst || std::isnan(d)) {
        worst = std::isnan(d) ? INFINITY : d;
        *why = "worst at output " + std::to_string(i) + "[" + std::to_string(k) +
               "]: " + std::to_string(a) + " vs " + std::to_string(b);
      }
    }
  }
  return worst;
}

std::set<std::string> split(const std::string& list) {
  std::set<std::string> out;
  std::stringstream s(list);
  for (std::string item; std::getline(s, item, ',');) out.insert(item);
  return out;
}

struct OpTally {
  int rows = 0, comparisons = 0, against_reference = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::string device_spec, op_filter, pattern;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--device" || a == "--op" || a == "-o" || a == "-p") && i + 1 < argc) {
      (a == "--device" ? device_spec : a == "-p" ? pattern : op_filter) = argv[++i];
    } else {
      std::fprintf(stderr, "usage: test_parity [--device SPEC] [--op NAME[,NAME...]] [-p REGEX]\n");
      return 2;
    }
  }
  const std::set<std::string> only_ops = split(op_filter);
  for (const std::string& name : only_ops) {
    bool known = false;
    for (int op = 0; op < static_cast<int>(Op::count_); ++op)
      known = known || name == op_name(static_cast<Op>(op));
    if (!known) {
      std::fprintf(stderr, "test_parity: no op named '%s' (see cohort/backend/op_list.hpp)\n",
                   name.c_str());
      return 2;
    }
  }
  const std::regex case_regex(pattern);

  std::vector<Device*> devices;
  std::vector<std::string> skipped;
  if (!device_spec.empty()) {
    try {
      devices.push_back(&device(device_spec));
    } catch (const Error& e) {
      std::printf("skipped: %s\n", e.what());
      return 77;
    }
  } else {
    for (const DeviceFactory& f : device_factories()) {
      std::string why;
      const int n = f.count(&why);
      if (n == 0) skipped.push_back(f.name + " (" + why + ")");
      for (int i = 0; i < n; ++i) devices.push_back(&f.get(i));
    }
    devices.push_back(&testing::partial_device());
#if COHORT_TEST_THRUST_HOST
    devices.push_back(&testing::thrust_host_device());
#endif
  }
  const bool whole_table = device_spec.empty() && op_filter.empty() && pattern.empty();

  std::vector<Row> table = parity::rows();
  std::set<Op> covered;
  for (const Row& r : table) covered.insert(r.op);
  int passed = 0, failed = 0, skips = 0;
  for (int op = 0; op < static_cast<int>(Op::count_); ++op)
    if (!covered.count(static_cast<Op>(op))) {
      std::printf("FAIL  %-24s has no row in the parity table\n", op_name(static_cast<Op>(op)));
      ++failed;
    }
  if (!parity_ref::philox_known_answers()) {
    std::printf("FAIL  the reference's Philox4x32-10 misses Random123's known answers\n");
    ++failed;
  }

  std::map<Op, OpTally> tally;
  std::size_t guarded = 0;
  std::printf("%-24s %-44s %-18s %10s %8s\n", "op", "case", "device", "max diff", "tol");
  for (Row& row : table) {
    if (!only_ops.empty() && !only_ops.count(op_name(row.op))) continue;
    if (!pattern.empty() && !std::regex_search(row.name, case_regex)) continue;
    ++tally[row.op].rows;
    for (Device* d : devices) {
      // Which code ran: the partial device's denied cases fall back to the host; thrust-host
      // sends the ops Thrust covers through Thrust and the rest to the host.
      const std::uint64_t fallbacks = dispatch::fallback_count(row.op);
#if COHORT_TEST_THRUST_HOST
      const std::uint64_t thrust = testing::thrust_calls(row.op);
#endif
      Case c(*d, &row.reference);
      std::string why;
      double diff = INFINITY;
      try {
        row.run(c);
        if (!c.checked())
          why = "the row compared nothing";
        else
          diff = difference(c.got(), row.reference, &why);
        for (const Tensor& t : c.got())
          if (&t.device() != d) diff = INFINITY, why = "an output is not on " + d->name();
        for (const std::string& broken : c.broken_guards()) diff = INFINITY, why = broken;
      } catch (const Error& e) {
        why = e.what();
      }
      std::string route = d->name();
      if (dispatch::fallback_count(row.op) != fallbacks) route += ">host";
#if COHORT_TEST_THRUST_HOST
      if (testing::thrust_calls(row.op) != thrust) route += ">thrust";
#endif
      const bool ok = diff <= row.tol;
      std::printf("%-24s %-44s %-18s %10.2e %8.1e  %s%s\n", op_name(row.op), row.name.c_str(),
                  route.c_str(), diff, row.tol, ok ? "ok" : "FAIL ", ok ? "" : why.c_str());
      (ok ? passed : failed)++;
      guarded += c.guarded_outputs();
      // Every comparison is the device's output against the reference's values: never a device
      // against the host or against itself. A row that compared nothing is not one.
      ++tally[row.op].comparisons;
      if (c.checked() && !row.reference.empty()) ++tally[row.op].against_reference;
    }
    skips += static_cast<int>(skipped.size());
  }
  for (const std::string& s : skipped) std::printf("skipped: every row on %s\n", s.c_str());
#if COHORT_TEST_THRUST_HOST
  // The thrust-host rows test Thrust only if its calls really went through Thrust.
  if (whole_table) {
    int through = 0, covered_ops = 0;
    for (int op = 0; op < static_cast<int>(Op::count_); ++op) {
      if (!testing::thrust_covers(static_cast<Op>(op))) continue;
      ++covered_ops;
      if (testing::thrust_calls(static_cast<Op>(op)) > 0) {
        ++through;
      } else {
        std::printf("FAIL  %-24s never went through Thrust on thrust-host\n",
                    op_name(static_cast<Op>(op)));
        ++failed;
      }
    }
    std::printf("thrust-host: %d of the %d ops Thrust covers went through Thrust\n", through,
                covered_ops);
  }
#endif

  std::printf("\n%-24s %5s %12s %14s\n", "op", "rows", "comparisons", "vs reference");
  int comparisons = 0, independent = 0;
  for (const auto& [op, t] : tally) {
    std::printf("%-24s %5d %12d %14d%s\n", op_name(op), t.rows, t.comparisons, t.against_reference,
                t.against_reference == t.comparisons ? "" : "  FAIL");
    comparisons += t.comparisons;
    independent += t.against_reference;
  }
  if (independent != comparisons) ++failed;
  std::printf(
      "%d of %d comparisons set a device against the independent reference "
      "(%zu outputs guarded)\n",
      independent, comparisons, guarded);
  std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skips);
  return failed ? 1 : 0;
}
