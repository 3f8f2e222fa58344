// The DataLoader's decoding-worker pool (the rules are in workers.hpp). One mutex guards the job
// queue and every job's counters; a worker holds it only to claim a row and to count it done,
// never while building a sample.
#include "workers.hpp"

#include <algorithm>
#include <exception>
#include <string>

#include "cohort/core/error.hpp"

namespace cohort::data::detail {

WorkerPool::WorkerPool(int num_workers, std::int64_t sample_floats, std::size_t scratch_floats,
                       BuildSample build, int rank)
    : num_workers_(num_workers), per_(sample_floats), scratch_(scratch_floats),
      build_(std::move(build)), rank_(rank) {}

WorkerPool::~WorkerPool() { stop(); }

void WorkerPool::start() {
  busy_.assign(static_cast<std::size_t>(num_workers_), Busy{});
  try {
    for (int w = 0; w < num_workers_; ++w)
      threads_.emplace_back([this, w] { run(static_cast<std::size_t>(w)); });
  } catch (...) {
    stop();
    throw;
  }
}

void WorkerPool::assemble(const std::int64_t* samples, std::int64_t count, std::int64_t batch,
                          std::int64_t epoch, float* out, std::int64_t* labels,
                          std::chrono::milliseconds limit) {
  if (count <= 0) return;
  auto job = std::make_shared<Job>();
  job->samples.assign(samples, samples + count);
  job->batch = batch;
  job->epoch = epoch;
  job->images.resize(static_cast<std::size_t>(count * per_));
  job->labels.resize(static_cast<std::size_t>(count));
  std::unique_lock<std::mutex> lock(mu_);
  jobs_.push_back(job);
  work_.notify_all();
  done_.wait_for(lock, limit, [&] { return job->done == count || stop_; });
  if (job->done != count) {
    // Given up: no worker claims another row of it; a worker still on one writes only into
    // the job, which it keeps alive.
    jobs_.erase(std::remove(jobs_.begin(), jobs_.end(), job), jobs_.end());
    COHORT_CHECK(!stop_, "DataLoader: destroyed while batch ", batch, " was being built");
    std::string doing;
    const auto now = std::chrono::steady_clock::now();
    for (std::size_t w = 0; w < busy_.size(); ++w) {
      doing += (w ? ", " : "") + std::string("worker ") + std::to_string(w);
      if (busy_[w].sample < 0) {
        doing += " idle";
      } else {
        doing += " on sample " + std::to_string(busy_[w].sample) + " of batch " +
                 std::to_string(busy_[w].batch) + " for " +
                 std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    now - busy_[w].since)
                                    .count()) +
                 " ms";
      }
    }
    COHORT_FAIL("DataLoader (rank ", rank_, "): only ", job->done, " of the ", count,
                " samples of batch ", batch, " of epoch ", epoch, " were built within ",
                limit.count(), " ms by the ", num_workers_, " worker threads "
                "(DataLoaderOptions::timeout, or COHORT_TIMEOUT): ", doing,
                " (is the dataset's get() or a transform stuck?)");
  }
  lock.unlock();
  if (job->error) std::rethrow_exception(job->error);
  std::copy(job->images.begin(), job->images.end(), out);
  std::copy(job->labels.begin(), job->labels.end(), labels);
}

void WorkerPool::run(std::size_t w) {
  std::vector<float> bufa(scratch_), bufb(bufa.size());
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    // Idle until there is work: no timeout here, the assembler's wait has one.
    work_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
    if (stop_) return;
    const std::shared_ptr<Job> job = jobs_.front();
    const auto count = static_cast<std::int64_t>(job->samples.size());
    const std::int64_t row = job->claimed++;
    if (job->claimed == count) jobs_.pop_front();
    if (!job->error) {  // after a failed row, the rows not yet claimed are skipped
      const std::int64_t sample = job->samples[static_cast<std::size_t>(row)];
      busy_[w] = {job->batch, sample, std::chrono::steady_clock::now()};
      lock.unlock();
      std::exception_ptr error;
      try {
        job->labels[static_cast<std::size_t>(row)] =
            build_(sample, row, job->batch, job->epoch, bufa.data(), bufb.data(),
                   job->images.data() + row * per_);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      busy_[w] = Busy{};
      if (error && (!job->error || row < job->error_row)) {
        job->error = error;
        job->error_row = row;
      }
    }
    if (++job->done == count) done_.notify_all();
  }
}

void WorkerPool::cancel() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  done_.notify_all();
}

void WorkerPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_.notify_all();
  done_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

}  // namespace cohort::data::detail
