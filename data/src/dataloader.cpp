// DataLoader with a one-batch-ahead prefetch thread. One slot is enough: assembling a batch of
// MNIST-sized samples takes far less time than the training step it overlaps, and a single slot
// keeps memory flat and the ordering trivially deterministic.
#include "cohort/data/dataloader.hpp"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "cohort/core/error.hpp"
#include "cohort/core/rng.hpp"

namespace cohort::data {
namespace {
// Upper bound on waiting for the prefetch thread; assembling one batch takes milliseconds.
constexpr std::chrono::seconds kBatchTimeout{600};
}  // namespace

struct DataLoader::Impl {
  DatasetPtr dataset;
  DataLoaderOptions opt;
  std::vector<TransformPtr> transforms;
  Device* host;
  Device* device;
  DistributedSampler sampler;
  Shape sample_shape;  // after transforms
  std::vector<Shape> stage_shapes;

  // Epoch state, guarded by mu.
  std::mutex mu;
  std::condition_variable cv;
  std::uint64_t generation = 0;
  std::vector<std::int64_t> indices;
  std::int64_t produced = 0, consumed = 0;
  struct Slot {
    Batch batch;
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
  }

  std::int64_t num_batches() const {
    const std::int64_t n = sampler.num_samples(), b = opt.batch_size;
    return opt.drop_last ? n / b : (n + b - 1) / b;
  }

  // Builds batch `k` of the epoch whose indices are given (no lock held).
  Batch build(const std::vector<std::int64_t>& idx, std::int64_t k, std::int64_t epoch) const {
    const std::int64_t begin = k * opt.batch_size;
    const std::int64_t count = std::min<std::int64_t>(opt.batch_size,
                                                      static_cast<std::int64_t>(idx.size()) - begin);
    std::vector<std::int64_t> dims = sample_shape.dims();
    dims.insert(dims.begin(), count);
    Batch b;
    b.index = k;
    b.images = Tensor::empty(Shape(dims), DType::f32, *host);
    b.labels = Tensor::empty({count}, DType::i64, *host);
    float* out = b.images.data<float>();
    std::int64_t* labels = b.labels.data<std::int64_t>();
    std::int64_t biggest = 0;
    for (const auto& s : stage_shapes) biggest = std::max(biggest, s.numel());
    std::vector<float> bufa(static_cast<std::size_t>(biggest)), bufb(bufa.size());
    const std::int64_t per = sample_shape.numel();
    for (std::int64_t i = 0; i < count; ++i) {
      const std::int64_t sample = idx[static_cast<std::size_t>(begin + i)];
      labels[i] = dataset->get(sample, bufa.data());
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
    return b;
  }

  void start_epoch(std::int64_t epoch) {
    std::lock_guard<std::mutex> lock(mu);
    sampler.set_epoch(epoch);
    indices = sampler.indices();
    ++generation;
    produced = consumed = 0;
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
      lock.unlock();
      Slot slot;
      try {
        slot.batch = build(idx, k, epoch);
      } catch (...) {
        slot.error = std::current_exception();
      }
      lock.lock();
      if (gen != generation) continue;  // the epoch was restarted meanwhile: discard
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
  Batch host_batch;
  if (!m.opt.prefetch) {
    std::int64_t k, epoch;
    std::vector<std::int64_t> idx;
    {
      std::lock_guard<std::mutex> lock(m.mu);
      if (m.consumed >= m.num_batches()) return false;
      k = m.consumed++;
      idx = m.indices;
      epoch = m.sampler.epoch();
    }
    host_batch = m.build(idx, k, epoch);
  } else {
    std::unique_lock<std::mutex> lock(m.mu);
    if (m.consumed >= m.num_batches()) return false;
    const bool arrived = m.cv.wait_for(lock, kBatchTimeout, [&] { return m.ready.has_value(); });
    COHORT_CHECK(arrived, "DataLoader: the prefetch thread produced no batch within ",
                 kBatchTimeout.count(), " s (batch ", m.consumed, " of ", m.num_batches(), ")");
    Impl::Slot slot = std::move(*m.ready);
    m.ready.reset();
    ++m.consumed;
    m.cv.notify_all();
    lock.unlock();
    if (slot.error) std::rethrow_exception(slot.error);
    host_batch = std::move(slot.batch);
  }
  if (m.device == m.host) {
    out = std::move(host_batch);
  } else {
    out.index = host_batch.index;
    out.images = host_batch.images.to(*m.device);
    out.labels = host_batch.labels.to(*m.device);
  }
  return true;
}

std::int64_t DataLoader::num_batches() const { return impl_->num_batches(); }
std::int64_t DataLoader::num_samples() const { return impl_->sampler.num_samples(); }

Shape DataLoader::batch_shape(std::int64_t batch) const {
  std::vector<std::int64_t> dims = impl_->sample_shape.dims();
  dims.insert(dims.begin(), batch);
  return Shape(dims);
}

}  // namespace cohort::data
