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
//
// Worker threads (num_workers >= 1). Whoever assembles a batch (the prefetch thread, or next()
// without prefetch) posts it as a Job and waits for it; each worker claims the job's next row,
// builds that sample into the job's own buffers and counts it done; the assembler then copies
// the whole batch into its destination. Each sample goes through build_sample() exactly as
// without workers, so the batch is bit-identical whatever thread built each row. The job owns
// its buffers (and is shared with the workers) so that an assembler that gives up at its timeout
// leaves a stuck worker writing into memory nobody else uses, not into a tensor or staging
// buffer handed out since; the extra copy of the batch is small next to building it. After a
// row fails, rows not yet claimed are skipped, and the error reported is the one of the lowest
// failing row: every row before it was claimed before the skipping started, so this is the
// error the loop without workers would have raised.
#include "cohort/data/dataloader.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
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

  // Worker threads (see the file comment), guarded by pool_mu.
  struct Job {
    std::vector<std::int64_t> samples;  // the batch's samples, in row order
    std::int64_t batch = 0, epoch = 0;
    std::vector<float> images;          // rows x sample
    std::vector<std::int64_t> labels;
    std::int64_t claimed = 0, done = 0;
    std::int64_t error_row = -1;
    std::exception_ptr error;
  };
  struct Busy {  // what worker w is building, for the timeout message
    std::int64_t batch = -1, sample = -1;
    std::chrono::steady_clock::time_point since{};
  };
  std::mutex pool_mu;
  std::condition_variable pool_work, pool_done;
  std::deque<std::shared_ptr<Job>> jobs;  // jobs with rows left to claim
  std::vector<Busy> busy;
  bool pool_stop = false;
  std::vector<std::thread> pool;

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

  std::chrono::milliseconds wait_limit() const {
    return opt.timeout.count() > 0 ? opt.timeout : default_timeout();
  }

  // Floats of the biggest stage: the size of each scratch buffer of build_sample.
  std::size_t scratch_size() const {
    std::int64_t biggest = 0;
    for (const auto& s : stage_shapes) biggest = std::max(biggest, s.numel());
    return static_cast<std::size_t>(biggest);
  }

  // Sample `sample` (row `row` of batch `k` of `epoch`) through get() and the transforms into
  // `dst` (one sample of sample_shape); returns its label, checked on the host. bufa and bufb
  // are scratch of scratch_size() floats. Thread-safe (the dataset and transforms are).
  std::int64_t build_sample(std::int64_t sample, std::int64_t row, std::int64_t k,
                            std::int64_t epoch, float* bufa, float* bufb, float* dst) const {
    const std::int64_t classes = dataset->num_classes();
    const std::int64_t label = dataset->get(sample, bufa);
    // Checked here, on the host, because the loss ops do not read device labels back (that
    // would stop the device every step); a bad label on a GPU would only show as a NaN loss.
    COHORT_CHECK(label >= 0 && label < classes, "DataLoader: sample ", sample, " of ",
                 dataset->describe(), " (row ", row, " of batch ", k, ", epoch ", epoch,
                 ") has label ", label, ", not a class index in [0, ", classes, ")");
    float* cur = bufa;
    float* nxt = bufb;
    for (std::size_t t = 0; t < transforms.size(); ++t) {
      // The key depends only on (seed, epoch, sample, transform position).
      const rng::U32x4 r = rng::philox_block(
          opt.seed ^ (0xD1B54A32D192ED03ull * static_cast<std::uint64_t>(epoch + 1)),
          static_cast<std::uint64_t>(sample) * 16 + t);
      const std::uint64_t key = (static_cast<std::uint64_t>(r.v[0]) << 32) | r.v[1];
      transforms[t]->apply(cur, stage_shapes[t], nxt, key);
      std::swap(cur, nxt);
    }
    std::copy(cur, cur + sample_shape.numel(), dst);
    return label;
  }

  // Writes batch `k` of the epoch whose indices are given into `out` (rows x sample floats) and
  // `labels` (no lock held): alone, or with the worker threads.
  void assemble(const std::vector<std::int64_t>& idx, std::int64_t k, std::int64_t epoch,
                float* out, std::int64_t* labels) {
    if (opt.num_workers > 0) return assemble_with_workers(idx, k, epoch, out, labels);
    const std::int64_t begin = k * opt.batch_size;
    const std::int64_t count = rows_of(idx, k);
    std::vector<float> bufa(scratch_size()), bufb(bufa.size());
    const std::int64_t per = sample_shape.numel();
    for (std::int64_t i = 0; i < count; ++i)
      labels[i] = build_sample(idx[static_cast<std::size_t>(begin + i)], i, k, epoch,
                               bufa.data(), bufb.data(), out + i * per);
  }

  void assemble_with_workers(const std::vector<std::int64_t>& idx, std::int64_t k,
                             std::int64_t epoch, float* out, std::int64_t* labels) {
    const std::int64_t begin = k * opt.batch_size;
    const std::int64_t count = rows_of(idx, k);
    const std::int64_t per = sample_shape.numel();
    const auto limit = wait_limit();
    if (count <= 0) return;
    auto job = std::make_shared<Job>();
    job->samples.assign(idx.begin() + begin, idx.begin() + begin + count);
    job->batch = k;
    job->epoch = epoch;
    job->images.resize(static_cast<std::size_t>(count * per));
    job->labels.resize(static_cast<std::size_t>(count));
    std::unique_lock<std::mutex> lock(pool_mu);
    jobs.push_back(job);
    pool_work.notify_all();
    pool_done.wait_for(lock, limit, [&] { return job->done == count || pool_stop; });
    if (job->done != count) {
      // Given up: no worker claims another row of it; a worker still on one writes only into
      // the job, which it keeps alive.
      jobs.erase(std::remove(jobs.begin(), jobs.end(), job), jobs.end());
      COHORT_CHECK(!pool_stop, "DataLoader: destroyed while batch ", k, " was being built");
      std::string doing;
      const auto now = std::chrono::steady_clock::now();
      for (std::size_t w = 0; w < busy.size(); ++w) {
        doing += (w ? ", " : "") + std::string("worker ") + std::to_string(w);
        if (busy[w].sample < 0) {
          doing += " idle";
        } else {
          doing += " on sample " + std::to_string(busy[w].sample) + " of batch " +
                   std::to_string(busy[w].batch) + " for " +
                   std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      now - busy[w].since)
                                      .count()) +
                   " ms";
        }
      }
      COHORT_FAIL("DataLoader (rank ", opt.rank, "): only ", job->done, " of the ", count,
                  " samples of batch ", k, " of epoch ", epoch, " were built within ",
                  limit.count(), " ms by the ", opt.num_workers, " worker threads "
                  "(DataLoaderOptions::timeout, or COHORT_TIMEOUT): ", doing,
                  " (is the dataset's get() or a transform stuck?)");
    }
    lock.unlock();
    if (job->error) std::rethrow_exception(job->error);
    std::copy(job->images.begin(), job->images.end(), out);
    std::copy(job->labels.begin(), job->labels.end(), labels);
  }

  void run_pool_worker(std::size_t w) {
    std::vector<float> bufa(scratch_size()), bufb(bufa.size());
    const std::int64_t per = sample_shape.numel();
    std::unique_lock<std::mutex> lock(pool_mu);
    for (;;) {
      // Idle until there is work: no timeout here, the assembler's wait has one.
      pool_work.wait(lock, [&] { return pool_stop || !jobs.empty(); });
      if (pool_stop) return;
      const std::shared_ptr<Job> job = jobs.front();
      const auto count = static_cast<std::int64_t>(job->samples.size());
      const std::int64_t row = job->claimed++;
      if (job->claimed == count) jobs.pop_front();
      if (!job->error) {  // after a failed row, the rows not yet claimed are skipped
        const std::int64_t sample = job->samples[static_cast<std::size_t>(row)];
        busy[w] = {job->batch, sample, std::chrono::steady_clock::now()};
        lock.unlock();
        std::exception_ptr error;
        try {
          job->labels[static_cast<std::size_t>(row)] =
              build_sample(sample, row, job->batch, job->epoch, bufa.data(), bufb.data(),
                           job->images.data() + row * per);
        } catch (...) {
          error = std::current_exception();
        }
        lock.lock();
        busy[w] = Busy{};
        if (error && (!job->error || row < job->error_row)) {
          job->error = error;
          job->error_row = row;
        }
      }
      if (++job->done == count) pool_done.notify_all();
    }
  }

  void start_pool() {  // num_workers >= 0 was checked by the DataLoader's constructor
    busy.assign(static_cast<std::size_t>(opt.num_workers), Busy{});
    try {
      for (int w = 0; w < opt.num_workers; ++w)
        pool.emplace_back([this, w] { run_pool_worker(static_cast<std::size_t>(w)); });
    } catch (...) {
      stop_pool();
      throw;
    }
  }

  void stop_pool() {
    {
      std::lock_guard<std::mutex> lock(pool_mu);
      pool_stop = true;
    }
    pool_work.notify_all();
    pool_done.notify_all();
    for (auto& t : pool)
      if (t.joinable()) t.join();
    pool.clear();
  }

  // Builds batch `k` into the slot: host tensors, or (staged) the stage's pinned buffer and an
  // upload enqueued on the upload stream. The stage was reserved by the caller.
  void build(Slot& slot, const std::vector<std::int64_t>& idx, std::int64_t k,
             std::int64_t epoch) {
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
    // This thread enqueues the staged uploads: it selects the device first, as every thread that
    // uses a device but did not make it must (Device::make_current).
    if (staged) device->make_current();
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
  COHORT_CHECK(options.num_workers >= 0, "DataLoader: num_workers must be >= 0, got ",
               options.num_workers);
  impl_ = std::make_unique<Impl>(std::move(dataset), options, std::move(transforms), host, device);
  impl_->start_epoch(0);
  impl_->start_pool();
  if (options.prefetch) {
    try {
      impl_->worker = std::thread([this] { impl_->run_worker(); });
    } catch (...) {  // no destructor runs for a constructor that throws
      impl_->stop_pool();
      throw;
    }
  }
}

DataLoader::~DataLoader() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  // The pool stops first: a prefetch thread waiting for its workers' batch wakes and gives up.
  {
    std::lock_guard<std::mutex> lock(impl_->pool_mu);
    impl_->pool_stop = true;
  }
  impl_->pool_done.notify_all();
  if (impl_->worker.joinable()) impl_->worker.join();
  impl_->stop_pool();
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
