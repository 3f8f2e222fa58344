// DistributedDataParallel: data-parallel training of one nn::Module over a comm::Communicator,
// shaped like torch.nn.parallel.DistributedDataParallel but with explicit backward.
//
// Why it is shaped this way: Module::backward fires a grad-ready hook as each parameter's
// gradient becomes final, in reverse registration order. DDP groups parameters into buckets in
// that order (the first bucket small, so communication starts early) and, from inside the hook,
// starts a bucket's asynchronous all-reduce as soon as its last gradient is final, then polls
// (Work::test()) the outstanding ones on every later hook: backends without a progress thread
// (shm) only advance on the calling thread, so polling is what lets communication overlap the
// rest of backward. finish_gradients() waits for the rest, averages, and writes the averaged
// gradients back into every Parameter::grad before the optimizer step.
//
// Contracts:
//  - Every rank must build the same model (names and shapes, checked at construction) and run the
//    same number of backward passes between finish_gradients() calls; buckets are issued in a
//    fixed order (bucket 0 first) on every rank, whatever order their gradients finish in.
//  - Parameters with requires_grad must be f32; gradients are averaged (sum / world size).
//  - Host and device tensors: when the communicator can take the parameters' memory
//    (capabilities().device_memory for a GPU, host_memory for host-accessible memory) the bucket
//    lives on that device; otherwise (and always in deterministic and bf16 modes) gradients are
//    staged through host buffers.
//  - Single-threaded: the DDP object, its hooks and finish_gradients() run on the thread that calls
//    backward.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cohort/collectives/communicator.hpp"
#include "cohort/core/tensor.hpp"
#include "cohort/layers/module.hpp"

namespace cohort::parallel {

struct DDPOptions {
  // MiB of gradient per bucket (a larger parameter gets a bucket of its own).
  double bucket_cap_mb = 25;
  // Cap of bucket 0 (the last layers' gradients): small, so communication starts early.
  double first_bucket_mb = 1;
  // forward() first copies rank 0's buffers (batch-norm running statistics) to every rank.
  bool broadcast_buffers = true;
  // All-reduce gradients as bf16 (half the bytes, about 3 significant digits), then average.
  bool bf16_compression = false;
  // Fixed reduction order: every bucket is all-gathered and summed locally in rank order
  // 0..n-1, so the result does not depend on the backend's reduction algorithm and is
  // bit-identical on shm, ucx, ... (costs n times the receive bytes of an all-reduce).
  bool deterministic = false;
};

// 16 hex digits: FNV-1a over `model`'s state_dict (names, shapes and values, read to the host).
// Equal digests mean bit-identical weights and buffers.
std::string weights_digest(const nn::Module& model);

class DistributedDataParallel {
 public:
  // Checks that every rank has the same parameter names and shapes (throws cohort::Error naming
  // the first differing parameter, both shapes and the rank, on every rank), broadcasts parameter
  // values and buffers from rank 0, builds the buckets and registers the grad-ready hook on
  // `model`. Collective: every rank must construct its DDP at the same point. Blocks.
  DistributedDataParallel(nn::ModulePtr model, std::shared_ptr<comm::Communicator> comm,
                          DDPOptions options = {});
  // Removes the grad-ready hooks this object registered (and any others on the model).
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  // model->forward(x), after sync_buffers() when options.broadcast_buffers (collective then).
  Tensor forward(const Tensor& x);
  // model->backward(grad, need_input_grad). Buckets start all-reducing as their gradients become
  // final (unless inside no_sync()); call finish_gradients() before the optimizer step.
  Tensor backward(const Tensor& grad, bool need_input_grad = false);

  // Waits for every bucket of the last synchronised backward, averages over ranks and writes the
  // averaged gradients into each parameter's grad. Buckets whose gradients never became final
  // (a parameter unused in this backward) are issued here with the gradient as it stands, so
  // ranks stay in step. No-op when no synchronised backward ran since the last call (inside
  // no_sync(), or twice in a row). Meant for Trainer::after_backward. Blocks; collective.
  void finish_gradients();

  // RAII guard: while alive, backward only accumulates gradients locally (no communication).
  // The first backward after it ends all-reduces the accumulated sum, as in PyTorch.
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallel& ddp);
    ~NoSync();
    NoSync(NoSync&& other) noexcept;
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;
    NoSync& operator=(NoSync&&) = delete;

   private:
    DistributedDataParallel* ddp_;
    bool previous_;
  };
  NoSync no_sync() { return NoSync(*this); }

  // Copies every buffer (batch-norm running statistics, counters) from rank 0. Collective; blocks.
  void sync_buffers();

  // 16 hex digits: FNV-1a over this rank's state_dict (names, shapes and values, read to host).
  std::string weights_digest() const;
  // All-gathers the 64-bit digest; true when every rank holds the same weights. Collective.
  bool weights_identical_across_ranks();

  struct Stats {
    double comm_wait_s = 0;  // time finish_gradients() waited for all-reduces after backward
    double allreduce_s = 0;  // wall time with at least one bucket in flight (issue -> completion)
    double overlap_s = 0;    // the part of allreduce_s before backward ended (hidden by backward)
    int buckets = 0;         // buckets per synchronised step
    std::int64_t steps = 0;  // synchronised steps (finish_gradients() calls that communicated)
  };
  // Totals over all steps so far (last_step(): the most recent step only).
  Stats stats() const { return total_; }
  Stats last_step() const { return last_; }

  // --- introspection (tests, docs) ---
  // Parameter names per bucket, bucket 0 first (issued first).
  std::vector<std::vector<std::string>> bucket_layout() const;
  // Parameter names in the order the grad-ready hook saw them in the last synchronised backward.
  const std::vector<std::string>& last_ready_order() const { return ready_order_; }

  nn::Module& module() { return *model_; }
  comm::Communicator& communicator() { return *comm_; }
  const DDPOptions& options() const { return opt_; }

 private:
  struct Bucket;
  void on_grad_ready(int index);
  void launch_ready_buckets();
  void launch(Bucket& b);
  void poll();
  void complete(Bucket& b);
  void check_consistency();
  void broadcast_tensor(Tensor& t);

  nn::ModulePtr model_;
  std::shared_ptr<comm::Communicator> comm_;
  DDPOptions opt_;
  std::vector<NamedParameter> params_;  // requires_grad ones, registration order
  std::vector<int> bucket_of_;          // per parameter
  std::vector<std::unique_ptr<Bucket>> buckets_;
  bool syncing_ = true;          // false inside no_sync()
  bool in_step_ = false;         // a synchronised backward started, not yet finished
  std::size_t next_launch_ = 0;  // buckets issue in index order
  double backward_start_ = 0;
  std::vector<std::string> ready_order_;
  Stats total_, last_;
};

}  // namespace cohort::parallel
