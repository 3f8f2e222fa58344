// Save and load times of a sharded checkpoint (train/sharded_checkpoint.hpp) against plain DDP's
// consolidated save: a zoo model (default ResNet-50) with Adam on every rank of a launcher's group,
// one step of synthetic data (so that Adam's buffers exist), then
//   - DDP (zero_stage 0): save_checkpoint by rank 0, the whole model and optimizer state in one
//     pair of files (what a DDP user writes today), and snapshot_checkpoint's copy alone;
//   - ZeRO stage S: save_sharded_checkpoint (every rank its shard, rank 0 the index and the
//     publication; the slowest rank's time), snapshot_sharded_checkpoint's copy alone (what a
//     background save blocks training for), load_sharded_checkpoint (the slowest rank; its bytes
//     read and host memory staged), and consolidate_sharded_checkpoint into one file (rank 0).
// One table row, printed by rank 0. Files go to DIR (default /tmp), removed afterwards.
//
//   cohortrun --nproc-per-node N build/bin/sharded_checkpoint_bench [MODEL] [STAGE] [DIR]
//   (bench/sharded_checkpoint.sh runs DDP and ZeRO at 2 and 4 ranks)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cohort/cohort.hpp"
#include "zero_setup.hpp"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cohort;
  const std::string name = argc > 1 ? argv[1] : "resnet50";
  const int stage = argc > 2 ? std::atoi(argv[2]) : 0;
  const std::string root = argc > 3 ? argv[3] : "/tmp";
  try {
    Device& dev = host_device();
    auto comm = comm::init_process_group();
    const int n = comm->size(), rank = comm->rank();
    const auto w = zero_bench::wrap_model(name, stage, comm, dev);
    const auto& model = w.model;
    const auto& ddp = w.ddp;
    const std::int64_t P = model->num_parameters();
    auto opt = zero_bench::adam(w, stage);
    nn::CrossEntropyLoss loss;
    const auto [x, y] = zero_bench::batch(rank, n, dev);
    opt->zero_grad();
    loss.forward(ddp->forward(x), y);
    ddp->backward(loss.backward(), false);
    opt->step();

    const std::string dir =
        root + "/cohort-sharded-bench-" + std::to_string(n) + "-" + std::to_string(stage);
    if (rank == 0) std::filesystem::create_directories(dir);
    comm->barrier()->wait();
    const train::TrainingProgress progress{0, 1};
    // The slowest rank's time of `fn` (a collective step: every rank runs it).
    auto timed = [&](auto&& fn) {
      comm->barrier()->wait();
      const auto t0 = std::chrono::steady_clock::now();
      fn();
      double s = seconds_since(t0);
      comm->allreduce(&s, &s, 1, DType::f64, comm::ReduceOp::max)->wait();
      return s;
    };
    char line[512];
    const double mb = 1e6;
    if (stage == 0) {
      std::size_t bytes = 0;
      const double copy = timed([&] {
        if (rank == 0) bytes = train::snapshot_checkpoint(*model, *opt, nullptr, progress).bytes();
      });
      const double save = timed([&] {
        if (rank == 0)
          train::save_checkpoint(dir + "/ckpt.safetensors", *model, *opt, nullptr, progress);
      });
      const double load = timed([&] {
        if (rank == 0) train::load_checkpoint(dir + "/ckpt.safetensors", *model, *opt, nullptr);
      });
      std::snprintf(
          line, sizeof line,
          "| %s | %d | DDP (rank 0 writes all) | %.0f | %.3f | %.1f | %.3f | %.0f | - | - |",
          name.c_str(), n, bytes / mb, save, 1e3 * copy, load, bytes / mb);
    } else {
      std::size_t bytes = 0;
      const double copy = timed([&] {
        bytes = train::snapshot_sharded_checkpoint(dir + "/sharded", *ddp, *opt, nullptr, progress)
                    .bytes();
      });
      const double save = timed(
          [&] { train::save_sharded_checkpoint(dir + "/sharded", *ddp, *opt, nullptr, progress); });
      train::ShardedLoad got;
      const double load = timed(
          [&] { got = train::load_sharded_checkpoint(dir + "/sharded", *ddp, *opt, nullptr); });
      double most[3] = {static_cast<double>(bytes), static_cast<double>(got.bytes_read),
                        static_cast<double>(got.staged_bytes)};
      comm->allreduce(most, most, 3, DType::f64, comm::ReduceOp::max)->wait();
      const double consolidate = timed([&] {
        if (rank == 0)
          train::consolidate_sharded_checkpoint(dir + "/sharded", dir + "/full.safetensors", true);
      });
      std::snprintf(
          line, sizeof line,
          "| %s | %d | ZeRO-%d (each rank its shard) | %.0f | %.3f | %.1f | %.3f | %.0f | "
          "%.0f | %.3f |",
          name.c_str(), n, stage, most[0] / mb, save, 1e3 * copy, load, most[1] / mb, most[2] / mb,
          consolidate);
    }
    comm->barrier()->wait();
    if (rank == 0) {
      std::printf("sharded_checkpoint_bench: %s (%lld parameters), Adam, %d rank%s\n", name.c_str(),
                  static_cast<long long>(P), n, n > 1 ? "s" : "");
      std::printf("%s\n", line);
      std::filesystem::remove_all(dir);
    }
    comm->barrier()->wait();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sharded_checkpoint_bench: %s\n", e.what());
    return 1;
  }
}
