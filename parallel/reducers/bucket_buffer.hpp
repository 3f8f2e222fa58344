// A bucket's buffers (internal to cohort::parallel): where each gradient sits in the flat f32
// bucket (bucket_slot), the copies of gradients into and out of it, and HostStage, the
// asynchronous host copy of such a bucket for a communicator that cannot take device memory.
// Every reducer (reducer.hpp, reducers/) builds on these; they live apart from the Reducer
// interface because they are buffers, not ways of reducing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "cohort/collectives/communicator.hpp"
#include "cohort/core/device.hpp"
#include "cohort/core/stream.hpp"
#include "cohort/core/tensor.hpp"

namespace cohort::parallel::detail {

// A host copy of a device buffer, for a communicator that cannot take the device's memory (GPU
// parameters with shm or ucx), shared by the host_staged, compressed and deterministic reducers.
// The host memory is Communicator::alloc_buffer memory (shm reduces from the peers' copies in
// place), page-locked for the device (Device::register_host_memory), so both copies are
// asynchronous and the host never waits for the device:
//   download(src)   on the stage's own stream, after the compute enqueued so far; returns at once
//   then(start)     a Work that calls start() (the collective on data()) once the download has
//                   landed: in the first test() that finds it landed, or in wait(), never inside
//                   then() itself (the caller's test order is the issue order); so DDP's polling
//                   issues it and backward is not held up
//   upload(dst)     the host copy back to `dst` on the compute stream, which orders it before
//                   the optimizer step; returns at once
// The host copy is not written again before the upload has run: the next download waits for the
// compute stream (order_after_compute), and the next collective for that download.
// Buckets issue their collectives in bucket order on every rank; DDP's poll() tests bucket k+1
// only once bucket k's collective is issued (Reducer::collective_issued, issued() here), so a
// deferred start never overtakes an earlier bucket's.
class HostStage {
 public:
  HostStage(comm::Communicator& comm, Device& dev, std::size_t bytes);
  ~HostStage();  // waits for copies in flight (they use the host memory)
  HostStage(const HostStage&) = delete;
  HostStage& operator=(const HostStage&) = delete;

  void* data() const { return host_->data(); }
  bool issued() const { return issued_; }  // then()'s collective has started
  void download(const void* device_src);
  comm::WorkHandle then(std::function<comm::WorkHandle()> start);
  void upload(void* device_dst);

 private:
  Device& dev_;
  std::unique_ptr<comm::CommBuffer> host_;
  bool pinned_ = false;  // register_host_memory succeeded: unregister at the end
  bool issued_ = true;  // nothing pending before the first download
  Stream stream_;
  Event downloaded_;
  Event uploaded_;
};

// Where each gradient starts in its bucket: at a multiple of kBucketAlign elements (256 bytes),
// the padding between them zeros that every reduction keeps zero. cuBLAS(Lt) and cuDNN choose
// kernels by pointer alignment, so a gradient that is a view at an odd offset could get another
// kernel (another summation order) than a fresh 256-byte-aligned allocation, and the
// bit-identical checks against such a reference would fail on a GPU (review finding G5). The
// buckets' own memory is 256-byte aligned (the caching allocator, page-aligned communicator
// buffers). Costs at most 252 bytes per parameter on the wire.
constexpr std::int64_t kBucketAlign = 256 / sizeof(float);
constexpr std::int64_t bucket_slot(std::int64_t numel) {
  return (numel + kBucketAlign - 1) / kBucketAlign * kBucketAlign;
}

// The bucket's gradients, at their bucket_slot() offsets, into / out of its flat f32 tensor on
// their device, as device copies, skipping every gradient that already is
// its view into `flat` (gradient_as_bucket_view).
void pack_into_bucket(const std::vector<Tensor>& grads, Tensor& flat);
void unpack_from_bucket(const Tensor& flat, const std::vector<Tensor>& grads);

}  // namespace cohort::parallel::detail
