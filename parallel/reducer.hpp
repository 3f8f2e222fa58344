// Reducer: how one gradient bucket is averaged over the ranks, one implementation per file.
// Internal to cohort::parallel (not installed).
//
// Why it is shaped this way: DistributedDataParallel owns the bucket life cycle (which gradients
// belong to a bucket, when it is ready, issue order, polling, statistics); a Reducer owns only
// the bucket's flat buffer and the arithmetic around one collective: pack -> start -> (DDP waits)
// -> unpack the average. Four ways exist, each in its own file under reducers/:
//
//   plain.cpp          all-reduce(avg) on a flat buffer on the parameters' device, when the
//                      communicator can take that memory (host memory for shm/ucx, GPU memory
//                      for nccl or CUDA-aware ucx)
//   host_staged.cpp    the same all-reduce(avg) on a host copy, for memory the communicator
//                      cannot take (GPU parameters with a host-only communicator)
//   compressed.cpp     flat f32 bucket on the parameters' device, cast there to bf16 (then x 1/n)
//                      or f16 (x 1/n first), 16-bit sum all-reduce, cast back
//   deterministic.cpp  host copy all-gathered, summed in rank order 0..n-1 in f32, / n
//
// make_reducer() picks one from DDPOptions and the communicator's capabilities. Every reducer
// calls wait_for_compute() before the communicator reads gradients, so the ordering "the
// gradients of this bucket are written before communication reads them" lives in one function.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cohort/collectives/communicator.hpp"
#include "cohort/core/device.hpp"
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
  // The flat f32 bucket the collective runs on, on the parameters' device, when the gradients
  // may be views into it (DDPOptions::gradient_as_bucket_view): plain, bf16 and f16; undefined
  // for the reducers that work on a host copy (host_staged, deterministic). launch() and complete() skip the copy
  // of every gradient that is such a view.
  virtual Tensor flat_bucket() const { return Tensor(); }
  // Writes the average over ranks into `grads` (the same tensors as launch). Blocks.
  virtual void complete(const std::vector<Tensor>& grads) = 0;
};

// The reducer for a bucket of `numel` f32 elements on `dev`: deterministic if
// options.deterministic, else bf16 / f16 if options.bf16_compression / f16_compression (the
// constructor rejects both at once), else plain when `comm` can use
// `dev`'s memory, else host_staged. `comm` must outlive the reducer.
std::unique_ptr<Reducer> make_reducer(const DDPOptions& options, comm::Communicator& comm,
                                      Device& dev, std::int64_t numel);

std::unique_ptr<Reducer> make_plain_reducer(comm::Communicator& comm, Device& dev,
                                            std::int64_t numel);
std::unique_ptr<Reducer> make_host_staged_reducer(comm::Communicator& comm, std::int64_t numel);
// wire: DType::bf16 or DType::f16; throws if `comm` does not reduce it.
std::unique_ptr<Reducer> make_compressed_reducer(comm::Communicator& comm, Device& dev,
                                                 std::int64_t numel, DType wire);
std::unique_ptr<Reducer> make_deterministic_reducer(comm::Communicator& comm, std::int64_t numel);

// Whether `comm` can read and write `dev`'s memory directly.
bool comm_can_use(const comm::Communicator& comm, const Device& dev);

// Returns once everything already queued on `dev` that writes memory (gradients, buffers,
// parameters) has landed, so a communicator may read that memory. The one place that orders
// communication after compute (wait_for_compute.cpp); blocks.
void wait_for_compute(Device& dev);

// Host staging shared by the host reducers (reducers/staging.cpp): the gradients, back to back,
// into / out of `host` (sum of their numel() floats). Blocking copies.
void gather_to_host(const std::vector<Tensor>& grads, float* host);
void scatter_from_host(const float* host, const std::vector<Tensor>& grads);

// The same for a flat f32 bucket on the gradients' device (plain and compressed reducers), as
// device copies, skipping every gradient that already is its view into `flat`
// (gradient_as_bucket_view).
void pack_into_bucket(const std::vector<Tensor>& grads, Tensor& flat);
void unpack_from_bucket(const Tensor& flat, const std::vector<Tensor>& grads);

}  // namespace cohort::parallel::detail
