// The backend-swap experiment: the same short data-parallel training and the same all-reduce
// sweep on every communicator backend this build has and this group can use, in one job, one
// table. DDP runs in deterministic mode (buckets all-gathered and summed in rank order), so every
// backend must end with bit-identical weights; the table says whether they did.
//
//   build/bin/cohortrun --nproc-per-node 2 build/bin/backend_swap [--steps N] [--batch-size B]
//       [--plot swap.png]
//   build/bin/backend_swap            (one rank: self, shm and ucx at world size 1)
//
// nccl joins where every rank has a GPU of its own (it is listed as skipped, with the reason,
// otherwise). It takes GPU memory only while this experiment trains on the host, so its row has
// the all-reduce sweep (on GPU buffers) and no training columns.
//
// Needs a store address (MASTER_ADDR/MASTER_PORT, as cohortrun and torchrun set) when there are
// several ranks: each backend gets its own key prefix in that one store.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "cohort/collectives/registry.hpp"
#include "cohort/data/dataloader.hpp"
#include "cohort/data/synthetic.hpp"
#include "cohort/devices.hpp"
#include "cohort/layers.hpp"
#include "cohort/optim.hpp"
#include "cohort/parallel/ddp.hpp"

using namespace cohort;

namespace {
struct Row {
  std::string backend;
  double images_per_s = 0, comm_ms = 0, overlap_ms = 0, final_loss = 0;
  double busbw_1m = 0, busbw_16m = 0;
  std::string digest;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

nn::ModulePtr model(Device& dev) {
  nn::manual_seed(42);
  return nn::make<nn::Sequential>(std::vector<std::pair<std::string, nn::ModulePtr>>{
      {"conv1", nn::make<nn::Conv2d>(nn::Conv2dOptions(1, 16, 3), dev)},
      {"relu1", nn::make<nn::ReLU>()},
      {"pool", nn::make<nn::MaxPool2d>(nn::MaxPool2dOptions(2))},
      {"flatten", nn::make<nn::Flatten>()},
      {"fc1", nn::make<nn::Linear>(16 * 13 * 13, 128, dev)},
      {"relu2", nn::make<nn::ReLU>()},
      {"fc2", nn::make<nn::Linear>(128, 10, dev)}});
}

// busbw of a float32 sum all-reduce of `bytes`, as nccl-tests defines it.
// On a backend that takes device memory only (nccl), the buffer is on this rank's GPU.
double allreduce_busbw(comm::Communicator& c, std::size_t bytes, int iters) {
  std::vector<float> host(bytes / 4, 1.0f);
  Device* gpu = c.capabilities().host_memory ? nullptr : &cohort::device("cuda");
  float* buf = host.data();
  if (gpu) {
    buf = static_cast<float*>(gpu->allocate(bytes));
    gpu->copy_from_host(buf, host.data(), bytes);
  }
  c.allreduce(buf, buf, host.size(), DType::f32, comm::ReduceOp::sum)->wait();
  c.barrier()->wait();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i)
    c.allreduce(buf, buf, host.size(), DType::f32, comm::ReduceOp::sum)->wait();
  if (gpu) gpu->deallocate(buf, bytes);
  const double t = seconds_since(t0) / iters;
  const int n = c.size();
  return static_cast<double>(bytes) / t / 1e9 * (n > 1 ? 2.0 * (n - 1) / n : 1.0);
}

Row run(const std::string& backend, const comm::ProcessGroupInfo& info,
        std::shared_ptr<comm::Store> store, std::int64_t steps, std::int64_t batch) {
  std::shared_ptr<comm::Communicator> c =
      comm::create_communicator(backend, info, comm::make_prefix_store(store, backend + "/"));
  if (!c->capabilities().host_memory) {
    // nccl takes GPU memory only, and this experiment trains on the host (so that every row
    // trains the same bits): only the all-reduce sweep runs (on GPU buffers); the training
    // columns stay empty. (DDP itself runs on nccl with the model on the GPU: mnist_cnn.)
    Row r;
    r.backend = backend;
    r.images_per_s = r.comm_ms = r.overlap_ms = r.final_loss = std::nan("");
    r.digest = "-";
    r.busbw_1m = allreduce_busbw(*c, 1 << 20, 50);
    r.busbw_16m = allreduce_busbw(*c, 16 << 20, 5);
    c->barrier()->wait();
    return r;
  }
  auto& dev = host_device();
  auto net = model(dev);
  parallel::DDPOptions o;
  o.deterministic = true;  // fixed reduction order: every backend must agree bit for bit
  o.first_bucket_mb = 0.05;
  parallel::DistributedDataParallel ddp(net, c, o);  // trained in place of net
  auto ds = std::make_shared<data::SyntheticDataset>(8192, Shape{1, 28, 28}, 10, 3);
  data::DataLoaderOptions lo;
  lo.batch_size = batch;
  lo.shuffle = true;
  lo.seed = 5;
  lo.rank = c->rank();
  lo.world_size = c->size();
  data::DataLoader loader(ds, lo, {}, dev);
  optim::SGDOptions so;
  so.lr = 0.05;
  so.momentum = 0.9;
  optim::SGD sgd(ddp.parameters(), so);
  nn::CrossEntropyLoss loss;
  data::Batch b;
  c->barrier()->wait();
  const auto t0 = std::chrono::steady_clock::now();
  double last = 0;
  for (std::int64_t s = 0; s < steps; ++s) {
    if (!loader.next(b)) {
      loader.set_epoch(s);
      loader.next(b);
    }
    loss.forward(ddp.forward(b.images), b.labels);
    ddp.backward(loss.backward(), false);  // returns with averaged gradients
    sgd.step();
    sgd.zero_grad();
    last = loss.value();
  }
  const double elapsed = seconds_since(t0);
  c->allreduce(&last, &last, 1, DType::f64, comm::ReduceOp::avg)->wait();
  Row r;
  r.backend = backend;
  r.images_per_s = static_cast<double>(steps * batch * c->size()) / elapsed;
  const auto st = ddp.stats();
  r.comm_ms = st.steps ? 1e3 * st.comm_wait_s / static_cast<double>(st.steps) : 0;
  r.overlap_ms = st.steps ? 1e3 * st.overlap_s / static_cast<double>(st.steps) : 0;
  r.final_loss = last;
  COHORT_CHECK(ddp.weights_identical_across_ranks(), backend,
               ": ranks ended with different weights");
  r.digest = ddp.weights_digest();
  r.busbw_1m = allreduce_busbw(*c, 1 << 20, 50);
  r.busbw_16m = allreduce_busbw(*c, 16 << 20, 5);
  c->barrier()->wait();
  return r;
}
}  // namespace

int main(int argc, char** argv) {
  std::int64_t steps = 40, batch = 32;
  std::string plot;
  CLI::App app{"the same training and all-reduce sweep on every communicator backend",
               "backend_swap"};
  app.add_option("--steps", steps, "training steps per backend")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30));
  app.add_option("--batch-size", batch, "batch size per rank")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  app.add_option("--plot", plot, "write a PNG bar chart (needs python3-matplotlib)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "backend_swap: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    const auto info = comm::ProcessGroupInfo::from_env();
    std::shared_ptr<comm::Store> store;
    if (info.world_size == 1) {
      store = comm::make_memory_store();
    } else {
      COHORT_CHECK(!info.master_addr.empty() && info.master_port > 0, info.str(),
                   ": backend_swap needs MASTER_ADDR and MASTER_PORT (launch it with cohortrun)");
      store = comm::make_tcp_store(info.master_addr, info.master_port, info.rank == 0,
                                   std::chrono::seconds(120));
    }
    std::vector<Row> rows;
    std::vector<std::string> skipped;
    for (const auto& f : comm::communicator_factories()) {
      std::string why;
      if (!f.available(info, &why)) {
        skipped.push_back(f.name + " (" + why + ")");
        continue;
      }
      rows.push_back(run(f.name, info, store, steps, batch));
    }
    if (info.rank != 0) return 0;
    std::printf("host threads: %d per rank (%s)\n", cohort::host_threads().threads,
                cohort::host_threads().reason.c_str());
    std::printf(
        "backend swap: %d rank(s), %lld steps of batch %lld per rank, deterministic DDP\n\n",
        info.world_size, static_cast<long long>(steps), static_cast<long long>(batch));
    std::printf("%-8s %10s %12s %12s %11s %12s %13s %-17s %s\n", "backend", "images/s",
                "comm ms/step", "overlap ms", "final loss", "busbw 1MiB", "busbw 16MiB",
                "weights digest", "bit-identical");
    for (const auto& r : rows)
      std::printf("%-8s %10.0f %12.3f %12.3f %11.6f %10.2f GB/s %9.2f GB/s %-17s %s\n",
                  r.backend.c_str(), r.images_per_s, r.comm_ms, r.overlap_ms, r.final_loss,
                  r.busbw_1m, r.busbw_16m, r.digest.c_str(),
                  r.digest == "-"                  ? "(no training)"
                  : r.digest == rows.back().digest ? "yes"
                                                   : "NO");
    for (const auto& s : skipped) std::printf("skipped: %s\n", s.c_str());
    bool same = true;
    for (const auto& r : rows) same = same && (r.digest == "-" || r.digest == rows.back().digest);
    std::printf("\nfinal weights bit-identical across backends: %s\n", same ? "yes" : "NO");
    if (!plot.empty()) {
      const std::string csv = plot + ".csv";
      std::ofstream out(csv);
      out << "backend,images_per_s,comm_ms,overlap_ms,busbw_1m,busbw_16m\n";
      for (const auto& r : rows)
        out << r.backend << "," << r.images_per_s << "," << r.comm_ms << "," << r.overlap_ms << ","
            << r.busbw_1m << "," << r.busbw_16m << "\n";
      out.close();
      const std::string cmd = "/usr/bin/python3 \"" + std::string(COHORT_SOURCE_DIR) +
                              "/tools/plot_backend_swap.py\" \"" + csv + "\" \"" + plot + "\"";
      std::fflush(stdout);
      COHORT_CHECK(std::system(cmd.c_str()) == 0, "plotting failed: ", cmd);
    }
    return same ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "backend_swap: %s\n", e.what());
    return 1;
  }
}
