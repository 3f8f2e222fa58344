// cohort-bench --calibrate and --calibrate-op (cohort_bench_calibrate.hpp): the cost model's
// links from concurrent exchanges at sizes 8 B to 16 MiB, and the per-op term of the algorithm the
// backend runs from its smallest full all-reduces (one float per rank).
#include "cohort_bench_calibrate.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "cohort/collectives/cost_model.hpp"
#include "cohort/core/error.hpp"

namespace cohort::comm {
namespace {

using Clock = std::chrono::steady_clock;

// Seconds of one exchange of `bytes` each way with `peer` (-1: none, return 0 at once), both
// sending at once: the mean of `iters` (after 3 untimed), as cohort-bench's rows and the op
// term's all-reduces are means (where the times are bimodal, as around a transport's
// switch to rendezvous on shared cores, a median would pick one mode). Every rank with a peer
// runs it at the same time, as in a collective's step, so the figure includes the other ranks'
// competing for the cores and, across hosts, for the link.
double exchange(Communicator& c, int peer, std::size_t bytes, int iters) {
  if (peer < 0) return 0;
  std::vector<char> out(std::max<std::size_t>(bytes, 1)), in(out.size());
  std::vector<double> t;
  for (int i = 0; i < iters + 3; ++i) {
    const auto t0 = Clock::now();
    auto r = c.recv(in.data(), bytes, DType::u8, peer, 7);
    auto s = c.send(out.data(), bytes, DType::u8, peer, 7);
    r->wait();
    s->wait();
    if (i >= 3) t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  double sum = 0;
  for (const double x : t) sum += x;
  return sum / static_cast<double>(t.size());
}

// This rank's partner in the calibration's intra-host pass (local ranks 0-1, 2-3, ... of each
// host) or inter-host pass (local rank i of host 2k with local rank i of host 2k + 1); -1: none.
int calibration_peer(const HostMap& map, int rank, bool inter) {
  const auto r = static_cast<std::size_t>(rank);
  const int h = map.host_of[r], i = map.local_of[r];
  if (!inter) {
    const auto& mine = map.members[static_cast<std::size_t>(h)];
    const int j = i ^ 1;
    return j < static_cast<int>(mine.size()) ? mine[static_cast<std::size_t>(j)] : -1;
  }
  const int other = h ^ 1;
  if (other >= map.hosts()) return -1;
  const auto& theirs = map.members[static_cast<std::size_t>(other)];
  return i < static_cast<int>(theirs.size()) ? theirs[static_cast<std::size_t>(i)] : -1;
}

// Which algorithm `c` runs for its smallest all-reduce, for its per-op term: hier's stages unless
// COHORT_HIER_ALGO=flat; a flat backend's recursive doubling (ucx's choice up to 8 KiB) unless
// COHORT_UCX_ALLREDUCE=ring or rab. hier choosing by a model (auto) runs no one algorithm: refused.
AllreduceAlgo algorithm_for_op_term(const Communicator& c) {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  if (c.backend() == "hier") {
    const std::string algo = env("COHORT_HIER_ALGO");
    COHORT_CHECK(algo == "flat" || algo == "hierarchical" ||
                     (algo.empty() && env("COHORT_COST_MODEL").empty()),
                 "--calibrate on hier times one algorithm's smallest all-reduce, but "
                 "COHORT_HIER_ALGO='",
                 algo, "' with COHORT_COST_MODEL='", env("COHORT_COST_MODEL"),
                 "' picks per size: unset both, or set COHORT_HIER_ALGO=hierarchical or flat");
    if (algo != "flat") return AllreduceAlgo::hierarchical;
  }
  const std::string forced = env("COHORT_UCX_ALLREDUCE");
  if (forced == "ring") return AllreduceAlgo::ring;
  if (forced == "rab") return AllreduceAlgo::rabenseifner;
  return AllreduceAlgo::recursive_doubling;
}

// The op term's all-reduce: one float per rank (at least 2), the smallest in which every rank's
// chunk of a ring or of Rabenseifner's halving holds data. At 8 B on 8 ranks 6 of the ring's 8
// chunks are empty and their steps cost less: the ring measured 1.6-3x faster there than at
// 64 B, and the model's ring with it (2026-11-27).
std::size_t op_floats(const Communicator& c) {
  return static_cast<std::size_t>(std::max(2, c.size()));
}

// Seconds per all-reduce of op_floats(c) floats: batches of `iters` each waited for (after 10
// untimed), each batch's mean, the slowest rank's, as a cohort-bench row (-z 1) times them; the
// median of `batches` (a batch that met a scheduling hiccup on shared cores does not move it).
double smallest_allreduce(Communicator& c, int iters, int batches) {
  std::vector<float> v(op_floats(c), 1.0f);
  const std::size_t n = v.size();
  for (int i = 0; i < 10; ++i)
    c.allreduce(v.data(), v.data(), n, DType::f32, ReduceOp::sum)->wait();
  std::vector<double> times;
  for (int b = 0; b < batches; ++b) {
    c.barrier()->wait();
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i)
      c.allreduce(v.data(), v.data(), n, DType::f32, ReduceOp::sum)->wait();
    double t = std::chrono::duration<double>(Clock::now() - t0).count() / iters;
    c.allreduce(&t, &t, 1, DType::f64, ReduceOp::max)->wait();
    times.push_back(t);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

// Which ranks share a host: every rank's host key (comm::host_key()), all-gathered, then
// comm::map_hosts, as hier groups them.
HostMap hosts_of(Communicator& c) {
  constexpr std::size_t kKey = 256;
  std::vector<char> mine(kKey, 0), all(kKey * static_cast<std::size_t>(c.size()), 0);
  const std::string key = host_key();
  std::memcpy(mine.data(), key.data(), std::min(key.size(), kKey - 1));
  c.allgather(mine.data(), all.data(), kKey, DType::u8)->wait();
  std::vector<std::string> keys;
  for (int r = 0; r < c.size(); ++r)
    keys.emplace_back(all.data() + static_cast<std::size_t>(r) * kKey);
  return map_hosts(keys);
}

// --calibrate: three links, each timed by exchanges at every power of 8 from 8 B to 2 MiB, and
// 16 KiB and 64 KiB (where TCP and a shaper's bucket bend the line most), 4 and 16 MiB (a long
// transfer through a shaper's deep queue runs slower than a short one), as rank 0 times them;
// every pair of a pass at once:
//   intra-host     local ranks 0-1, 2-3, ... of every host;
//   inter-host     local rank 0 of host 2k with local rank 0 of host 2k + 1: one flow per host,
//                  as a ring's step and hier's leaders cross;
//   inter-shared   every rank of host 2k with its like on host 2k + 1: the host's ranks crossing
//                  together, filed under the host's bytes, as a flat algorithm's step crosses.
// Each link's points, alpha and beta joining the ends. Then the per-op term of the algorithm
// this backend runs for one float per rank: its measured time less the formula's (negative where
// the exchanges alone cost more than its steps); the others are absent until --calibrate-op adds
// them. Rank 0 writes the file; a link the job does not have is written as 0 and said so.
// --calibrate-op: only the op term, against the links of the file there.
int calibrate(Communicator& c, const std::string& file, bool op_only) {
  COHORT_CHECK(c.capabilities().host_memory, "--calibrate: backend ", c.backend(),
               " takes no host memory");
  const HostMap map = hosts_of(c);
  const int hosts = map.hosts();
  const AllreduceAlgo ran = algorithm_for_op_term(c);
  const std::string op_key = std::string(allreduce_algo_key(ran)) + "_op_us";
  CostModel m;
  std::string note;
  if (op_only) {
    m = load_cost_model(file);
    check_cost_model_fits(m, file, c.size(), hosts);
    note = m.note + "; " + op_key + " from " + c.backend() + " (--calibrate-op)";
  } else {
    m.world = c.size();
    m.hosts = hosts;
    const int intra_peer = calibration_peer(map, 0, false);
    const int inter_peer = calibration_peer(map, 0, true);
    // Host 0's ranks that cross to host 1 at once in the shared pass.
    const auto sharing =
        static_cast<double>(hosts > 1 ? std::min(map.members[0].size(), map.members[1].size()) : 1);
    static constexpr std::size_t kSizes[] = {8,         64,        512,       4u << 10,
                                             16u << 10, 32u << 10, 64u << 10, 256u << 10,
                                             2u << 20,  4u << 20,  16u << 20};
    enum Pass { intra, inter, shared };
    for (const Pass pass : {intra, inter, shared}) {
      if ((pass == intra ? intra_peer : inter_peer) < 0) continue;
      // The one-flow pass: only each host's first rank crosses.
      const bool idle = pass == inter && map.local_of[static_cast<std::size_t>(c.rank())] != 0;
      const int peer = idle ? -1 : calibration_peer(map, c.rank(), pass != intra);
      std::vector<LinkPoint> points;
      for (const std::size_t bytes : kSizes) {
        const int iters = bytes <= 4096          ? 100
                          : bytes <= (64u << 10) ? 40
                          : bytes <= (4u << 20)  ? 10
                                                 : 4;
        const double t = exchange(c, peer, bytes, iters);
        c.barrier()->wait();
        points.push_back({static_cast<double>(bytes) * (pass == shared ? sharing : 1.0), t});
      }
      if (c.rank() == 0)
        (pass == intra   ? m.intra
         : pass == inter ? m.inter
                         : m.inter_shared) =
            link_from_points(std::move(points), pass == intra   ? "intra-host"
                                                : pass == inter ? "inter-host"
                                                                : "inter-host (shared)");
    }
    char when[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    note = std::string(when) + ", backend " + c.backend() + ", " + std::to_string(c.size()) +
           " ranks on " + std::to_string(hosts) + " host(s)" +
           (intra_peer < 0 ? "; no host has two ranks: intra-host link not measured" : "") +
           (inter_peer < 0 ? "; one host: inter-host link not measured" : "") + "; " + op_key +
           " from its all-reduce of one float per rank";
  }
  const double measured = smallest_allreduce(c, 50, 5);
  if (c.rank() == 0) {
    // The formula without this algorithm's term; the term makes the prediction at that size the
    // time measured (negative where the links' exchanges alone cost more than its steps).
    const double bytes = 4.0 * static_cast<double>(op_floats(c));
    m.own_op_s(ran) = 0;
    m.own_op_s(ran) = measured - predict_allreduce(m, ran, bytes, m.world, hosts);
    m.note = note;
    save_cost_model(file, m);
    std::printf("%s", format_cost_model(m).c_str());
    std::printf("# written to %s\n", file.c_str());
  }
  c.barrier()->wait();
  return 0;
}

}  // namespace cohort::comm
