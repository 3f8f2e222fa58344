// Trainer's checkpoints (see trainer.hpp): finding and loading the newest whole checkpoint in
// checkpoint_dir, checking that a save fits the run that resumes it, applying a mid-epoch save to
// the next epoch, and saving (rank 0 copies, a CheckpointWriter writes in the background).
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "cohort/collectives/host_collectives.hpp"
#include "cohort/core/run_status.hpp"
#include "cohort/train/sharded_checkpoint.hpp"
#include "cohort/train/trainer.hpp"
#include "metadata_text.hpp"

#include <nlohmann/json.hpp>

namespace cohort::train {
namespace {

// mkdir -p, one level at a time.
void make_dirs(const std::string& dir) {
  std::string path;
  std::size_t start = 0;
  while (start <= dir.size()) {
    const std::size_t slash = dir.find('/', start);
    path = dir.substr(0, slash == std::string::npos ? dir.size() : slash);
    if (!path.empty() && ::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
      COHORT_FAIL("Trainer: cannot create checkpoint directory '", dir, "' (at '", path, "'): ",
                  std::strerror(errno));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  struct stat st {};
  COHORT_CHECK(::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode), "Trainer: checkpoint_dir '",
               dir, "' is not a directory");
}

std::string mb(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

}  // namespace

std::map<std::string, std::string> Trainer::run_info(const data::DataLoader& train) const {
  std::map<std::string, std::string> m;
  m["world_size"] = std::to_string(world_size());
  m["accumulation"] = std::to_string(options_.accumulation);
  if (ddp_) {
    const parallel::DDPOptions& o = ddp_->options();
    m["ddp"] = std::string("deterministic=") + (o.deterministic ? "1" : "0") +
               " bf16_compression=" + (o.bf16_compression ? "1" : "0") +
               " f16_compression=" + (o.f16_compression ? "1" : "0");
  } else {
    m["ddp"] = "none";
  }
  const data::DataLoaderOptions& lo = train.options();
  m["loader.seed"] = std::to_string(lo.seed);
  m["loader.shuffle"] = lo.shuffle ? "1" : "0";
  m["loader.batches"] = std::to_string(train.num_batches());
  // Elastic, each rank's batch kept: how this epoch's samples are dealt out since the changes.
  if (const std::string layout = train.layout(); !layout.empty()) m["loader.layout"] = layout;
  // What the class indices mean (image folders): a JSON array of the names, class i at i.
  if (const auto names = train.dataset().class_names(); !names.empty())
    m["data.classes"] = nlohmann::json(names).dump();
  return m;
}

void Trainer::resume_from_dir() {
  dir_checked_ = true;
  const std::string& dir = options_.checkpoint_dir;
  make_dirs(dir);
  const std::string& file = checkpoint_file_;
  std::int64_t step = -1;  // -1: nothing to resume from
  if (sharded_checkpoints_ ? has_sharded_checkpoint(file) : has_checkpoint_files(file)) {
    CheckpointLoad got;
    try {
      got = resume(file);
    } catch (const Error& e) {
      COHORT_FAIL("Trainer: cannot resume from checkpoint_dir '", dir, "' (nothing in it was "
                  "changed; move it away, or pick another directory, to start afresh): ", e.why());
    }
    step = got.progress.global_step;
    if (options_.show_progress)
      std::printf("resumed from %s: %lld epoch%s and %lld step%s done (global step %lld)\n",
                  got.model_path.c_str(), static_cast<long long>(got.progress.epoch),
                  got.progress.epoch == 1 ? "" : "s",
                  static_cast<long long>(got.progress.step_in_epoch),
                  got.progress.step_in_epoch == 1 ? "" : "s", static_cast<long long>(step));
  }
  if (comm_ && comm_->size() > 1) {
    // Every rank must have found the same save: a directory that is not shared (another host's
    // disk) or one written to meanwhile would resume the ranks at different steps.
    double v[2] = {static_cast<double>(step), -static_cast<double>(step)};
    with_context("Trainer (comparing the checkpoint each rank found in '" + dir + "')", [&] {
      comm::allreduce_host(*comm_, model_.device(), v, 2, DType::f64, comm::ReduceOp::max);
    });
    COHORT_CHECK(v[0] == -v[1], "Trainer: the ranks found different checkpoints in '", dir,
                 "': global steps from ", static_cast<long long>(-v[1]), " to ",
                 static_cast<long long>(v[0]), " (-1: none; rank ", rank(), " found ",
                 static_cast<long long>(step), "). Every rank must see the same directory: one "
                 "host, or a shared file system");
  }
}

void Trainer::check_resume(const data::DataLoader& train) {
  if (!resume_pending_ || resume_checked_) return;
  resume_checked_ = true;
  const std::map<std::string, std::string> now = run_info(train);
  const std::string& file = checkpoint_file_.empty() ? std::string("the checkpoint") : checkpoint_file_;
  const bool mid_epoch = resumed_.step_in_epoch > 0;
  // The world size first: it also changes the shards, hence the batches per epoch.
  std::vector<std::pair<std::string, std::string>> order(now.begin(), now.end());
  std::stable_partition(order.begin(), order.end(),
                        [](const auto& kv) { return kv.first == "world_size"; });
  std::string changed;  // at an epoch's end: allowed, and said
  for (const auto& [key, value] : order) {
    const auto it = resumed_.run.find(key);
    if (it == resumed_.run.end() || it->second == value) continue;  // older saves lack some keys
    if (key.rfind("epoch.", 0) == 0) continue;
    // Other classes (or another order of them): the model's outputs would mean other things.
    COHORT_CHECK(key != "data.classes", "Trainer: cannot resume from ", file, ": it was trained "
                 "on the classes ", it->second, ", this run's data set has ", value,
                 " (class i is the i-th name: the model's outputs would change meaning)");
    if (!mid_epoch) {
      changed += (changed.empty() ? "" : ", ") + key + " '" + it->second + "' -> '" + value + "'";
      continue;
    }
    std::string why;
    if (key == "world_size")
      why = "resuming mid-epoch with another number of ranks is not supported: the position is a "
            "position in each rank's shard, and the shards depend on the number of ranks. Resume "
            "with " + it->second + " ranks (or from a checkpoint taken at an epoch's end, which "
            "any number of ranks can), or start a new run from the weights alone (load_model)";
    else if (key == "ddp")
      why = "the gradients would be reduced another way than the saved run's";
    else if (key.rfind("loader.", 0) == 0)
      why = "the training data would come in another order or in other batches (seed, "
            "shuffling, batch size or dataset changed)";
    else
      why = "the steps would not be the saved run's";
    COHORT_FAIL("Trainer: cannot resume from ", file, " (saved after step ",
                resumed_.step_in_epoch, " of epoch ", resumed_.epoch + 1, "): it was saved by a "
                "run with ", key, " = '", it->second, "', this run has '", value, "': ", why);
  }
  if (!changed.empty() && is_lead())
    std::fprintf(stderr, "Trainer: resuming %s, saved at the end of epoch %lld, with %s: the epochs "
                 "from here are this run's (sharded and batched as it says), not the saved run's "
                 "continuation\n", file.c_str(), static_cast<long long>(resumed_.epoch),
                 changed.c_str());
}

std::int64_t Trainer::apply_resume(const data::DataLoader& train, std::int64_t epoch,
                                   EpochResult& r, double& loss_sum) {
  if (!resume_pending_) return 0;
  check_resume(train);
  resume_pending_ = false;
  const std::string& file = checkpoint_file_.empty() ? std::string("the checkpoint") : checkpoint_file_;
  if (epoch != resumed_.epoch + 1 || resumed_.step_in_epoch == 0) return 0;
  const auto num = [&](const char* key, double fallback) {
    const auto it = resumed_.run.find(key);
    return it == resumed_.run.end() ? fallback : detail::parse_exact(file, std::string("run.") + key, it->second);
  };
  loss_sum = num("epoch.loss_sum", 0);
  r.grad_norm = num("epoch.grad_norm", 0);
  r.nonfinite_grad_norms = static_cast<std::int64_t>(num("epoch.nonfinite_grad_norms", 0));
  r.skipped_steps = static_cast<std::int64_t>(num("epoch.skipped_steps", 0));
  return resumed_.step_in_epoch;
}

TrainingProgress Trainer::progress_now(const data::DataLoader& train, std::int64_t epochs_done,
                                       std::int64_t step_in_epoch, const EpochResult& r,
                                       double loss_sum, comm::Communicator* avg_over) {
  TrainingProgress p;
  p.epoch = epochs_done;
  p.global_step = global_step_;
  p.step_in_epoch = step_in_epoch;
  p.run = run_info(train);
  if (options_.grad_scaler) {
    const optim::StateDict st = options_.grad_scaler->state();
    for (const auto& [k, v] : st.scalars) p.run["grad_scaler." + k] = detail::exact_text(v);
  }
  if (step_in_epoch > 0) {
    p.run["epoch.skipped_steps"] = std::to_string(r.skipped_steps);
    // The epoch's loss so far, so that the resumed epoch reports the same mean. The epoch's
    // figure is averaged over the ranks at its end, so the average of the sums is what counts.
    if (avg_over && avg_over->size() > 1)
      with_context("Trainer (averaging the epoch's loss sum for the checkpoint of step " +
                       std::to_string(global_step_) + ")",
                   [&] {
                     comm::allreduce_host(*avg_over, model_.device(), &loss_sum, 1, DType::f64,
                                          comm::ReduceOp::avg);
                   });
    p.run["epoch.loss_sum"] = detail::exact_text(loss_sum);
    p.run["epoch.grad_norm"] = detail::exact_text(r.grad_norm);
    p.run["epoch.nonfinite_grad_norms"] = std::to_string(r.nonfinite_grad_norms);
  }
  if (options_.ema) {  // the averages travel with the checkpoint (TrainingProgress::extra)
    p.extra = options_.ema->checkpoint_tensors();
    p.run["model_ema.n_averaged"] = std::to_string(options_.ema->n_averaged());
  }
  return p;
}

void Trainer::save_checkpoint_now(const data::DataLoader& train, std::int64_t epochs_done,
                                  std::int64_t step_in_epoch, const EpochResult& r, double loss_sum,
                                  bool wait) {
  const TrainingProgress p = progress_now(train, epochs_done, step_in_epoch, r, loss_sum, comm_);
  if (sharded_checkpoints_) {  // every rank copies its shard and writes it in the background
    timer_.time("checkpoint", [&] {
      using clock = std::chrono::steady_clock;
      const auto t0 = clock::now();
      writer_.wait();  // the previous write (rethrowing its error)
      const auto t1 = clock::now();
      ShardedSnapshot snap = snapshot_sharded_checkpoint(checkpoint_file_, *ddp_, opt_, sched_, p);
      const auto t2 = clock::now();
      writer_.save_sharded(std::move(snap), std::chrono::duration<double>(t2 - t1).count(),
                           std::chrono::duration<double>(t1 - t0).count());
      sharded_saved_step_ = global_step_;
      if (wait) writer_.wait();
    });
    return;
  }
  if (!is_lead()) return;
  timer_.time("checkpoint", [&] {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    writer_.wait();  // the previous write (rethrowing its error); then its memory is free
    const auto t1 = clock::now();
    CheckpointSnapshot snap =
        snapshot_checkpoint(ddp_ ? ddp_->module() : model_, opt_, sched_, p, writer_.reclaim());
    const auto t2 = clock::now();
    writer_.save(checkpoint_file_, std::move(snap),
                 std::chrono::duration<double>(t2 - t1).count(),
                 std::chrono::duration<double>(t1 - t0).count());
    if (wait) writer_.wait();
  });
}

void Trainer::report_saves(ProgressBar* bar) {
  for (;;) {
    const CheckpointWriter::Timing t = writer_.take_finished();
    if (t.step < 0) return;
    saves_.push_back(t);
    metrics_.write("checkpoint", {{"step", static_cast<double>(t.step)},
                                  {"epoch_end", t.epoch_end ? 1.0 : 0.0},
                                  {"blocked_ms", 1e3 * (t.wait_s + t.copy_s)},
                                  {"copy_ms", 1e3 * t.copy_s},
                                  {"wait_ms", 1e3 * t.wait_s},
                                  {"write_ms", 1e3 * t.write_s},
                                  {"bytes", static_cast<double>(t.bytes)}});
    if (!options_.show_progress || !is_lead()) continue;
    char line[512];
    const std::string what =
        sharded_checkpoints_ ? "sharded, " + std::to_string(world_size()) + " files, rank 0's " +
                                   mb(t.bytes) + "; rank 0 waits for every rank's and publishes"
                             : mb(t.bytes);
    std::snprintf(line, sizeof line,
                  "checkpoint: step %lld%s -> %s (%s): training blocked %.1f ms (copy %.1f ms, "
                  "waiting for the previous write %.1f ms), written in %.1f ms in the background",
                  static_cast<long long>(t.step), t.epoch_end ? ", epoch's end" : "",
                  checkpoint_file_.c_str(), what.c_str(), 1e3 * (t.wait_s + t.copy_s),
                  1e3 * t.copy_s, 1e3 * t.wait_s, 1e3 * t.write_s);
    if (bar)
      bar->note(line);
    else
      std::printf("%s\n", line);
  }
}

// After a checkpoint loaded: the exponential moving average's averages and count, when the run
// keeps one. A checkpoint saved without one cannot continue a run that has one.
void Trainer::restore_ema(const CheckpointLoad& got) {
  if (!options_.ema) return;
  const auto it = got.progress.run.find("model_ema.n_averaged");
  COHORT_CHECK(it != got.progress.run.end(), "Trainer: checkpoint ", got.model_path,
               " holds no exponential moving average of the weights (saved without "
               "TrainerOptions::ema, --model-ema), which this run keeps");
  options_.ema->load(got.progress.extra, std::stoll(it->second));
}

}  // namespace cohort::train
