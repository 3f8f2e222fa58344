// DataLoader with a one-batch-ahead prefetch thread. One slot is enough: assembling a batch of
// MNIST-sized samples takes far less time than the training step it overlaps, and a single slot
// keeps memory flat and the ordering trivially deterministic.
//
// Staged uploads, for a device the host cannot address (a GPU). Two stages, each a pinned host
// buffer (Device::allocate_pinned) and a device buffer of one full batch, plus two events. The
// prefetch thread assembles batch k straight into a free stage's pinned buffer and enqueues its
// upload on the loader's own stream (copy_from_host_async), so the copy runs while the compute
// stream is still busy with the step before. next() makes the compute stream wait for that upload
// and copies the batch device-to-device into fresh tensors on the compute stream, which frees the
// stage for batch k + 2. The copy-out costs a device-speed copy of the batch; it buys tensors that
// belong to the compute stream like any other (the caching allocator's contract: memory is reused
// in compute-stream order), which a batch written directly by the upload stream would not.
//   - pinned buffer reuse: before assembling into a stage the host waits for the stage's last
//     upload (`uploaded`), normally long finished;
//   - device buffer reuse: the upload stream waits for the compute stream's copy out of the stage
//     (`consumed`, first recorded right after the buffer was allocated);
//   - batch use: the compute stream waits for `uploaded` before the copy-out.
// Nothing here blocks the host on the compute stream. With two stages the prefetch thread runs at
// most one batch ahead of next(), as without staging.
#include "cohort/data/dataloader.hpp"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "cohort/core/error.hpp"
#include "cohort/core/rng.hpp"
#include "cohort/core/stream.hpp"
#include "cohort/core/timeout.hpp"

namespace cohort::data {

struct DataLoader::Impl {
  // What the prefetch thread is doing, for the timeout message of next() (under mu).
  std::int64_t building = -1;
  std::chrono::steady_clock::time_point building_since{};
  DatasetPtr dataset;
  DataLoaderOptions opt;
  std::vector<TransformPtr> transforms;
  Device* host;
  Device* device;
  DistributedSampler sampler;
  Shape sample_shape;  // after transforms
  std::vector<Shape> stage_shapes;

  // Staged uploads (see the file comment); unused when `device` is host-accessible.
  struct Stage {
    float* images = nullptr;         // pinned, one full batch
    std::int64_t* labels = nullptr;  // pinned, after the images
    Tensor dev_images, dev_labels;   // on `device`, one full batch
    std::unique_ptr<Event> uploaded, consumed;
    bool busy = false;  // guarded by mu
  };
  bool staged = false;
  std::size_t pinned_bytes = 0;  // per stage
  std::unique_ptr<Stream> upload;
  Stage stages[2];

  // Epoch state, guarded by mu.
  std::mutex mu;
  std::condition_variable cv;
  std::uint64_t generation = 0;
  std::vector<std::int64_t> indices;
  std::int64_t produced = 0, consumed = 0;
  struct Slot {
    Batch batch;          // host path: the batch; staged: only its index
    int stage = -1;       // staged: the stage holding it
    std::int64_t rows = 0;
    std::exception_ptr error;
  };
  std::optional<Slot> ready;
  bool stop = false;
  std::thread worker;

  Impl(DatasetPtr ds, DataLoaderOptions o, std::vector<TransformPtr> t, Device& h, Device* d)
      : dataset(std::move(ds)), opt(o), transforms(std::move(t)), host(&h), device(d ? d : &h),
        sampler(dataset->size(), o.world_size, o.rank, o.shuffle, o.seed, o.sampler_drop_last) {
    Shape s = dataset->sample_shape();
    stage_shapes.push_back(s);
    for (const auto& tr : transforms) {
      COHORT_CHECK(tr != nullptr, "DataLoader: a transform is null");
      s = tr->output_shape(s);
      stage_shapes.push_back(s);
    }
    sample_shape = s;
    staged = device != host && !device->host_accessible();
    if (staged) {
      const std::size_t image_bytes =
          (static_cast<std::size_t>(opt.batch_size * sample_shape.numel()) * sizeof(float) + 63) /
          64 * 64;
      pinned_bytes = image_bytes + static_cast<std::size_t>(opt.batch_size) * sizeof(std::int64_t);
      upload = std::make_unique<Stream>(*device);
      try {
        for (Stage& st : stages) {
          auto* p = static_cast<char*>(device->allocate_pinned(pinned_bytes));
          st.images = reinterpret_cast<float*>(p);
          st.labels = reinterpret_cast<std::int64_t*>(p + image_bytes);
          st.dev_images = Tensor::empty(batch_shape(opt.batch_size), DType::f32, *device);
          st.dev_labels = Tensor::empty({opt.batch_size}, DType::i64, *device);
          st.uploaded = std::make_unique<Event>(*device);
          st.consumed = std::make_unique<Event>(*device);
          // The device buffers come from the compute stream's allocator: the first upload into
          // them waits for whatever the compute stream had queued when they were allocated.
          st.consumed->record();
        }
      } catch (...) {  // no destructor runs for a constructor that throws
        for (Stage& st : stages) device->deallocate_pinned(st.images, pinned_bytes);
        throw;
      }
    }
  }

  ~Impl() {
    if (!staged) return;
    // Uploads still in flight read the pinned buffers and write the device buffers: let them end
    // before either is freed (a host wait on the upload stream only).
    try {
      upload->synchronize();
    } catch (...) {
    }
    for (Stage& st : stages) device->deallocate_pinned(st.images, pinned_bytes);
  }

  std::int64_t num_batches() const {
    const std::int64_t n = sampler.num_samples(), b = opt.batch_size;
    return opt.drop_last ? n / b : (n + b - 1) / b;
  }

  Shape batch_shape(std::int64_t rows) const {
    std::vector<std::int64_t> dims = sample_shape.dims();
    dims.insert(dims.begin(), rows);
    return Shape(dims);
  }

  std::int64_t rows_of(const std::vector<std::int64_t>& idx, std::int64_t k) const {
    return std::min<std::int64_t>(opt.batch_size,
                                  static_cast<std::int64_t>(idx.size()) - k * opt.batch_size);
  }

  // Writes batch `k` of the epoch whose indices are given into `out` (rows x sample floats) and
  // `labels`, checking each label on the host (no lock held).
  void assemble(const std::vector<std::int64_t>& idx, std::int64_t k, std::int64_t epoch,
                float* out, std::int64_t* labels) const {
    const std::int64_t begin = k * opt.batch_size;
    const std::int64_t count = rows_of(idx, k);
    std::int64_t biggest = 0;
    for (const auto& s : stage_shapes) biggest = std::max(biggest, s.numel());
    std::vector<float> bufa(static_cast<std::size_t>(biggest)), bufb(bufa.size());
    const std::int64_t per = sample_shape.numel();
    const std::int64_t classes = dataset->num_classes();
    for (std::int64_t i = 0; i < count; ++i) {
      const std::int64_t sample = idx[static_cast<std::size_t>(begin + i)];
      const std::int64_t label = dataset->get(sample, bufa.data());
      // Checked here, on the host, because the loss ops do not read device labels back (that
      // would stop the device every step); a bad label on a GPU would only show as a NaN loss.
      COHORT_CHECK(label >= 0 && label < classes, "DataLoader: sample ", sample, " of ",
                   dataset->describe(), " (row ", i, " of batch ", k, ", epoch ", epoch,
                   ") has label ", label, ", not a class index in [0, ", classes, ")");
      labels[i] = label;
      float* cur = bufa.data();
      float* nxt = bufb.data();
      for (std::size_t t = 0; t < transforms.size(); ++t) {
        // The key depends only on (seed, epoch, sample, transform position).
        const rng::U32x4 r = rng::philox_block(
            opt.seed ^ (0xD1B54A32D192ED03ull * static_cast<std::uint64_t>(epoch + 1)),
            static_cast<std::uint64_t>(sample) * 16 + t);
        const std::uint64_t key = (static_cast<std::uint64_t>(r.v[0]) << 32) | r.v[1];
        transforms[t]->apply(cur, stage_shapes[t], nxt, key);
        std::swap(cur, nxt);
      }
      std::copy(cur, cur + per, out + i * per);
    }
  }

  // Builds batch `k` into the slot: host tensors, or (staged) the stage's pinned buffer and an
  // upload enqueued on the upload stream. The stage was reserved by the caller.
  void build(Slot& slot, const std::vector<std::int64_t>& idx, std::int64_t k,
             std::int64_t epoch) const {
    const std::int64_t count = rows_of(idx, k);
    slot.batch.index = k;
    slot.rows = count;
    if (slot.stage < 0) {
      slot.batch.images = Tensor::empty(batch_shape(count), DType::f32, *host);
      slot.batch.labels = Tensor::empty({count}, DType::i64, *host);
      assemble(idx, k, epoch, slot.batch.images.data<float>(),
               slot.batch.labels.data<std::int64_t>());
      return;
    }
    const Stage& st = stages[slot.stage];
    st.uploaded->synchronize();  // the stage's last upload has read the pinned buffer
    assemble(idx, k, epoch, st.images, st.labels);
    upload->wait(*st.consumed);  // the compute stream has copied the stage's last batch out
    try {
      device->copy_from_host_async(st.dev_images.raw(), st.images,
                                   static_cast<std::size_t>(count * sample_shape.numel()) *
                                       sizeof(float),
                                   upload->handle());
      device->copy_from_host_async(st.dev_labels.raw(), st.labels,
                                   static_cast<std::size_t>(count) * sizeof(std::int64_t),
                                   upload->handle());
    } catch (...) {
      st.uploaded->record(*upload);  // whatever was enqueued still guards the pinned buffer
      throw;
    }
    st.uploaded->record(*upload);
  }

  // Under mu: a free stage, marked busy (-1 when not staged).
  int reserve_stage() {
    if (!staged) return -1;
    for (int i = 0; i < 2; ++i)
      if (!stages[i].busy) {
        stages[i].busy = true;
        return i;
      }
    COHORT_FAIL("DataLoader: no free staging buffer (internal error: more than two batches in "
                "flight)");
  }
  void release_stage(int i) {  // under mu
    if (i >= 0) stages[i].busy = false;
  }

  // Staged: the batch of the slot's stage as fresh tensors on the compute stream; then the stage
  // is free again (also when this throws: `consumed` covers whatever copy-out was enqueued).
  void hand_out(const Slot& slot, Batch& out) {
    Stage& st = stages[slot.stage];
    struct Release {
      Impl& m;
      int i;
      ~Release() {
        try {
          m.stages[i].consumed->record();
        } catch (...) {
        }
        std::lock_guard<std::mutex> lock(m.mu);
        m.release_stage(i);
        m.cv.notify_all();
      }
    } release{*this, slot.stage};
    Stream::compute(*device).wait(*st.uploaded);
    Batch b;
    b.index = slot.batch.index;
    b.images = Tensor::empty(batch_shape(slot.rows), DType::f32, *device);
    b.labels = Tensor::empty({slot.rows}, DType::i64, *device);
    b.images.copy_from(st.dev_images.slice(0, slot.rows));
    b.labels.copy_from(st.dev_labels.slice(0, slot.rows));
    out = std::move(b);
  }

  void start_epoch(std::int64_t epoch) {
    std::lock_guard<std::mutex> lock(mu);
    sampler.set_epoch(epoch);
    indices = sampler.indices();
    ++generation;
    produced = consumed = 0;
    if (ready) release_stage(ready->stage);
    ready.reset();
    cv.notify_all();
  }

  void run_worker() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return stop || (!ready && produced < num_batches()); });
      if (stop) return;
      const std::uint64_t gen = generation;
      const std::int64_t k = produced;
      const std::vector<std::int64_t> idx = indices;  // a copy: set_epoch may replace it
      const std::int64_t epoch = sampler.epoch();
      Slot slot;
      try {
        slot.stage = reserve_stage();
      } catch (...) {
        slot.error = std::current_exception();
      }
      if (!slot.error) {
        building = k;
        building_since = std::chrono::steady_clock::now();
        lock.unlock();
        try {
          build(slot, idx, k, epoch);
        } catch (...) {
          slot.error = std::current_exception();
        }
        lock.lock();
        building = -1;
      }
      if (slot.error) {
        release_stage(slot.stage);
        slot.stage = -1;
      }
      if (gen != generation) {  // the epoch was restarted meanwhile: discard
        release_stage(slot.stage);
        continue;
      }
      ready = std::move(slot);
      ++produced;
      cv.notify_all();
    }
  }
};

DataLoader::DataLoader(DatasetPtr dataset, DataLoaderOptions options,
                       std::vector<TransformPtr> transforms, Device& host, Device* device)
    : dataset_(dataset) {
  COHORT_CHECK(dataset != nullptr, "DataLoader: dataset is null");
  COHORT_CHECK(options.batch_size >= 1, "DataLoader: batch size must be >= 1, got ",
               options.batch_size);
  COHORT_CHECK(host.host_accessible(), "DataLoader: the assembly device ", host.name(),
               " is not host memory");
  impl_ = std::make_unique<Impl>(std::move(dataset), options, std::move(transforms), host, device);
  impl_->start_epoch(0);
  if (options.prefetch) impl_->worker = std::thread([this] { impl_->run_worker(); });
}

DataLoader::~DataLoader() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (impl_->worker.joinable()) impl_->worker.join();
}

void DataLoader::set_epoch(std::int64_t epoch) {
  COHORT_CHECK(epoch >= 0, "DataLoader::set_epoch: epoch ", epoch, " is negative");
  impl_->start_epoch(epoch);
}

bool DataLoader::next(Batch& out) {
  Impl& m = *impl_;
  Impl::Slot slot;
  if (!m.opt.prefetch) {
    std::int64_t k, epoch;
    std::vector<std::int64_t> idx;
    {
      std::lock_guard<std::mutex> lock(m.mu);
      if (m.consumed >= m.num_batches()) return false;
      k = m.consumed++;
      idx = m.indices;
      epoch = m.sampler.epoch();
      slot.stage = m.reserve_stage();
    }
    try {
      m.build(slot, idx, k, epoch);
    } catch (...) {
      std::lock_guard<std::mutex> lock(m.mu);
      m.release_stage(slot.stage);
      throw;
    }
  } else {
    std::unique_lock<std::mutex> lock(m.mu);
    if (m.consumed >= m.num_batches()) return false;
    const auto limit = m.opt.timeout.count() > 0 ? m.opt.timeout : default_timeout();
    const bool arrived = m.cv.wait_for(lock, limit, [&] { return m.ready.has_value(); });
    if (!arrived) {
      std::string doing = "idle";
      if (m.building >= 0)
        doing = "building batch " + std::to_string(m.building) + " for " +
                std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now() - m.building_since)
                                   .count()) +
                " ms (is the dataset's get() or a transform stuck?)";
      COHORT_FAIL("DataLoader (rank ", m.opt.rank, "): batch ", m.consumed, " of ",
                  m.num_batches(), " of epoch ", m.sampler.epoch(), " was not ready within ",
                  limit.count(), " ms (DataLoaderOptions::timeout, or COHORT_TIMEOUT); the "
                  "prefetch thread was ", doing);
    }
    slot = std::move(*m.ready);
    m.ready.reset();
    ++m.consumed;
    m.cv.notify_all();
    lock.unlock();
    if (slot.error) std::rethrow_exception(slot.error);
  }
  if (slot.stage >= 0) {
    m.hand_out(slot, out);
  } else if (m.device == m.host) {
    out = std::move(slot.batch);
  } else {
    out.index = slot.batch.index;
    out.images = slot.batch.images.to(*m.device);
    out.labels = slot.batch.labels.to(*m.device);
  }
  return true;
}

std::int64_t DataLoader::epoch() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->sampler.epoch();
}

DataLoader::iterator::iterator(DataLoader* loader) : loader_(loader) { ++*this; }

DataLoader::iterator& DataLoader::iterator::operator++() {
  if (loader_ && !loader_->next(batch_)) {
    loader_ = nullptr;
    batch_ = Batch();
  }
  return *this;
}

DataLoader::iterator DataLoader::begin() {
  set_epoch(epoch());
  return iterator(this);
}

void DataLoader::shard(int rank, int world_size, bool pad) {
  Impl& m = *impl_;
  // Built before the lock: it validates rank and world size and throws before anything changes.
  DistributedSampler s(m.dataset->size(), world_size, rank, m.opt.shuffle, m.opt.seed,
                       pad && m.opt.sampler_drop_last, pad);
  std::int64_t epoch = 0;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    epoch = m.sampler.epoch();
    m.sampler = s;
    m.opt.rank = rank;
    m.opt.world_size = world_size;
  }
  m.start_epoch(epoch);
}

int DataLoader::rank() const { return impl_->opt.rank; }
int DataLoader::world_size() const { return impl_->opt.world_size; }

std::int64_t DataLoader::num_batches() const { return impl_->num_batches(); }
std::int64_t DataLoader::num_samples() const { return impl_->sampler.num_samples(); }

Shape DataLoader::batch_shape(std::int64_t batch) const { return impl_->batch_shape(batch); }

}  // namespace cohort::data
