// The DataLoader's decoding workers (DataLoaderOptions::num_workers): a pool of threads that
// build the rows of one batch in parallel. Kept apart from the loader so that its rules (rows
// claimed in order, the lowest failing row's error, a timeout that names each worker) can be
// tested with any sample builder, without a data set or a device.
//
// Whoever assembles a batch posts it as a job and waits for it; each worker claims the job's next
// row, builds that sample into the job's own buffers and counts it done; the assembler then copies
// the whole batch into its destination. The job owns its buffers (and is shared with the workers)
// so that an assembler that gives up at its timeout leaves a stuck worker writing into memory
// nobody else uses, not into a tensor or staging buffer handed out since; the extra copy of the
// batch is small next to building it. After a row fails, rows not yet claimed are skipped, and
// the error reported is the one of the lowest failing row: every row before it was claimed
// before the skipping started, so this is the error a loop over the rows would have raised.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace cohort::data::detail {

// Builds sample `sample` (row `row` of batch `batch` of `epoch`) into `dst` and returns its
// label; `bufa` and `bufb` are scratch. Called from several threads at once.
using BuildSample = std::function<std::int64_t(std::int64_t sample, std::int64_t row,
                                               std::int64_t batch, std::int64_t epoch,
                                               float* bufa, float* bufb, float* dst)>;

class WorkerPool {
 public:
  // `sample_floats` floats per row of a batch; each worker owns two scratch buffers of
  // `scratch_floats`. `rank` is only for the timeout message. Starts no thread (start() does).
  WorkerPool(int num_workers, std::int64_t sample_floats, std::size_t scratch_floats,
             BuildSample build, int rank);
  ~WorkerPool();  // stop()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void start();  // the threads; on failure the started ones are stopped and the error thrown

  // Builds the `count` samples `samples` as batch `batch` of `epoch` into `out` (count x
  // sample_floats) and `labels`. Throws the lowest failing row's error; or, when the rows are not
  // all built within `limit` (or cancel() was called), an error naming what each worker is doing.
  void assemble(const std::int64_t* samples, std::int64_t count, std::int64_t batch,
                std::int64_t epoch, float* out, std::int64_t* labels,
                std::chrono::milliseconds limit);

  // An assemble() waiting now or later gives up at once; the threads end at their next job.
  void cancel();
  // cancel(), then wakes and joins every thread. Idempotent.
  void stop();

 private:
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

  void run(std::size_t w);

  const int num_workers_;
  const std::int64_t per_;
  const std::size_t scratch_;
  const BuildSample build_;
  const int rank_;
  std::mutex mu_;  // guards everything below but threads_
  std::condition_variable work_, done_;
  std::deque<std::shared_ptr<Job>> jobs_;  // jobs with rows left to claim
  std::vector<Busy> busy_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace cohort::data::detail
