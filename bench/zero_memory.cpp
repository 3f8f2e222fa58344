// Model-state memory per rank, DDP against ZeRO stages 1, 2 and 3, next to the formula: a zoo model
// (default ResNet-50) with Adam on every rank of a launcher's group, a few steps of synthetic
// data, and per rank the bytes of parameters (the host allocator once the DDP is built, less the
// gradient shards at stages 2 and 3; at stage 3 the value shards; batch norm's running statistics
// included), gradients (DDP's and stage 1's buckets: communicator memory, counted from their
// size; stages 2 and 3: the shards in the allocator), optimizer state (what the host allocator
// holds more after the first step, before which one forward and backward warmed every cache),
// backward's peak (the allocator's peak from the second step's forward to the end of its optimizer
// step, activations and the buckets in flight included, at stage 3 the gathered units alive, plus
// the communicator buckets of DDP and stage 1) and the peak resident set of the process (getrusage,
// everything included). The allocator's bytes are the requested ones (MemoryStats::bytes_requested,
// before its rounding to size classes: what tensor sizes predict). The formula (f32, P parameters,
// n ranks): DDP 4P + 4P + 8P; stage 1 4P + 4P + 8P/n; stage 2 4P + 4P/n + 8P/n; stage 3 4P/n + 4P/n
// + 8P/n.
//
//   cohortrun --nproc-per-node N build/bin/zero_memory [MODEL] [ZERO_STAGE]  (bench/zero_memory.sh)
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cohort/cohort.hpp"
#include "zero_setup.hpp"

int main(int argc, char** argv) {
  using namespace cohort;
  const std::string name = argc > 1 ? argv[1] : "resnet50";
  const int stage = argc > 2 ? std::atoi(argv[2]) : 0;
  try {
    Device& dev = host_device();
    auto comm = comm::init_process_group();
    const int n = comm->size(), rank = comm->rank();
    const std::size_t start = dev.memory_stats().bytes_requested;
    const auto w = zero_bench::wrap_model(name, stage, comm, dev);
    const auto& model = w.model;
    const auto& ddp = w.ddp;
    const std::int64_t P = model->num_parameters();
    // The model's own gradient tensors are gone now (views into the buckets, or released at
    // stages 2 and 3): what the allocator holds for the model is its parameters (at stage 3 their
    // shards) and batch norm's buffers, and at stages 2 and 3 the gradient shards.
    const bool sharded_grads = stage >= 2 && n > 1;
    const std::size_t shard_bytes =
        sharded_grads ? static_cast<std::size_t>(ddp->owned_elements()) * sizeof(float) : 0;
    const std::size_t params_bytes = dev.memory_stats().bytes_requested - start - shard_bytes;
    auto opt = zero_bench::adam(w, stage);
    nn::CrossEntropyLoss loss;
    std::size_t state_bytes = 0, peak_bytes = 0;
    for (int step = 0; step < 3; ++step) {
      const auto [x, y] = zero_bench::batch(rank, n, dev);
      opt->zero_grad();
      if (step == 1) dev.reset_peak_memory_stats();
      loss.forward(ddp->forward(x), y);
      ddp->backward(loss.backward(), false);
      const std::size_t before = dev.memory_stats().bytes_requested;
      opt->step();
      if (step == 0) state_bytes = dev.memory_stats().bytes_requested - before;
      if (step == 1) peak_bytes = dev.memory_stats().peak_requested - start;
    }
    // Gradients: DDP's and stage 1's buckets (the gradients are views into them; padding
    // included), stage 2's shards.
    const std::size_t grad_bytes =
        sharded_grads ? shard_bytes
                      : static_cast<std::size_t>(ddp->bucket_elements()) * sizeof(float);
    if (!sharded_grads) peak_bytes += grad_bytes;  // communicator memory, outside the allocator
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    const double mib = 1024.0 * 1024.0;
    const double measured = static_cast<double>(params_bytes + grad_bytes + state_bytes);
    const double formula = (stage >= 3 ? 4.0 * P / n : 4.0 * P) +
                           (stage >= 2 ? 4.0 * P / n : 4.0 * P) +
                           (stage > 0 ? 8.0 * P / n : 8.0 * P);
    // One line per rank, gathered to rank 0 in rank order through the communicator.
    char line[512];
    std::snprintf(
        line, sizeof line,
        "| %s | %d | %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %+.2f%% | %.1f | %.0f |",
        name.c_str(), n, stage == 0 ? "DDP" : ("ZeRO-" + std::to_string(stage)).c_str(), rank,
        params_bytes / mib, grad_bytes / mib, state_bytes / mib, measured / mib, formula / mib,
        100.0 * (measured - formula) / formula, peak_bytes / mib, ru.ru_maxrss / 1024.0);
    std::vector<char> mine(sizeof line, 0), all(sizeof line * static_cast<std::size_t>(n), 0);
    std::snprintf(mine.data(), mine.size(), "%s", line);
    comm->allgather(mine.data(), all.data(), mine.size(), DType::u8)->wait();
    if (rank == 0) {
      std::printf("zero_memory: %s (%lld parameters), Adam, %d rank%s, batch 2 of 32x32\n",
                  name.c_str(), static_cast<long long>(P), n, n > 1 ? "s" : "");
      for (int r = 0; r < n; ++r) std::printf("%s\n", all.data() + static_cast<std::size_t>(r) * sizeof line);
    }
    comm->barrier()->wait();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zero_memory: %s\n", e.what());
    return 1;
  }
}
