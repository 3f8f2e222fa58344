// The DataLoader's two upload stages (the ordering rules are in staging.hpp). Each stage's pinned
// buffer holds the images and, 64-byte aligned after them, the labels, so one pinned allocation
// serves both.
#include "staging.hpp"

#include <vector>

#include "cohort/core/error.hpp"

namespace cohort::data::detail {

StagedUploads::StagedUploads(Device& device, std::int64_t batch_rows, const Shape& sample_shape)
    : device_(device), sample_shape_(sample_shape) {
  const std::size_t image_bytes =
      (static_cast<std::size_t>(batch_rows * sample_shape_.numel()) * sizeof(float) + 63) / 64 *
      64;
  pinned_bytes_ = image_bytes + static_cast<std::size_t>(batch_rows) * sizeof(std::int64_t);
  upload_ = std::make_unique<Stream>(device_);
  try {
    for (Stage& st : stages_) {
      auto* p = static_cast<char*>(device_.allocate_pinned(pinned_bytes_));
      st.images = reinterpret_cast<float*>(p);
      st.labels = reinterpret_cast<std::int64_t*>(p + image_bytes);
      st.dev_images = Tensor::empty(batch_shape(batch_rows), DType::f32, device_);
      st.dev_labels = Tensor::empty({batch_rows}, DType::i64, device_);
      st.uploaded = std::make_unique<Event>(device_);
      st.consumed = std::make_unique<Event>(device_);
      // The device buffers come from the compute stream's allocator: the first upload into
      // them waits for whatever the compute stream had queued when they were allocated.
      st.consumed->record();
    }
  } catch (...) {  // no destructor runs for a constructor that throws
    for (Stage& st : stages_) device_.deallocate_pinned(st.images, pinned_bytes_);
    throw;
  }
}

StagedUploads::~StagedUploads() {
  // Uploads still in flight read the pinned buffers and write the device buffers: let them end
  // before either is freed.
  try {
    upload_->synchronize();
  } catch (...) {
  }
  for (Stage& st : stages_) device_.deallocate_pinned(st.images, pinned_bytes_);
}

Shape StagedUploads::batch_shape(std::int64_t rows) const {
  std::vector<std::int64_t> dims = sample_shape_.dims();
  dims.insert(dims.begin(), rows);
  return Shape(dims);
}

int StagedUploads::reserve() {
  for (int i = 0; i < kStages; ++i)
    if (!stages_[i].busy) {
      stages_[i].busy = true;
      return i;
    }
  COHORT_FAIL("DataLoader: no free staging buffer (internal error: more than two batches in "
              "flight)");
}

void StagedUploads::release(int i) {
  if (i >= 0) stages_[i].busy = false;
}

StagedUploads::Pinned StagedUploads::pinned(int i) {
  const Stage& st = stages_[i];
  st.uploaded->synchronize();  // the stage's last upload has read the pinned buffer
  return {st.images, st.labels};
}

void StagedUploads::upload(int i, std::int64_t rows) {
  const Stage& st = stages_[i];
  upload_->wait(*st.consumed);  // the compute stream has copied the stage's last batch out
  try {
    device_.copy_from_host_async(st.dev_images.raw(), st.images,
                                 static_cast<std::size_t>(rows * sample_shape_.numel()) *
                                     sizeof(float),
                                 upload_->handle());
    device_.copy_from_host_async(st.dev_labels.raw(), st.labels,
                                 static_cast<std::size_t>(rows) * sizeof(std::int64_t),
                                 upload_->handle());
  } catch (...) {
    st.uploaded->record(*upload_);  // whatever was enqueued still guards the pinned buffer
    throw;
  }
  st.uploaded->record(*upload_);
}

void StagedUploads::copy_out(int i, std::int64_t rows, Tensor& images, Tensor& labels) {
  Stage& st = stages_[i];
  struct Consumed {  // `consumed` covers whatever copy-out was enqueued, also on a throw
    Event& e;
    ~Consumed() {
      try {
        e.record();
      } catch (...) {
      }
    }
  } consumed{*st.consumed};
  Stream::compute(device_).wait(*st.uploaded);
  Tensor im = Tensor::empty(batch_shape(rows), DType::f32, device_);
  Tensor lb = Tensor::empty({rows}, DType::i64, device_);
  im.copy_from(st.dev_images.slice(0, rows));
  lb.copy_from(st.dev_labels.slice(0, rows));
  images = std::move(im);
  labels = std::move(lb);
}

}  // namespace cohort::data::detail
