// DataLoader with a one-batch-ahead prefetch thread. One slot is enough: assembling a batch of
// MNIST-sized samples takes far less time than the training step it overlaps, and a single slot
// keeps memory flat and the ordering trivially deterministic.
//
// This file holds the loader's own job: the epoch state, the prefetch thread and next(), and how
// one sample is built (build_sample). Two mechanisms it drives live apart, each with its rules in
// its header: the staged uploads to a device the host cannot address (staging.hpp: two stages,
// two events, an upload stream) and the decoding-worker pool (workers.hpp, num_workers >= 1).
// With two stages the prefetch thread runs at most one batch ahead of next(), as without
// staging; nothing here blocks the host on the compute stream. Each sample goes through
// build_sample() exactly as without workers, so the batch is bit-identical whatever thread built
// each row.
#include "cohort/data/dataloader.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "cohort/core/error.hpp"
#include "cohort/core/rng.hpp"
#include "cohort/core/timeout.hpp"
#include "sample_shape.hpp"
#include "staging.hpp"
#include "workers.hpp"

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
  // The input shape of each transform, and the output's. For a data set of images of different
  // sizes (Dataset::variable_size), the transforms before variable_until see each sample's own
  // shape (computed per sample; their entries here are empty).
  std::vector<Shape> stage_shapes;
  std::size_t variable_until = 0;

  // Staged uploads (staging.hpp); null when `device` is host-accessible. Its stages' busy flags
  // are guarded by mu.
  std::unique_ptr<detail::StagedUploads> stages;

  // The epoch's batches: batch k is indices[offsets[k] .. offsets[k + 1]), its weight weights[k].
  // Shared and immutable, so the prefetch thread holds one while set_epoch makes the next.
  struct Plan {
    std::vector<std::int64_t> indices, offsets;
    std::vector<double> weights;
  };
  // regroup(): this rank's place in the group that splits each step's global batch (-1: the
  // sampler's own shards).
  int group_rank = -1, group_world = 0;
  // regroup(..., keep_rank_batch): the epoch's layout, as segments of the sampler's whole list.
  // From batch k0 on, global batch k holds elements [e0 + (k - k0) g, + g); the last segment
  // runs to the epoch's end. Empty: one implicit segment {0, 0, batch_size x replicas}.
  struct Segment {
    std::int64_t k0, e0, g;
  };
  std::vector<Segment> segments;

  // skip_bad_samples: the samples that failed to read in epoch bad_epoch, each with the batch
  // that read it (guarded by bad_mu; build_sample runs on the prefetch and worker threads).
  // bad_samples() shows only those of batches already handed out: the prefetch thread reads
  // ahead (the next epoch's first batch right after set_epoch), and what it met there is not yet
  // the caller's. A build for an epoch that is no longer current (restarted meanwhile) records
  // nothing: its batch is discarded.
  struct BadRecord {
    BadSample sample;
    std::int64_t batch;
  };
  mutable std::mutex bad_mu;
  mutable std::vector<BadRecord> bad;
  mutable std::int64_t bad_epoch = -1;
  std::atomic<std::int64_t> current_epoch{0};  // the sampler's epoch, readable without mu

  // Epoch state, guarded by mu.
  std::mutex mu;
  std::condition_variable cv;
  std::uint64_t generation = 0;
  std::shared_ptr<const Plan> plan;
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

  // The decoding workers (workers.hpp); no thread when opt.num_workers is 0.
  std::unique_ptr<detail::WorkerPool> pool;

  Impl(DatasetPtr ds, DataLoaderOptions o, std::vector<TransformPtr> t, Device& h, Device* d)
      : dataset(std::move(ds)), opt(o), transforms(std::move(t)), host(&h), device(d ? d : &h),
        sampler(dataset->size(), o.world_size, o.rank, o.shuffle, o.seed, o.sampler_drop_last) {
    sample_shape = detail::transformed_shapes(*dataset, transforms, stage_shapes, variable_until);
    if (opt.batch_transform)
      COHORT_CHECK(opt.batch_transform->num_classes() >= dataset->num_classes(), "DataLoader: ",
                   opt.batch_transform->describe(), " has ", opt.batch_transform->num_classes(),
                   " classes, fewer than the ", dataset->num_classes(), " of ",
                   dataset->describe());
    if (device != host && !device->host_accessible())
      stages = std::make_unique<detail::StagedUploads>(*device, opt.batch_size, sample_shape);
    pool = std::make_unique<detail::WorkerPool>(
        opt.num_workers, sample_shape.numel(), scratch_size(),
        [this](std::int64_t sample, std::int64_t row, std::int64_t k, std::int64_t epoch,
               float* bufa, float* bufb, float* dst) {
          return build_sample(sample, row, k, epoch, bufa, bufb, dst);
        },
        opt.rank);
  }

  std::int64_t num_batches() const {
    const std::int64_t n = sampler.num_samples(), b = opt.batch_size;
    if (segments.empty()) return opt.drop_last ? n / b : (n + b - 1) / b;
    const Segment& s = segments.back();
    const std::int64_t rest = std::max<std::int64_t>(0, total_elements() - s.e0);
    return s.k0 + (opt.drop_last ? rest / s.g : (rest + s.g - 1) / s.g);
  }
  std::int64_t total_elements() const { return sampler.num_samples() * sampler.replicas(); }
  // The segment of global batch k, and where batch k starts in the sampler's whole list.
  Segment segment_of(std::int64_t k) const {
    Segment s{0, 0, opt.batch_size * sampler.replicas()};
    for (const Segment& t : segments)
      if (t.k0 <= k) s = t;
    return s;
  }
  std::int64_t element_of(std::int64_t k) const {
    const Segment s = segment_of(k);
    return std::min(total_elements(), s.e0 + (k - s.k0) * s.g);
  }

  Shape batch_shape(std::int64_t rows) const {
    std::vector<std::int64_t> dims = sample_shape.dims();
    dims.insert(dims.begin(), rows);
    return Shape(dims);
  }

  static std::int64_t rows_of(const Plan& p, std::int64_t k) {
    const auto i = static_cast<std::size_t>(k);
    return p.offsets[i + 1] - p.offsets[i];
  }

  // The sampler's shard in batches of batch_size; or, regrouped, each step's global batch (the
  // samples of batch k of every original shard: elements [W b k, W b (k + 1)) of the sampler's
  // whole list, W ranks of batch b; or the layout's segments) split among group_world ranks, this
  // one taking its elements group_rank, group_rank + group_world, ...; a rank left with none takes
  // the chunk's first sample at weight 0 (every rank must run the step).
  std::shared_ptr<const Plan> make_plan() const {
    auto p = std::make_shared<Plan>();
    const std::int64_t nb = num_batches(), b = opt.batch_size, n = sampler.num_samples();
    p->offsets.push_back(0);
    if (group_world <= 0) {
      p->indices = sampler.indices();
      for (std::int64_t k = 0; k < nb; ++k) {
        p->offsets.push_back(std::min(n, (k + 1) * b));
        p->weights.push_back(1.0);
      }
      return p;
    }
    const std::vector<std::int64_t> all = sampler.all_indices();
    for (std::int64_t k = 0; k < nb; ++k) {
      const Segment seg = segment_of(k);
      const std::int64_t lo = element_of(k), hi = std::min(total_elements(), lo + seg.g);
      std::int64_t mine = 0;
      for (std::int64_t i = lo + group_rank; i < hi; i += group_world) {
        p->indices.push_back(all[static_cast<std::size_t>(i)]);
        ++mine;
      }
      if (mine == 0) p->indices.push_back(all[static_cast<std::size_t>(lo)]);
      p->offsets.push_back(static_cast<std::int64_t>(p->indices.size()));
      p->weights.push_back(static_cast<double>(mine * group_world) / static_cast<double>(hi - lo));
    }
    return p;
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

  // The key of transform t for a sample: depends only on (seed, epoch, sample, position).
  std::uint64_t transform_key(std::int64_t epoch, std::int64_t sample, std::size_t t) const {
    const rng::U32x4 r = rng::philox_block(
        opt.seed ^ (0xD1B54A32D192ED03ull * static_cast<std::uint64_t>(epoch + 1)),
        static_cast<std::uint64_t>(sample) * 16 + t);
    return (static_cast<std::uint64_t>(r.v[0]) << 32) | r.v[1];
  }

  // Sample `sample` (row `row` of batch `k` of `epoch`) through get() and the transforms into
  // `dst` (one sample of sample_shape); returns its label, checked on the host. bufa and bufb
  // are scratch of scratch_size() floats. Thread-safe (the dataset and transforms are).
  std::int64_t build_sample(std::int64_t sample, std::int64_t row, std::int64_t k,
                            std::int64_t epoch, float* bufa, float* bufb, float* dst) const {
    const std::int64_t classes = dataset->num_classes();
    std::int64_t label = 0;
    thread_local std::vector<float> va, vb;
    Shape shape;
    // The read, or with skip_bad_samples the first sample from `sample` on that reads (the
    // transforms stay keyed by `sample`, so the batch is the same whatever thread built it).
    const auto read = [&](std::int64_t i) {
      return variable_until > 0 ? dataset->get_sized(i, va, shape) : dataset->get(i, bufa);
    };
    if (!opt.skip_bad_samples) {
      label = read(sample);
    } else {
      const std::int64_t n = dataset->size();
      for (std::int64_t tries = 0;; ++tries) {
        const std::int64_t i = (sample + tries) % n;
        try {
          label = read(i);
          break;
        } catch (const std::exception& e) {
          if (epoch == current_epoch.load()) {
            std::lock_guard<std::mutex> lock(bad_mu);
            if (bad_epoch != epoch) bad.clear(), bad_epoch = epoch;
            const bool seen = std::any_of(bad.begin(), bad.end(), [&](const BadRecord& x) {
              return x.sample.index == i && x.sample.for_sample == sample;
            });
            if (!seen) bad.push_back({{i, sample, e.what()}, k});
          }
          COHORT_CHECK(tries + 1 < std::min<std::int64_t>(n, 64), "DataLoader: ", tries + 1,
                       " samples in a row from sample ", sample, " of ", dataset->describe(),
                       " failed to read (skip_bad_samples gives up); the last: ", e.what());
        }
      }
    }
    if (variable_until > 0) {
      // Decoded at its own size, then through the transforms up to the one that fixes the size,
      // in per-thread buffers that grow to the largest image seen (memory stays flat).
      for (std::size_t t = 0; t < variable_until; ++t) {
        const Shape next = transforms[t]->output_shape(shape);
        vb.resize(static_cast<std::size_t>(next.numel()));
        float* out = t + 1 == variable_until ? bufa : vb.data();
        transforms[t]->apply(va.data(), shape, out, transform_key(epoch, sample, t));
        if (t + 1 < variable_until) std::swap(va, vb);
        shape = next;
      }
    }
    // Checked here, on the host, because the loss ops do not read device labels back (that
    // would stop the device every step); a bad label on a GPU would only show as a NaN loss.
    COHORT_CHECK(label >= 0 && label < classes, "DataLoader: sample ", sample, " of ",
                 dataset->describe(), " (row ", row, " of batch ", k, ", epoch ", epoch,
                 ") has label ", label, ", not a class index in [0, ", classes, ")");
    float* cur = bufa;
    float* nxt = bufb;
    for (std::size_t t = variable_until; t < transforms.size(); ++t) {
      transforms[t]->apply(cur, stage_shapes[t], nxt, transform_key(epoch, sample, t));
      std::swap(cur, nxt);
    }
    std::copy(cur, cur + sample_shape.numel(), dst);
    return label;
  }

  // Writes batch `k` of the epoch whose indices are given into `out` (rows x sample floats) and
  // `labels` (no lock held): alone, or with the worker threads.
  void assemble(const Plan& plan, std::int64_t k, std::int64_t epoch, float* out,
                std::int64_t* labels) {
    const std::vector<std::int64_t>& idx = plan.indices;
    const std::int64_t begin = plan.offsets[static_cast<std::size_t>(k)];
    const std::int64_t count = rows_of(plan, k);
    if (opt.num_workers > 0) {
      if (count > 0) pool->assemble(idx.data() + begin, count, k, epoch, out, labels, wait_limit());
      return;
    }
    std::vector<float> bufa(scratch_size()), bufb(bufa.size());
    const std::int64_t per = sample_shape.numel();
    for (std::int64_t i = 0; i < count; ++i)
      labels[i] = build_sample(idx[static_cast<std::size_t>(begin + i)], i, k, epoch,
                               bufa.data(), bufb.data(), out + i * per);
  }

  // The batch transform (MixUp, CutMix) on the assembled rows, in host memory before any upload;
  // its soft targets go to slot.batch.targets (host; next() moves them to the device). Keyed by
  // (seed, epoch, the batch's first sample).
  void mix(Slot& slot, std::int64_t first_sample, std::int64_t rows, std::int64_t epoch,
           float* images, const std::int64_t* labels) const {
    if (!opt.batch_transform || rows == 0) return;
    const std::int64_t classes = opt.batch_transform->num_classes();
    slot.batch.targets = Tensor::empty({rows, classes}, DType::f32, *host);
    const rng::U32x4 r = rng::philox_block(
        opt.seed ^ (0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(epoch + 1)),
        0x4d4958000000ull + static_cast<std::uint64_t>(first_sample));  // "MIX"
    opt.batch_transform->apply(images, batch_shape(rows), labels,
                               slot.batch.targets.data<float>(),
                               (static_cast<std::uint64_t>(r.v[0]) << 32) | r.v[1]);
  }

  // Builds batch `k` into the slot: host tensors, or (staged) the stage's pinned buffer and an
  // upload enqueued on the upload stream. The stage was reserved by the caller.
  void build(Slot& slot, const Plan& plan, std::int64_t k, std::int64_t epoch) {
    const std::int64_t count = rows_of(plan, k);
    slot.batch.index = k;
    slot.batch.weight = plan.weights[static_cast<std::size_t>(k)];
    const auto first = plan.indices.begin() + plan.offsets[static_cast<std::size_t>(k)];
    slot.batch.samples.assign(first, first + count);
    slot.rows = count;
    if (slot.stage < 0) {
      slot.batch.images = Tensor::empty(batch_shape(count), DType::f32, *host);
      slot.batch.labels = Tensor::empty({count}, DType::i64, *host);
      assemble(plan, k, epoch, slot.batch.images.data<float>(),
               slot.batch.labels.data<std::int64_t>());
      mix(slot, count > 0 ? *first : 0, count, epoch, slot.batch.images.data<float>(),
          slot.batch.labels.data<std::int64_t>());
      return;
    }
    const detail::StagedUploads::Pinned p = stages->pinned(slot.stage);
    assemble(plan, k, epoch, p.images, p.labels);
    mix(slot, count > 0 ? *first : 0, count, epoch, p.images, p.labels);
    stages->upload(slot.stage, count);
  }

  // Under mu: a free stage, marked busy (-1 when not staged).
  int reserve_stage() { return stages ? stages->reserve() : -1; }
  void release_stage(int i) {  // under mu
    if (stages) stages->release(i);
  }

  // Staged: the batch of the slot's stage as fresh tensors on the compute stream; then the stage
  // is free again (also when this throws).
  void hand_out(const Slot& slot, Batch& out) {
    struct Release {
      Impl& m;
      int i;
      ~Release() {
        std::lock_guard<std::mutex> lock(m.mu);
        m.release_stage(i);
        m.cv.notify_all();
      }
    } release{*this, slot.stage};
    Batch b;
    b.index = slot.batch.index;
    b.weight = slot.batch.weight;
    b.samples = slot.batch.samples;
    stages->copy_out(slot.stage, slot.rows, b.images, b.labels);
    out = std::move(b);
  }

  // `fresh`: set_epoch's, whose epoch from its start has one segment, the last global batch size
  // (keep_rank_batch); the other callers keep the layout they just set.
  void start_epoch(std::int64_t epoch, std::int64_t first_batch = 0, bool fresh = false) {
    std::lock_guard<std::mutex> lock(mu);
    if (fresh && first_batch == 0 && !segments.empty())
      segments = {Segment{0, 0, segments.back().g}};
    sampler.set_epoch(epoch);
    current_epoch = epoch;
    plan = make_plan();
    ++generation;
    produced = consumed = first_batch;
    if (ready) release_stage(ready->stage);
    ready.reset();
    cv.notify_all();
  }

  void run_worker() {
    // This thread enqueues the staged uploads: it selects the device first, as every thread that
    // uses a device but did not make it must (Device::make_current).
    if (stages) device->make_current();
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return stop || (!ready && produced < num_batches()); });
      if (stop) return;
      const std::uint64_t gen = generation;
      const std::int64_t k = produced;
      const std::shared_ptr<const Plan> p = plan;  // set_epoch may replace it
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
          build(slot, *p, k, epoch);
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
  impl_->pool->start();
  if (options.prefetch) {
    try {
      impl_->worker = std::thread([this] { impl_->run_worker(); });
    } catch (...) {  // no destructor runs for a constructor that throws
      impl_->pool->stop();
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
  impl_->pool->cancel();
  if (impl_->worker.joinable()) impl_->worker.join();
  impl_->pool->stop();
}

void DataLoader::set_epoch(std::int64_t epoch, std::int64_t first_batch) {
  COHORT_CHECK(epoch >= 0, "DataLoader::set_epoch: epoch ", epoch, " is negative");
  COHORT_CHECK(first_batch >= 0 && first_batch <= num_batches(), "DataLoader::set_epoch: first "
               "batch ", first_batch, " is outside the epoch's 0..", num_batches(), " batches");
  impl_->start_epoch(epoch, first_batch, /*fresh=*/true);
}

bool DataLoader::next(Batch& out) {
  Impl& m = *impl_;
  Impl::Slot slot;
  if (!m.opt.prefetch) {
    std::int64_t k, epoch;
    std::shared_ptr<const Impl::Plan> plan;
    {
      std::lock_guard<std::mutex> lock(m.mu);
      if (m.consumed >= m.num_batches()) return false;
      k = m.consumed++;
      plan = m.plan;
      epoch = m.sampler.epoch();
      slot.stage = m.reserve_stage();
    }
    try {
      m.build(slot, *plan, k, epoch);
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
    // The soft targets (a few floats per row) are copied here rather than staged with the images.
    out.targets = slot.batch.targets.defined() ? slot.batch.targets.to(*m.device) : Tensor();
  } else if (m.device == m.host) {
    out = std::move(slot.batch);
  } else {
    out.index = slot.batch.index;
    out.weight = slot.batch.weight;
    out.samples = std::move(slot.batch.samples);
    out.images = slot.batch.images.to(*m.device);
    out.labels = slot.batch.labels.to(*m.device);
    out.targets = slot.batch.targets.defined() ? slot.batch.targets.to(*m.device) : Tensor();
  }
  return true;
}

std::vector<BadSample> DataLoader::bad_samples() const {
  std::lock_guard<std::mutex> lock(impl_->mu);  // consumed and the epoch; then bad_mu
  std::lock_guard<std::mutex> bad_lock(impl_->bad_mu);
  if (impl_->bad_epoch != impl_->sampler.epoch()) return {};
  std::vector<BadSample> out;
  for (const Impl::BadRecord& r : impl_->bad)
    if (r.batch < impl_->consumed) out.push_back(r.sample);
  std::sort(out.begin(), out.end(), [](const BadSample& a, const BadSample& b) {
    return a.for_sample != b.for_sample ? a.for_sample < b.for_sample : a.index < b.index;
  });
  return out;
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
    m.group_rank = -1;
    m.group_world = 0;
    m.segments.clear();
  }
  m.start_epoch(epoch);
}

void DataLoader::regroup(int rank, int world, bool keep_rank_batch, std::int64_t from) {
  Impl& m = *impl_;
  COHORT_CHECK(world >= 1 && rank >= 0 && rank < world, "DataLoader::regroup: rank ", rank, " of ",
               world, " ranks is not a rank of that group");
  const std::int64_t global = m.opt.batch_size * (keep_rank_batch ? world : m.sampler.replicas());
  const std::int64_t rows = (global + world - 1) / world;
  COHORT_CHECK(!m.stages || rows <= m.opt.batch_size, "DataLoader::regroup: ", world,
               " ranks would take up to ", rows, " samples each of the global batch of ", global,
               ", more than the ", m.opt.batch_size, " this loader stages for ", m.device->name(),
               " (regrouping a loader for a GPU to fewer ranks is not "
               "supported yet)");
  std::int64_t epoch = 0, at = 0;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    epoch = m.sampler.epoch();
    at = std::min(from >= 0 ? from : m.consumed, m.num_batches());
    m.group_rank = rank;
    m.group_world = world;
    if (keep_rank_batch) {
      const Impl::Segment s{at, m.element_of(at), global};
      while (!m.segments.empty() && m.segments.back().k0 >= at) m.segments.pop_back();
      m.segments.push_back(s);
    } else {
      m.segments.clear();
    }
  }
  m.start_epoch(epoch, at);
}

std::vector<std::int64_t> DataLoader::global_batch_samples(std::int64_t k) const {
  const Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(impl_->mu);
  COHORT_CHECK(k >= 0 && k < m.num_batches(), "DataLoader::global_batch_samples: batch ", k,
               " is outside the epoch's 0..", m.num_batches() - 1);
  const std::vector<std::int64_t> all = m.sampler.all_indices();
  const std::int64_t lo = m.element_of(k),
                     hi = std::min(m.total_elements(), lo + m.segment_of(k).g);
  return std::vector<std::int64_t>(all.begin() + lo, all.begin() + hi);
}

std::string DataLoader::layout() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::string out;
  for (const auto& s : impl_->segments)
    out += (out.empty() ? "" : ";") + std::to_string(s.k0) + ":" + std::to_string(s.e0) + ":" +
           std::to_string(s.g);
  return out;
}

void DataLoader::set_layout(const std::string& text) {
  Impl& m = *impl_;
  std::vector<Impl::Segment> segs;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find(';', at), text.size());
    const std::string part = text.substr(at, end - at);
    long long k0 = -1, e0 = -1, g = 0;
    char extra = 0;
    COHORT_CHECK(std::sscanf(part.c_str(), "%lld:%lld:%lld%c", &k0, &e0, &g, &extra) == 3 &&
                     k0 >= 0 && e0 >= 0 && g >= 1 &&
                     (segs.empty() || (k0 > segs.back().k0 && e0 >= segs.back().e0)),
                 "DataLoader::set_layout: '", part, "' of '", text,
                 "' is not a segment K0:E0:G after the previous one");
    segs.push_back({k0, e0, g});
    at = end + 1;
  }
  std::int64_t epoch = 0, first = 0;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    COHORT_CHECK(segs.empty() || segs.back().e0 <= m.total_elements(), "DataLoader::set_layout: '",
                 text, "' starts a segment past the epoch's ", m.total_elements(), " samples");
    m.segments = std::move(segs);
    epoch = m.sampler.epoch();
    first = std::min(m.consumed, m.num_batches());
  }
  m.start_epoch(epoch, first);
}

int DataLoader::group_world() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->group_world > 0 ? impl_->group_world : impl_->opt.world_size;
}

int DataLoader::rank() const { return impl_->opt.rank; }
const DataLoaderOptions& DataLoader::options() const { return impl_->opt; }
int DataLoader::world_size() const { return impl_->opt.world_size; }

std::int64_t DataLoader::num_batches() const { return impl_->num_batches(); }
std::int64_t DataLoader::num_samples() const { return impl_->sampler.num_samples(); }

Shape DataLoader::batch_shape(std::int64_t batch) const { return impl_->batch_shape(batch); }

}  // namespace cohort::data
