// A DDP step's gradient communication past what runs here (issue 32), on paper: the cost model's
// projection (cohort/collectives/cost_model.hpp) for a zoo model's real gradient buckets at 8,
// 64, 512 and 4096 ranks, 8 per host, beside NCCL's own tuning model for the same bytes and
// cluster. Everything it prints is MODELLED, nothing measured: the measured side of the model is
// bench/hier_compare.sh MODEL=1 (docs/benchmarks/multihost.md).
//
//   build/bin/ddp_projection [--model resnet50|mnist_net]... [--ranks 8,64,512,4096]
//       [--per-host 8] [--inter-gbyte-s 12] [--inter-alpha-us 14] [--cost-model FILE]
//       [--intra-gbyte-s G] [--intra-alpha-us A] [--backward-ms MS]
//
// The buckets are DDP's own (DistributedDataParallel on a one-rank self communicator, default
// DDPOptions: the last layers' 1 MiB first, then 25 MiB caps), so the sizes are the ones a job
// all-reduces. ResNet-50 is torchvision's (1000 classes, 224 x 224): 25,557,032 parameters; the
// MNIST CNN is PyTorch's examples/mnist Net: 1,199,882.
//
// The links. Inter-host: one 100 Gbit/s NIC per host, taken as 12 GB/s (NCCL's own figure for
// it: NET_BW 12.0 in src/graph/topo.h; 12.2 GB/s is the measured bus bandwidth NVIDIA quotes for
// one 100 Gbit/s card, nccl-tests issue 29) and a 14 us start-up per message (NCCL's hardware
// latency of a network step, Simple protocol, below). Intra-host: the shm link of this machine
// as `cohort-bench --calibrate` measured it on 2026-11-26 (0.3446 us, 0.117283 ns per byte),
// or --cost-model FILE's, with its per-op terms (without a file they are 0); --intra-* override it
// (e.g. a host's real memory bandwidth: this VM's 8.5 GB/s is below the NIC's 12).
//
// NCCL's model: its tuning model, src/graph/tuning.cc of NVIDIA/nccl at 5067397c (v2.30.7),
// all-reduce, Simple protocol (DDP's buckets are MiB, where Simple is NCCL's choice), N hosts of
// p/N GPUs each with one NIC, Hopper (sm90), Intel hosts (netOverhead 1 us), the graph's
// latencyInter taken as 0 and 2 channels on the NIC:
//   ring  busBw = 12 GB/s, algBw = busBw * p / (2 (p-1));
//         lat = 8.4 + (2(p-1) - 2(N-1)) * max(3.4, 3 * 1.0) + 2(N-1) * 14.0 us, times 1.4 (its
//         "plateau effect of ring", sm80 and later) when bytes / (2 * p) >= 64
//   tree  busBw = min(12 * 0.92, 2 * 36.0) GB/s, algBw = busBw / 2, times its
//         treeCorrectionFactor[Simple][log2(bytes / 64)] below 512 MiB;
//         lat = 8.4 + 2 ((p/N - 1) * 4.0 + floor(log2 N) * 14.0) us
//   time = lat + bytes / (1000 * algBw) us.
// NCCL uses NVLink bandwidth inside a node and for 2 nodes (bwIntra), which this projection has
// no figure for: its columns are left empty for one host.
//
// Overlap. Buckets become ready during backward in the order they are issued, here evenly by
// bytes over the backward time B; one all-reduce runs at a time (DDP's buckets are issued in
// order on one communicator). The step's exposed communication is the last all-reduce's end
// minus B. It can never be less than the last bucket's own time (that bucket is ready only at
// the end of backward): "hidden at B >=" is the least B where it is within 1% of that.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cohort/collectives/cost_model.hpp"
#include "cohort/collectives/registry.hpp"
#include "cohort/core/error.hpp"
#include "cohort/devices.hpp"
#include "cohort/models.hpp"
#include "cohort/parallel/ddp.hpp"

using namespace cohort;
using comm::AllreduceAlgo;

namespace {

struct Options {
  std::vector<std::string> models;
  std::vector<int> ranks = {8, 64, 512, 4096};
  int per_host = 8;
  double inter_gbyte_s = 12, inter_alpha_us = 14;
  double intra_gbyte_s = 0, intra_alpha_us = -1;  // > 0 / >= 0: override the intra-host link
  std::string cost_model;
  double backward_ms = -1;
};

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr,
               "ddp_projection: %s\nusage: ddp_projection [--model resnet50|mnist_net]... "
               "[--ranks 8,64,512,4096] [--per-host 8] [--inter-gbyte-s 12] [--inter-alpha-us 14] "
               "[--intra-gbyte-s G] [--intra-alpha-us A] [--cost-model FILE] [--backward-ms MS]\n",
               msg.c_str());
  std::exit(2);
}

double positive(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || *end != '\0' || !(x > 0) || !std::isfinite(x))
    usage_error(flag + " '" + v + "' is not a positive number");
  return x;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") usage_error("a DDP step's all-reduces, modelled");
    if (i + 1 >= argc) usage_error(a + " needs a value");
    const std::string v = argv[++i];
    if (a == "--model") {
      if (v != "resnet50" && v != "mnist_net")
        usage_error("--model '" + v + "': known models are resnet50 and mnist_net");
      o.models.push_back(v);
    } else if (a == "--ranks") {
      o.ranks.clear();
      std::size_t at = 0;
      while (at <= v.size()) {
        const std::size_t comma = std::min(v.find(',', at), v.size());
        o.ranks.push_back(static_cast<int>(positive("--ranks", v.substr(at, comma - at))));
        at = comma + 1;
      }
    } else if (a == "--per-host") {
      o.per_host = static_cast<int>(positive(a, v));
    } else if (a == "--inter-gbyte-s") {
      o.inter_gbyte_s = positive(a, v);
    } else if (a == "--inter-alpha-us") {
      o.inter_alpha_us = positive(a, v);
    } else if (a == "--intra-gbyte-s") {
      o.intra_gbyte_s = positive(a, v);
    } else if (a == "--intra-alpha-us") {
      o.intra_alpha_us = positive(a, v);
    } else if (a == "--cost-model") {
      o.cost_model = v;
    } else if (a == "--backward-ms") {
      o.backward_ms = positive(a, v);
    } else {
      usage_error("unknown argument '" + a + "'");
    }
  }
  for (int r : o.ranks)
    if (r % o.per_host != 0)
      usage_error("--ranks " + std::to_string(r) + " is not a whole number of hosts of " +
                  std::to_string(o.per_host) + " (--per-host)");
  if (o.models.empty()) o.models = {"resnet50", "mnist_net"};
  return o;
}

// Bytes of each gradient bucket, in issue order, as DDP builds them for `name`.
std::vector<double> ddp_buckets(const std::string& name, std::int64_t* params) {
  Device& host = host_device();
  auto model =
      name == "resnet50" ? models::make("resnet50", host, {1000, 3, 224}) : models::mnist_net(host);
  std::map<std::string, std::int64_t> numel;
  *params = 0;
  for (const auto& p : model->named_parameters()) {
    numel[p.name] = p.param->value.numel();
    *params += p.param->value.numel();
  }
  parallel::DistributedDataParallel ddp(model, comm::init_process_group("self"));
  std::vector<double> bytes;
  for (const auto& bucket : ddp.bucket_layout()) {
    double b = 0;
    for (const auto& n : bucket) b += 4.0 * static_cast<double>(numel.at(n));
    bytes.push_back(b);
  }
  return bytes;
}

// NCCL's tuning model (see the top of this file): microseconds of one all-reduce of `bytes`.
constexpr double kNicGBs = 12.0, kChannels = 2;
double nccl_ring_us(double bytes, int p, int hosts) {
  const double alg_bw = kNicGBs * p / (2.0 * (p - 1));
  const int steps = 2 * (p - 1), inter_steps = 2 * (hosts - 1);
  double lat = 8.4 + (steps - inter_steps) * std::max(3.4, 3 * 1.0) + inter_steps * 14.0;
  if (bytes / (kChannels * p) >= 64) lat *= 1.4;
  return lat + bytes / (1000 * alg_bw);
}
double nccl_tree_us(double bytes, int p, int hosts) {
  static const double kCorrection[24] = {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
                                         .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9};
  double alg_bw = std::min(kNicGBs * 0.92, kChannels * 36.0) * 0.5;
  const auto chunks = static_cast<unsigned long long>(bytes) >> 6;
  if (chunks > 0) {
    const int log_size = 63 - __builtin_clzll(chunks);
    if (log_size < 23) alg_bw *= kCorrection[log_size];
  }
  const double lat = 8.4 + 2 * ((p / hosts - 1) * 4.0 + std::floor(std::log2(hosts)) * 14.0);
  return lat + bytes / (1000 * alg_bw);
}

// The step's exposed communication (us) for per-bucket times `t` (us) when backward takes
// `backward_us`: buckets ready evenly by bytes, one all-reduce at a time.
double exposed_us(const std::vector<double>& bytes, const std::vector<double>& t,
                  double backward_us) {
  double total = 0, done = 0, end = 0;
  for (double b : bytes) total += b;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    done += bytes[i];
    end = std::max(end, backward_us * done / total) + t[i];
  }
  return end - backward_us;
}
// The least backward time (us) at which the exposed time is within 1% of the last bucket's.
double hidden_at_us(const std::vector<double>& bytes, const std::vector<double>& t) {
  const double floor_us = t.back() * 1.01;
  double lo = 0, hi = 1;
  while (exposed_us(bytes, t, hi) > floor_us) hi *= 2;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (exposed_us(bytes, t, mid) > floor_us ? lo : hi) = mid;
  }
  return hi;
}

// The table's names of AllreduceAlgo's values, in their order.
const char* short_name(AllreduceAlgo a) {
  static const char* const kNames[] = {"ring", "rd", "rab", "hier"};
  return kNames[static_cast<int>(a)];
}

void project(const Options& o, const comm::CostModel& links, const std::string& name) {
  std::int64_t params = 0;
  const std::vector<double> bytes = ddp_buckets(name, &params);
  double total = 0;
  std::string sizes;
  char buf[64];
  for (double b : bytes) {
    total += b;
    std::snprintf(buf, sizeof buf, "%s%.2f", sizes.empty() ? "" : " + ", b / (1 << 20));
    sizes += buf;
  }
  std::printf(
      "\n# %s: %lld parameters, %.1f MiB of f32 gradients in %zu DDP buckets, in issue "
      "order (MiB): %s\n",
      name.c_str(), static_cast<long long>(params), total / (1 << 20), bytes.size(), sizes.c_str());
  std::string exact;
  for (double b : bytes) exact += " " + std::to_string(static_cast<long long>(b));
  std::printf("# bucket bytes:%s\n", exact.c_str());
  std::printf(
      "# ms per step, all buckets' all-reduces one after another; pick: the model's per "
      "bucket (ring, rd, hier); hidden at B >=: the backward time from which only the last "
      "bucket's all-reduce shows%s\n",
      o.backward_ms > 0 ? "; exposed: what shows at --backward-ms" : "");
  std::printf("%6s %5s | %8s %8s %8s %8s %8s %-11s | %8s %8s %8s | %10s %10s", "ranks", "hosts",
              "ring", "rd", "rab", "hier", "pick", "(algos)", "nccl-rng", "nccl-tre", "nccl",
              "hide:pick", "hide:nccl");
  if (o.backward_ms > 0) std::printf(" %9s %9s", "exp:pick", "exp:nccl");
  std::printf("\n");
  for (int p : o.ranks) {
    const int hosts = p / o.per_host;
    std::vector<AllreduceAlgo> algos = comm::allreduce_algos();
    std::map<AllreduceAlgo, double> sum;
    std::vector<double> pick_t, nccl_t;
    std::map<std::string, int> picks;
    double nccl_ring = 0, nccl_tree = 0;
    for (double b : bytes) {
      for (AllreduceAlgo a : algos) sum[a] += comm::predict_allreduce(links, a, b, p, hosts) * 1e6;
      const AllreduceAlgo best = comm::pick_allreduce(links, b, p, hosts);
      pick_t.push_back(comm::predict_allreduce(links, best, b, p, hosts) * 1e6);
      ++picks[short_name(best)];
      if (hosts > 1) {
        const double r = nccl_ring_us(b, p, hosts), t = nccl_tree_us(b, p, hosts);
        nccl_ring += r, nccl_tree += t;
        nccl_t.push_back(std::min(r, t));
      }
    }
    double pick_sum = 0;
    for (double t : pick_t) pick_sum += t;
    std::string which;
    for (const auto& [algo, n] : picks) which += (which.empty() ? "" : "+") + algo;
    std::printf("%6d %5d | %8.2f %8.2f %8.2f %8.2f %8.2f %-11s |", p, hosts,
                sum[AllreduceAlgo::ring] / 1e3, sum[AllreduceAlgo::recursive_doubling] / 1e3,
                sum[AllreduceAlgo::rabenseifner] / 1e3,
                hosts > 1 ? sum[AllreduceAlgo::hierarchical] / 1e3 : NAN, pick_sum / 1e3,
                ("(" + which + ")").c_str());
    double nccl_sum = 0;
    for (double t : nccl_t) nccl_sum += t;
    if (hosts > 1)
      std::printf(" %8.2f %8.2f %8.2f | %10.2f %10.2f", nccl_ring / 1e3, nccl_tree / 1e3,
                  nccl_sum / 1e3, hidden_at_us(bytes, pick_t) / 1e3,
                  hidden_at_us(bytes, nccl_t) / 1e3);
    else
      std::printf(" %8s %8s %8s | %10.2f %10s", "-", "-", "-", hidden_at_us(bytes, pick_t) / 1e3,
                  "-");
    if (o.backward_ms > 0) {
      std::printf(" %9.2f", exposed_us(bytes, pick_t, o.backward_ms * 1e3) / 1e3);
      if (hosts > 1)
        std::printf(" %9.2f", exposed_us(bytes, nccl_t, o.backward_ms * 1e3) / 1e3);
      else
        std::printf(" %9s", "-");
    }
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    comm::CostModel links;
    std::string intra_from;
    if (!o.cost_model.empty()) {
      links = comm::load_cost_model(o.cost_model);
      intra_from = o.cost_model + " (" + links.note + ")";
    } else {
      links.intra = {0.3446e-6, 0.117283e-9, {}};
      intra_from = "this machine's shm (cohort-bench --calibrate, 2026-11-26)";
    }
    links.inter = {o.inter_alpha_us * 1e-6, 1e-9 / o.inter_gbyte_s, {}};
    // An override makes the intra-host link alpha-beta alone (its measured points dropped).
    if (o.intra_gbyte_s > 0) links.intra.beta_s = 1e-9 / o.intra_gbyte_s, links.intra.points = {};
    if (o.intra_alpha_us >= 0)
      links.intra.alpha_s = o.intra_alpha_us * 1e-6, links.intra.points = {};
    if (o.intra_gbyte_s > 0 || o.intra_alpha_us >= 0) intra_from += ", overridden by --intra-*";
    std::printf("# MODELLED, not measured: a DDP step's gradient all-reduces, %d ranks per host\n",
                o.per_host);
    std::printf(
        "# inter-host: %.1f GB/s, %.1f us per message; intra-host: %.4f us, %.2f GB/s "
        "from %s; per-op terms: flat %.1f us, hier %.1f us\n",
        o.inter_gbyte_s, o.inter_alpha_us, links.intra.alpha_s * 1e6, 1e-9 / links.intra.beta_s,
        intra_from.c_str(), links.op_s(comm::AllreduceAlgo::ring) * 1e6,
        links.op_s(comm::AllreduceAlgo::hierarchical) * 1e6);
    std::printf(
        "# nccl: NCCL's tuning model (src/graph/tuning.cc at 5067397c, v2.30.7), Simple "
        "protocol, Hopper, one %.0f GB/s NIC per host, 2 channels; nccl = the cheaper of "
        "ring and tree per bucket\n",
        kNicGBs);
    for (const auto& name : o.models) project(o, links, name);
  } catch (const Error& e) {
    std::fprintf(stderr, "ddp_projection: %s\n", e.what());
    return 1;
  }
  return 0;
}
