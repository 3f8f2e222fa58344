// The DataLoader's staged uploads, for a device the host cannot address (a GPU): two stages, each
// a pinned host buffer (Device::allocate_pinned) and a device buffer of one full batch, plus two
// events, and the loader's own upload stream. Kept apart from the loader's threads: this class
// owns the buffers and the ordering between the upload and compute streams; the loader decides
// which batch goes into which stage and when.
//
// A batch goes through a stage in three steps. pinned(i) waits (on the host) for the stage's last
// upload to have read the pinned buffer, normally long finished, and hands it out to be filled.
// upload(i, rows) enqueues the copy to the device on the upload stream (copy_from_host_async),
// so the copy runs while the compute stream is still busy with the step before; it first makes
// the upload stream wait for the compute stream's last copy out of the stage (`consumed`, first
// recorded right after the device buffer was allocated). copy_out(i, rows) makes the compute
// stream wait for that upload (`uploaded`) and copies the batch device-to-device into fresh
// tensors on the compute stream, which frees the stage for the batch after next. The copy-out
// costs a device-speed copy of the batch; it buys tensors that belong to the compute stream like
// any other (the caching allocator's contract: memory is reused in compute-stream order), which a
// batch written directly by the upload stream would not. Nothing here blocks the host on the
// compute stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "cohort/core/device.hpp"
#include "cohort/core/stream.hpp"
#include "cohort/core/tensor.hpp"

namespace cohort::data::detail {

class StagedUploads {
 public:
  // Two stages for batches of up to `batch_rows` rows of `sample_shape` (f32 images, i64
  // labels) on `device`. Throws, freeing what it allocated, when an allocation fails.
  StagedUploads(Device& device, std::int64_t batch_rows, const Shape& sample_shape);
  // Lets uploads still in flight end (a host wait on the upload stream only), then frees.
  ~StagedUploads();
  StagedUploads(const StagedUploads&) = delete;
  StagedUploads& operator=(const StagedUploads&) = delete;

  static constexpr int kStages = 2;

  // A free stage, marked busy; throws when both are (more than two batches in flight).
  // reserve() and release() are serialised by the caller (the loader's mutex).
  int reserve();
  void release(int i);  // i < 0: nothing

  struct Pinned {
    float* images;          // batch_rows x sample
    std::int64_t* labels;   // batch_rows
  };
  Pinned pinned(int i);  // after the stage's last upload has read it (a host wait)
  void upload(int i, std::int64_t rows);  // the first `rows` rows, on the upload stream
  // The first `rows` rows as fresh tensors on the compute stream; the stage's `consumed` event
  // is recorded after the copy-out, also when this throws.
  void copy_out(int i, std::int64_t rows, Tensor& images, Tensor& labels);

 private:
  struct Stage {
    float* images = nullptr;         // pinned, one full batch
    std::int64_t* labels = nullptr;  // pinned, after the images
    Tensor dev_images, dev_labels;   // on `device`, one full batch
    std::unique_ptr<Event> uploaded, consumed;
    bool busy = false;
  };

  Shape batch_shape(std::int64_t rows) const;

  Device& device_;
  const Shape sample_shape_;
  std::size_t pinned_bytes_ = 0;  // per stage
  std::unique_ptr<Stream> upload_;
  Stage stages_[kStages];
};

}  // namespace cohort::data::detail
