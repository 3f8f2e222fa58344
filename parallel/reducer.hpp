// Reducer: how one gradient bucket is averaged over the ranks, one implementation per file.
// Internal to cohort::parallel (not installed).
//
// Why it is shaped this way: DistributedDataParallel owns the bucket life cycle (which gradients
// belong to a bucket, when it is ready, issue order, polling, statistics); a Reducer owns only
// the bucket's flat buffer and the arithmetic around one collective: pack -> start -> (DDP waits)
// -> unpack the average. Five ways exist, each in its own file under reducers/:
//
//   plain.cpp          all-reduce(avg) on a flat buffer on the parameters' device, when the
//                      communicator can take that memory (host memory for shm/ucx, GPU memory
//                      for nccl or CUDA-aware ucx)
//   host_staged.cpp    the same flat bucket, all-reduced(avg) in an asynchronous host copy
//                      (HostStage), for memory the communicator cannot take (GPU parameters
//                      with a host-only communicator)
//   compressed.cpp     flat f32 bucket on the parameters' device, cast there to bf16 (then x 1/n)
//                      or f16 (x 1/n first), 16-bit sum all-reduce, cast back
//   deterministic.cpp  the same flat bucket all-gathered, summed on the host in rank order
//                      0..n-1 in f32, / n
//   sharded.cpp        ZeRO (DDPOptions::zero_stage): the bucket reduce-scattered in n equal
//                      chunks, each rank keeping the average of its own (deterministic: summed
//                      in rank order as above)
//
// make_reducer() picks one from DDPOptions and the communicator's capabilities. Every reducer
// calls wait_for_compute() (or, for an asynchronous host copy, order_after_compute()) before the
// communicator reads gradients, so the ordering "the gradients of this bucket are written before
// communication reads them" lives in one file (wait_for_compute.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "cohort/collectives/communicator.hpp"
#include "cohort/core/device.hpp"
#include "cohort/core/stream.hpp"
#include "cohort/core/tensor.hpp"
#include "cohort/parallel/ddp.hpp"

namespace cohort::parallel::detail {

class Reducer {
 public:
  virtual ~Reducer() = default;
  // "plain", "host_staged", "bf16", "f16", "deterministic" (traces, tests, docs).
  virtual const char* name() const = 0;
  // Copies `grads` (the bucket's f32 gradients in member order, numel() elements in all, all on
  // the device the reducer was made for) into the flat buffer, waits for the compute that wrote
  // them (wait_for_compute) and starts the collective. Does not wait for the collective; the
  // returned Work must be done (test() true or wait() returned) before complete().
  virtual comm::WorkHandle launch(const std::vector<Tensor>& grads) = 0;
  // The flat f32 bucket on the parameters' device that the gradients may be views into
  // (DDPOptions::gradient_as_bucket_view); every reducer has one. launch() and complete() skip
  // the copy of every gradient that is such a view.
  // Stage 2's reducer has one only from acquire_bucket() (or launch()) to complete() (undefined
  // otherwise).
  virtual Tensor flat_bucket() const = 0;
  // Stage 2: makes flat_bucket() exist (zeros) until the next complete(); others: no-op.
  virtual void acquire_bucket() {}
  // Sharded reducers: this rank's chunk of the averaged gradient (the optimizer's view), a view
  // of the bucket (stage 1) or a persistent chunk-sized tensor (stage 2); others: undefined.
  virtual Tensor owned_gradient() const { return Tensor(); }
  // Whether the collective of the last launch() has been handed to the communicator (a staged
  // one starts only once its download has landed: HostStage). DDP tests the next bucket's Work
  // only after this one's collective is issued, so collectives start in bucket order on every
  // rank.
  virtual bool collective_issued() const { return true; }
  // Writes the average over ranks into `grads` (the same tensors as launch): done when it
  // returns on a host device; on a GPU, enqueued on the compute stream (later ops see it).
  virtual void complete(const std::vector<Tensor>& grads) = 0;
};

// The reducer for a bucket of `numel` f32 elements on `dev`: deterministic if
// options.deterministic, else bf16 / f16 if options.bf16_compression / f16_compression (the
// constructor rejects both at once), else plain when `comm` can use
// `dev`'s memory, else host_staged. `comm` must outlive the reducer. ZeRO: `comm` is the shard
// group and `replica` the group of this rank's replicas (hybrid sharding; else null).
std::unique_ptr<Reducer> make_reducer(const DDPOptions& options, comm::Communicator& comm,
                                      Device& dev, std::int64_t numel,
                                      comm::Communicator* replica = nullptr);

std::unique_ptr<Reducer> make_plain_reducer(comm::Communicator& comm, Device& dev,
                                            std::int64_t numel);
std::unique_ptr<Reducer> make_host_staged_reducer(comm::Communicator& comm, Device& dev,
                                                  std::int64_t numel);
// wire: DType::bf16 or DType::f16; throws if `comm` does not reduce it.
std::unique_ptr<Reducer> make_compressed_reducer(comm::Communicator& comm, Device& dev,
                                                 std::int64_t numel, DType wire);
std::unique_ptr<Reducer> make_deterministic_reducer(comm::Communicator& comm, Device& dev,
                                                    std::int64_t numel);

// ZeRO (DDPOptions::zero_stage): the bucket reduce-scattered into equal chunks, rank k's chunk
// its average and the rest zeroed after complete(); numel a multiple of comm.size(), host memory
// only. deterministic: the chunks summed in rank order, deterministic.cpp's bits (sharded.cpp).
// release (stage 2): the bucket exists only from acquire_bucket() / launch() to complete(),
// which adds the average to owned_gradient() instead and leaves `grads` alone.
// replica (hybrid sharding, DDPOptions::shard_group_size; null otherwise): the chunk is then
// averaged over the replica group as well, so it is the average over every rank of both groups
// (deterministic: all of their contributions summed in global rank order, replica group g's
// shard rank j being global rank g x comm.size() + j: a deterministic DDP's bits).
std::unique_ptr<Reducer> make_sharded_reducer(comm::Communicator& comm, Device& dev,
                                              std::int64_t numel, bool deterministic, bool release,
                                              comm::Communicator* replica = nullptr);

// Whether `comm` can read and write `dev`'s memory directly.
bool comm_can_use(const comm::Communicator& comm, const Device& dev);

// Makes sure `comm` reads `dev`'s memory only after everything already queued on `dev` that
// writes it (gradients, buffers, parameters): nothing to do for device memory and a
// stream-ordered communicator (nccl orders its stream after compute itself); otherwise the host
// waits for an event on the compute stream. The one place that orders communication after
// compute (wait_for_compute.cpp).
void wait_for_compute(const comm::Communicator& comm, Device& dev);

// Makes work enqueued on `stream` from now on wait for everything already queued on `dev`'s
// compute stream; the host does not block. The asynchronous form of wait_for_compute, for
// copies that run on a stream of their own (HostStage).
void order_after_compute(Device& dev, Stream& stream);

}  // namespace cohort::parallel::detail
