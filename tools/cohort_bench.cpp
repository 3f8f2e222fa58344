// cohort-bench: an nccl-tests style sweep of one collective over a range of sizes.
//
//   cohortrun --nproc-per-node 2 build/bin/cohort-bench --op allreduce -b 8 -e 256M -f 4 -n 50
//
// Every rank runs it; rank 0 prints one row per size: size (bytes), count (elements), type, redop,
// time (us per op, the slowest rank's average over -n back-to-back ops issued asynchronously and
// then waited for, as nccl-tests does; with -z 1 each op is waited for before the next is issued,
// as a blocking MPI_Allreduce loop runs), algbw = size / time and busbw (GB/s, 1e9 bytes/s, as nccl-tests):
// busbw = algbw * 2(n-1)/n for allreduce, (n-1)/n for allgather and reduce_scatter, 1 for
// broadcast. size is the larger buffer (allgather: the gathered output; reduce_scatter: the
// input), as nccl-tests prints it. #wrong counts wrong elements over all ranks after a separate
// checked run on integer-valued data, so that every dtype and op has an exact expected result.
//
// Backends that take device memory only (nccl: capabilities().host_memory false) get GPU buffers
// on this rank's GPU (cohort::device("cuda"), local rank i on GPU i): the timed ops run on device
// memory; the checked run fills host mirrors, uploads them, and downloads the result to count
// wrong elements. Columns and the busbw formula are the same for every backend.
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "cohort/collectives/cost_model.hpp"
#include "cohort/collectives/process_group.hpp"
#include "cohort/collectives/registry.hpp"
#include "cohort/core/error.hpp"
#include "cohort/core/launch_info.hpp"
#include "cohort/devices.hpp"
#include "cohort_bench_calibrate.hpp"

namespace {

using namespace cohort;
using namespace cohort::comm;
using Clock = std::chrono::steady_clock;

enum class Coll { allreduce, broadcast, allgather, reduce_scatter };

struct Options {
  std::size_t min_bytes = 8;
  std::size_t max_bytes = 64u << 20;
  double factor = 2;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  DType dtype = DType::f32;
  ReduceOp redop = ReduceOp::sum;
  Coll coll = Coll::allreduce;
  int root = 0;
  bool inplace = false;
  bool json = false;
  bool bind = false;
  bool blocking = false;
  bool registered = false;
  std::string comm;
  std::string calibrate;  // --calibrate FILE: measure the cost model's links, write FILE, exit
  bool calibrate_op = false;  // --calibrate-op FILE: only this backend's per-op term, into FILE
  std::string model;      // --model FILE: the model's predictions next to each all-reduce row
};

const char* const kUsage =
    "usage: cohort-bench [options]   (run one per rank, e.g. under cohortrun)\n"
    "  --op NAME          allreduce | broadcast | allgather | reduce_scatter (default allreduce)\n"
    "  -b, --minbytes S   smallest size (default 8; suffixes K, M, G)\n"
    "  -e, --maxbytes S   largest size (default 64M)\n"
    "  -f, --stepfactor F multiply the size by F each row (default 2)\n"
    "  -n, --iters N      timed ops per size (default 20)\n"
    "  -w, --warmup N     untimed ops per size first (default 5)\n"
    "  -c, --check 0|1    verify results and count #wrong (default 1)\n"
    "  -d, --datatype T   float double bfloat16 half int32 int64 uint8\n"
    "                     (or f32 f64 bf16 f16 i32 i64 u8)\n"
    "  -o, --redop OP     sum | avg | min | max (default sum)\n"
    "  -r, --root R       broadcast root (default 0)\n"
    "  -i, --inplace 0|1  measure in place (default 0: out of place)\n"
    "  -z, --blocking 0|1 1: wait for each op before issuing the next (default 0: issue all -n\n"
    "                     ops, then wait for them, as nccl-tests)\n"
    "  -R, --registered 0|1  1: host buffers from Communicator::alloc_buffer (shm reads the\n"
    "                     peers' all-reduce data in place; nccl-tests' -R; default 0: malloc)\n"
    "  --comm NAME        backend (default: COHORT_COMM, else auto)\n"
    "  --bind             pin each rank to core LOCAL_RANK (as mpirun does by default)\n"
    "  --json             rank 0 prints one JSON document instead of the table\n"
    "  --calibrate FILE   measure the cost model's links (exchanges between pairs of ranks of one\n"
    "                     host, and of two hosts, all pairs at once) and this backend's per-op\n"
    "                     time (an 8-byte all-reduce: hier_op_us on hier, else flat_op_us),\n"
    "                     write FILE, and stop\n"
    "  --calibrate-op FILE  measure only this backend's per-op time, against FILE's links (FILE\n"
    "                     from --calibrate on this job size), update it in FILE, and stop\n"
    "  --model FILE       print each all-reduce row's time as the cost model in FILE predicts it\n"
    "                     for every algorithm, and the one it would pick\n";

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "cohort-bench: %s (see cohort-bench --help)\n", msg.c_str());
  std::exit(2);
}

std::size_t parse_size(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  std::string suffix = end ? end : "";
  double mult = 1;
  if (suffix == "K" || suffix == "k") mult = 1024.0;
  else if (suffix == "M" || suffix == "m") mult = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g") mult = 1024.0 * 1024 * 1024;
  else if (!suffix.empty()) die(flag + ": cannot read size '" + v + "'");
  if (v.empty() || !(x >= 0)) die(flag + ": cannot read size '" + v + "'");
  return static_cast<std::size_t>(x * mult);
}

long parse_int(const std::string& flag, const std::string& v, long lo, long hi) {
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || x < lo || x > hi)
    die(flag + " expects an integer in " + std::to_string(lo) + ".." + std::to_string(hi) +
        ", got '" + v + "'");
  return x;
}

struct TypeName {
  DType dt;
  const char* nccl;
  const char* cohort;
};
constexpr TypeName kTypes[] = {{DType::f32, "float", "f32"},     {DType::f64, "double", "f64"},
                               {DType::bf16, "bfloat16", "bf16"}, {DType::f16, "half", "f16"},
                               {DType::i32, "int32", "i32"},      {DType::i64, "int64", "i64"},
                               {DType::u8, "uint8", "u8"}};
const char* type_name(DType dt) {
  for (const auto& t : kTypes)
    if (t.dt == dt) return t.nccl;
  return "?";
}

const char* coll_name(Coll c) {
  switch (c) {
    case Coll::allreduce: return "allreduce";
    case Coll::broadcast: return "broadcast";
    case Coll::allgather: return "allgather";
    case Coll::reduce_scatter: return "reduce_scatter";
  }
  return "?";
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string value;
    bool has_value = false;
    if (a.rfind("--", 0) == 0) {
      if (const auto eq = a.find('='); eq != std::string::npos) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
        has_value = true;
      }
    }
    const auto take = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--op") {
      const std::string v = take();
      bool ok = false;
      for (Coll c : {Coll::allreduce, Coll::broadcast, Coll::allgather, Coll::reduce_scatter})
        if (v == coll_name(c)) o.coll = c, ok = true;
      if (!ok) die("--op: unknown collective '" + v + "'");
    } else if (a == "-b" || a == "--minbytes") {
      o.min_bytes = parse_size(a, take());
    } else if (a == "-e" || a == "--maxbytes") {
      o.max_bytes = parse_size(a, take());
    } else if (a == "-f" || a == "--stepfactor") {
      const std::string v = take();
      o.factor = std::strtod(v.c_str(), nullptr);
      if (!(o.factor > 1)) die(a + " expects a factor > 1, got '" + v + "'");
    } else if (a == "-n" || a == "--iters") {
      o.iters = static_cast<int>(parse_int(a, take(), 1, 1 << 24));
    } else if (a == "-w" || a == "--warmup" || a == "--warmup_iters") {
      o.warmup = static_cast<int>(parse_int(a, take(), 0, 1 << 24));
    } else if (a == "-c" || a == "--check") {
      o.check = parse_int(a, take(), 0, 1) != 0;
    } else if (a == "-d" || a == "--datatype") {
      const std::string v = take();
      bool ok = false;
      for (const auto& t : kTypes)
        if (v == t.nccl || v == t.cohort) o.dtype = t.dt, ok = true;
      if (!ok) die("-d: unknown datatype '" + v + "'");
    } else if (a == "-o" || a == "--redop") {
      const std::string v = take();
      bool ok = false;
      for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg, ReduceOp::min, ReduceOp::max})
        if (v == reduce_op_name(r)) o.redop = r, ok = true;
      if (!ok) die("-o: unknown reduction '" + v + "'");
    } else if (a == "-r" || a == "--root") {
      o.root = static_cast<int>(parse_int(a, take(), 0, 1 << 20));
    } else if (a == "-i" || a == "--inplace") {
      o.inplace = parse_int(a, take(), 0, 1) != 0;
    } else if (a == "-z" || a == "--blocking") {
      o.blocking = parse_int(a, take(), 0, 1) != 0;
    } else if (a == "-R" || a == "--registered") {
      o.registered = parse_int(a, take(), 0, 1) != 0;
    } else if (a == "--comm") {
      o.comm = take();
    } else if (a == "--calibrate" || a == "--calibrate-op") {
      o.calibrate = take();
      o.calibrate_op = a == "--calibrate-op";
    } else if (a == "--model") {
      o.model = take();
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--bind") {
      o.bind = true;
    } else {
      die("unknown option '" + std::string(argv[i]) + "'");
    }
  }
  if (o.max_bytes < o.min_bytes) die("-e is smaller than -b");
  return o;
}

// Integer-valued test data: exact in every dtype (|v| <= 15; sums over ranks stay exact in bf16
// up to 17 ranks, in f16 up to 136), so every op has one right answer.
double pattern(int rank, std::size_t i, DType dt) {
  const long v = static_cast<long>((i * 7 + static_cast<std::size_t>(rank) * 13) % 31);
  return dt == DType::u8 ? static_cast<double>(v) : static_cast<double>(v - 15);
}

void store_value(void* buf, std::size_t i, DType dt, double v) { store_element(buf, dt, i, v); }
double load_value(const void* buf, std::size_t i, DType dt) { return load_element(buf, dt, i); }

// The exact result of reducing element i over all ranks, in the dtype's arithmetic (the sum of
// small integers is exact; avg divides once, as the backends do).
double expected_reduction(const Options& o, int world, std::size_t i) {
  double acc = pattern(0, i, o.dtype);
  for (int r = 1; r < world; ++r) {
    const double v = pattern(r, i, o.dtype);
    switch (o.redop) {
      case ReduceOp::sum:
      case ReduceOp::avg: acc += v; break;
      case ReduceOp::min: acc = std::min(acc, v); break;
      case ReduceOp::max: acc = std::max(acc, v); break;
    }
  }
  if (o.dtype == DType::u8 && o.redop != ReduceOp::min && o.redop != ReduceOp::max)
    acc = static_cast<double>(static_cast<std::uint8_t>(static_cast<long>(acc)));
  if (o.redop == ReduceOp::avg) {
    switch (o.dtype) {
      case DType::f32: return static_cast<float>(acc) / static_cast<float>(world);
      case DType::f64: return acc / world;
      case DType::bf16:
        return bf16_to_float(float_to_bf16(static_cast<float>(acc) / static_cast<float>(world)));
      case DType::f16:
        return f16_to_float(float_to_f16(static_cast<float>(acc) / static_cast<float>(world)));
      default: return std::trunc(acc / world);
    }
  }
  return acc;
}

// What the communicator is given (send, recv: host memory, or GPU memory when `gpu` is set) and
// the host memory the check fills and reads (hsend, hrecv: the same pointers on the host, mirrors
// otherwise, copied with to_device() / from_device()).
struct Buffers {
  std::size_t bytes;
  char* send;
  char* recv;
  char* hsend;
  char* hrecv;
  Device* gpu;
  void to_device() const {
    if (!gpu) return;
    gpu->copy_from_host(send, hsend, bytes);
    gpu->copy_from_host(recv, hrecv, bytes);
  }
  void from_device() const {
    if (!gpu) return;
    gpu->copy_to_host(hsend, send, bytes);
    gpu->copy_to_host(hrecv, recv, bytes);
  }
};

// An all-reduce of one host value, through a GPU scratch value when the backend needs one.
template <class T>
void reduce_value(Communicator& c, Device* gpu, T* v, DType dt, ReduceOp op) {
  if (!gpu) {
    c.allreduce(v, v, 1, dt, op)->wait();
    return;
  }
  void* d = gpu->allocate(sizeof(T));
  gpu->copy_from_host(d, v, sizeof(T));
  c.allreduce(d, d, 1, dt, op)->wait();
  gpu->copy_to_host(v, d, sizeof(T));
  gpu->deallocate(d, sizeof(T));
}

// One op of the sweep on `count` elements per rank block; returns its handle.
WorkHandle issue(Communicator& c, const Options& o, const Buffers& b, std::size_t count) {
  const std::size_t esz = dtype_size(o.dtype);
  const std::size_t off = static_cast<std::size_t>(c.rank()) * count * esz;
  switch (o.coll) {
    case Coll::allreduce:
      return c.allreduce(b.send, o.inplace ? b.send : b.recv, count, o.dtype, o.redop);
    case Coll::broadcast: return c.broadcast(o.inplace ? b.send : b.recv, count, o.dtype, o.root);
    case Coll::allgather:
      return c.allgather(o.inplace ? b.recv + off : b.send, b.recv, count, o.dtype);
    case Coll::reduce_scatter:
      return c.reduce_scatter(b.send, o.inplace ? b.send + off : b.recv, count, o.dtype, o.redop);
  }
  return nullptr;
}

// Fills the inputs with the pattern, runs the op once and counts wrong elements on this rank.
std::int64_t check(Communicator& c, const Options& o, const Buffers& b, std::size_t count) {
  const int n = c.size(), me = c.rank();
  const std::size_t esz = dtype_size(o.dtype);
  const std::size_t off = static_cast<std::size_t>(me) * count;
  std::int64_t wrong = 0;
  switch (o.coll) {
    case Coll::allreduce: {
      for (std::size_t i = 0; i < count; ++i) store_value(b.hsend, i, o.dtype, pattern(me, i, o.dtype));
      b.to_device();
      issue(c, o, b, count)->wait();
      b.from_device();
      const char* out = o.inplace ? b.hsend : b.hrecv;
      for (std::size_t i = 0; i < count; ++i)
        wrong += load_value(out, i, o.dtype) != expected_reduction(o, n, i);
      break;
    }
    case Coll::broadcast: {
      char* buf = o.inplace ? b.hsend : b.hrecv;
      for (std::size_t i = 0; i < count; ++i)
        store_value(buf, i, o.dtype, me == o.root ? pattern(me, i, o.dtype) : -1);
      b.to_device();
      issue(c, o, b, count)->wait();
      b.from_device();
      for (std::size_t i = 0; i < count; ++i)
        wrong += load_value(buf, i, o.dtype) != pattern(o.root, i, o.dtype);
      break;
    }
    case Coll::allgather: {
      char* in = o.inplace ? b.hrecv + off * esz : b.hsend;
      for (std::size_t i = 0; i < count; ++i) store_value(in, i, o.dtype, pattern(me, i, o.dtype));
      b.to_device();
      issue(c, o, b, count)->wait();
      b.from_device();
      for (int q = 0; q < n; ++q)
        for (std::size_t i = 0; i < count; ++i)
          wrong += load_value(b.hrecv, static_cast<std::size_t>(q) * count + i, o.dtype) !=
                   pattern(q, i, o.dtype);
      break;
    }
    case Coll::reduce_scatter: {
      for (std::size_t i = 0; i < count * static_cast<std::size_t>(n); ++i)
        store_value(b.hsend, i, o.dtype, pattern(me, i, o.dtype));
      b.to_device();
      issue(c, o, b, count)->wait();
      b.from_device();
      const char* out = o.inplace ? b.hsend + off * esz : b.hrecv;
      for (std::size_t i = 0; i < count; ++i)
        wrong += load_value(out, i, o.dtype) != expected_reduction(o, n, off + i);
      break;
    }
  }
  return wrong;
}

struct Row {
  std::size_t size, count;
  double time_us, algbw, busbw;
  std::int64_t wrong;
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    auto comm = init_process_group(o.comm);
    Communicator& c = *comm;
    const int n = c.size();
    if (o.bind) {
      const int local_rank = LaunchInfo::from_env().local_rank;
      cpu_set_t all, one;
      sched_getaffinity(0, sizeof(all), &all);
      const int ncpu = CPU_COUNT(&all);
      int want = local_rank % std::max(ncpu, 1), seen = 0;
      CPU_ZERO(&one);
      for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &all) && seen++ == want) CPU_SET(cpu, &one);
      sched_setaffinity(0, sizeof(one), &one);
    }
    COHORT_CHECK(o.root < n, "--root ", o.root, " is not a rank of this group of ", n);
    if (!o.calibrate.empty()) return calibrate(c, o.calibrate, o.calibrate_op);
    // --model: the file's predictions for this job's size and hosts (calibrated on the same).
    CostModel model;
    int hosts = 1;
    if (!o.model.empty()) {
      COHORT_CHECK(o.coll == Coll::allreduce, "--model: the cost model covers allreduce only");
      COHORT_CHECK(c.capabilities().host_memory, "--model: backend ", c.backend(),
                   " takes no host memory");
      hosts = hosts_of(c).hosts();
      model = load_cost_model(o.model);
      check_cost_model_fits(model, o.model, n, hosts);
    }
    const std::size_t esz = dtype_size(o.dtype);
    const bool reduces = o.coll == Coll::allreduce || o.coll == Coll::reduce_scatter;
    const double bus = o.coll == Coll::allreduce   ? 2.0 * (n - 1) / n
                       : o.coll == Coll::broadcast ? 1.0
                                                   : static_cast<double>(n - 1) / n;
    // Buffers for the largest size, touched once so that page faults stay out of the timing.
    const std::size_t cap = (o.max_bytes / esz + 64) * esz;
    auto alloc = [&](std::size_t bytes) {
      char* p = static_cast<char*>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096));
      COHORT_CHECK(p, "cannot allocate ", bytes, " bytes");
      std::memset(p, 0, bytes);
      return p;
    };
    std::unique_ptr<char, void (*)(void*)> send(nullptr, std::free), recv(nullptr, std::free);
    std::unique_ptr<CommBuffer> reg_send, reg_recv;
    if (o.registered) {
      COHORT_CHECK(c.capabilities().host_memory, "-R 1: backend ", c.backend(),
                   " takes no host memory");
      reg_send = c.alloc_buffer(cap);
      reg_recv = c.alloc_buffer(cap);
    } else {
      send.reset(alloc(cap));
      recv.reset(alloc(cap));
    }
    char* hsend = o.registered ? static_cast<char*>(reg_send->data()) : send.get();
    char* hrecv = o.registered ? static_cast<char*>(reg_recv->data()) : recv.get();
    Device* gpu = c.capabilities().host_memory ? nullptr : &cohort::device("cuda");
    Buffers bufs{cap, hsend, hrecv, hsend, hrecv, gpu};
    if (gpu) {
      bufs.send = static_cast<char*>(gpu->allocate(cap));
      bufs.recv = static_cast<char*>(gpu->allocate(cap));
      bufs.to_device();
    }

    std::vector<Row> rows;
    if (c.rank() == 0 && !o.json) {
      std::printf("# cohort-bench: %s, backend %s, %d rank%s, %s, %s, %s%s, %d iters (%s), %d warmup%s\n",
                  coll_name(o.coll), c.backend().c_str(), n, n == 1 ? "" : "s",
                  type_name(o.dtype), reduces ? reduce_op_name(o.redop) : "no reduction",
                  o.inplace ? "in place" : "out of place",
                  o.registered ? ", alloc_buffer memory" : "", o.iters,
                  o.blocking ? "each waited for" : "issued, then waited for", o.warmup,
                  gpu ? (", " + gpu->name() + " buffers").c_str() : "");
      if (!o.model.empty())
        std::printf("# model: %s (%s); predicted us per algorithm on %d ranks, %d host(s)\n",
                    o.model.c_str(), model.note.c_str(), n, hosts);
      std::printf("#\n# %10s %12s %9s %7s %10s %8s %8s %7s%s\n", "size", "count", "type", "redop",
                  "time", "algbw", "busbw", "#wrong",
                  o.model.empty() ? "" : "       ring         rd        rab       hier  pick");
      std::printf("# %10s %12s %9s %7s %10s %8s %8s %7s\n", "(B)", "(elements)", "", "", "(us)",
                  "(GB/s)", "(GB/s)", "");
      std::fflush(stdout);
    }
    std::vector<WorkHandle> handles(static_cast<std::size_t>(o.iters));
    for (double sz = static_cast<double>(o.min_bytes); sz <= static_cast<double>(o.max_bytes) * 1.0000001;
         sz *= o.factor) {
      // Elements per rank block, and the size nccl-tests would print for it.
      std::size_t total = static_cast<std::size_t>(sz) / esz;
      std::size_t block = total;
      if (o.coll == Coll::allgather || o.coll == Coll::reduce_scatter) {
        block = total / static_cast<std::size_t>(n);
        total = block * static_cast<std::size_t>(n);
      }
      for (int i = 0; i < o.warmup; ++i) issue(c, o, bufs, block)->wait();
      c.barrier()->wait();
      const auto t0 = Clock::now();
      if (o.blocking) {
        for (int i = 0; i < o.iters; ++i) issue(c, o, bufs, block)->wait();
      } else {
        for (int i = 0; i < o.iters; ++i) handles[static_cast<std::size_t>(i)] = issue(c, o, bufs, block);
        for (auto& h : handles) h->wait();
      }
      double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / o.iters;
      reduce_value(c, gpu, &us, DType::f64, ReduceOp::max);
      std::int64_t wrong = o.check ? check(c, o, bufs, block) : 0;
      reduce_value(c, gpu, &wrong, DType::i64, ReduceOp::sum);
      const double bytes = static_cast<double>(total * esz);
      const double algbw = us > 0 ? bytes / (us * 1e3) : 0;
      const Row row{total * esz, total, us, algbw, algbw * bus, o.check ? wrong : -1};
      rows.push_back(row);
      if (c.rank() == 0 && !o.json) {
        std::printf("  %10zu %12zu %9s %7s %10.2f %8.2f %8.2f %7s", row.size, row.count,
                    type_name(o.dtype), reduces ? reduce_op_name(o.redop) : "none", row.time_us,
                    row.algbw, row.busbw, o.check ? std::to_string(row.wrong).c_str() : "N/A");
        if (!o.model.empty()) {
          const double b = static_cast<double>(row.size);
          for (AllreduceAlgo a : allreduce_algos())
            std::printf(" %10.2f", predict_allreduce(model, a, b, n, hosts) * 1e6);
          const char* pick = allreduce_algo_name(pick_allreduce(model, b, n, hosts));
          std::printf("  %s", pick);
        }
        std::printf("\n");
        std::fflush(stdout);
      }
    }
    std::int64_t total_wrong = 0;
    double busbw_sum = 0;
    for (const auto& r : rows) {
      total_wrong += r.wrong > 0 ? r.wrong : 0;
      busbw_sum += r.busbw;
    }
    if (c.rank() == 0 && o.json) {
      std::printf("{\"tool\": \"cohort-bench\", \"op\": \"%s\", \"backend\": \"%s\", "
                  "\"world_size\": %d, \"type\": \"%s\", \"redop\": \"%s\", \"inplace\": %s, "
                  "\"iters\": %d, \"warmup\": %d, \"blocking\": %s, \"registered\": %s, \"rows\": [",
                  coll_name(o.coll), c.backend().c_str(), n, type_name(o.dtype),
                  reduces ? reduce_op_name(o.redop) : "none", o.inplace ? "true" : "false",
                  o.iters, o.warmup, o.blocking ? "true" : "false",
                  o.registered ? "true" : "false");
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        std::printf("%s\n  {\"size\": %zu, \"count\": %zu, \"time_us\": %.3f, \"algbw\": %.4f, "
                    "\"busbw\": %.4f, \"wrong\": %lld}",
                    i ? "," : "", r.size, r.count, r.time_us, r.algbw, r.busbw,
                    static_cast<long long>(r.wrong));
      }
      std::printf("\n]}\n");
    } else if (c.rank() == 0) {
      std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(total_wrong),
                  total_wrong ? "FAILED" : "OK");
      std::printf("# Avg bus bandwidth    : %.4f\n#\n",
                  rows.empty() ? 0.0 : busbw_sum / static_cast<double>(rows.size()));
    }
    std::fflush(stdout);
    if (gpu) {
      gpu->deallocate(bufs.send, cap);
      gpu->deallocate(bufs.recv, cap);
    }
    return total_wrong ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cohort-bench: %s\n", e.what());
    return 1;
  }
}
