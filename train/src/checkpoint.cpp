// Checkpoints (see checkpoint.hpp): the model file, the training-state file with every scalar as
// exact metadata text, and save_checkpoint/load_checkpoint, which keep the pair whole through a
// crash by writing the new pair under other names, hard-linking the old one as .prev, and
// renaming; load_checkpoint falls back to .prev when the digests of a pair disagree.
#include "cohort/train/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "cohort/core/hash.hpp"
#include "cohort/core/run_status.hpp"
#include "cohort/layers/dropout.hpp"
#include "cohort/train/safetensors.hpp"
#include "cohort/train/sharded_checkpoint.hpp"
#include "metadata_text.hpp"
#include "training_state.hpp"

namespace cohort::train {
namespace {

using detail::exact_text;
using detail::parse_exact;

// Visits every Dropout in the tree with its dotted path.
void for_each_dropout(const nn::Module& m, const std::string& prefix,
                      const std::function<void(const std::string&, nn::Dropout&)>& fn) {
  if (auto* d = dynamic_cast<const nn::Dropout*>(&m))
    fn(prefix.empty() ? "<root>" : prefix, const_cast<nn::Dropout&>(*d));
  for (const auto& [name, child] : m.children())
    for_each_dropout(*child, prefix.empty() ? name : prefix + "." + name, fn);
}

const std::string& meta(const io::SafetensorsFile& f, const std::string& path,
                        const std::string& key) {
  const auto it = f.metadata.find(key);
  COHORT_CHECK(it != f.metadata.end(), "checkpoint '", path, "' lacks '", key, "'");
  return it->second;
}

}  // namespace

void save_model(const std::string& path, const nn::Module& model) {
  io::NamedTensors ts;
  for (const auto& e : model.state_dict()) {
    // Undefined with a shape: Tensor::released (a plain undefined tensor has rank 0).
    COHORT_CHECK(e.tensor.defined() || e.tensor.shape().rank() == 0, "save_model('", path, "'): '",
                 e.name, "' ", e.tensor.shape().str(),
                 " has no value here: its value lives "
                 "elsewhere: a ZeRO stage 3 parameter between uses; save inside "
                 "DistributedDataParallel::summon_full_params");
    ts.emplace_back(e.name, e.tensor);
  }
  io::save_safetensors(path, ts,
                       {{"format", "pt"}, {"writer", "cohort"},
                        {"cohort.state_digest", nn::state_digest(model)}});
}

void load_model(const std::string& path, nn::Module& model) {
  const io::SafetensorsFile f = io::load_safetensors(path);
  const auto current = model.state_dict();
  COHORT_CHECK(!current.empty(), "load_model('", path, "'): the model has no state");
  // Staged on the model's device; load_state_dict checks every name and shape before it copies.
  Device& dev = current.front().tensor.device();
  std::vector<nn::NamedTensor> state;
  for (const auto& e : f.tensors) state.push_back({e.name, e.to(dev)});
  try {
    model.load_state_dict(state, /*strict=*/true);
  } catch (const Error& e) {
    COHORT_FAIL("checkpoint '", path, "' does not match the model: ", e.why());
  }
}

std::string state_path_for(const std::string& model_path) {
  const std::string ext = ".safetensors";
  if (model_path.size() > ext.size() &&
      model_path.compare(model_path.size() - ext.size(), ext.size(), ext) == 0)
    return model_path.substr(0, model_path.size() - ext.size()) + ".state" + ext;
  return model_path + ".state.safetensors";
}

namespace detail {

std::map<std::string, std::string> state_metadata(const nn::Module& model,
                                                  const optim::Optimizer& optimizer,
                                                  const optim::Scheduler* scheduler,
                                                  const TrainingProgress& progress,
                                                  std::vector<io::SafetensorsEntry>* tensors) {
  std::size_t used = 0;
  std::map<std::string, std::string> md;
  md["format"] = "cohort-training-state";
  md["epoch"] = exact_text(static_cast<double>(progress.epoch));
  md["global_step"] = exact_text(static_cast<double>(progress.global_step));
  md["step_in_epoch"] = exact_text(static_cast<double>(progress.step_in_epoch));
  for (const auto& [k, v] : progress.run) md["run." + k] = v;
  const optim::StateDict os = optimizer.state();
  md["optimizer.kind"] = os.kind;
  for (const auto& [k, t] : os.tensors) {
    if (used == tensors->size()) tensors->emplace_back();
    (*tensors)[used++].assign("optimizer." + k, t);
  }
  for (const auto& [k, t] : progress.extra) {
    if (used == tensors->size()) tensors->emplace_back();
    (*tensors)[used++].assign("extra." + k, t);
  }
  tensors->resize(used);
  for (const auto& [k, v] : os.scalars) md["optimizer." + k] = exact_text(v);
  if (scheduler) {
    const optim::StateDict ss = scheduler->state();
    md["scheduler.kind"] = ss.kind;
    for (const auto& [k, v] : ss.scalars) md["scheduler." + k] = exact_text(v);
  }
  for_each_dropout(model, "", [&](const std::string& p, nn::Dropout& d) {
    // 64-bit seeds and steps as decimal text: a double cannot hold every 64-bit value.
    md["rng." + p + ".seed"] = std::to_string(d.seed());
    md["rng." + p + ".step"] = std::to_string(d.step());
  });
  return md;
}

}  // namespace detail

namespace {

std::string digest_of(const std::vector<io::SafetensorsEntry>& state) {
  std::uint64_t h = kFnvOffset;
  for (const auto& e : state)
    h = nn::state_digest_fold(h, e.name, e.shape, e.bytes.data(), e.bytes.size());
  return nn::digest_hex(h);
}

}  // namespace

void save_training_state(const std::string& path, const nn::Module& model,
                         const optim::Optimizer& optimizer, const optim::Scheduler* scheduler,
                         const TrainingProgress& progress) {
  std::vector<io::SafetensorsEntry> ts;
  std::map<std::string, std::string> md =
      detail::state_metadata(model, optimizer, scheduler, progress, &ts);
  // The weights this state belongs to: load_training_state refuses a model holding others.
  md["model.state_digest"] = nn::state_digest(model);
  io::save_safetensors(path, ts, md);
}

TrainingProgress load_training_state(const std::string& path, nn::Module& model,
                                     optim::Optimizer& optimizer, optim::Scheduler* scheduler) {
  const io::SafetensorsFile f = io::load_safetensors(path);
  COHORT_CHECK(meta(f, path, "format") == "cohort-training-state", "checkpoint '", path,
               "' is not a cohort training state (format '", meta(f, path, "format"), "')");
  if (const auto it = f.metadata.find("model.state_digest"); it != f.metadata.end()) {
    const std::string now = nn::state_digest(model);
    COHORT_CHECK(it->second == now, "training state '", path, "' belongs to model weights with "
                 "digest ", it->second, ", but the model holds weights with digest ", now,
                 ": the model file and the training state come from different saves (a crash "
                 "between their writes, or files mixed up); load the model saved with this state, "
                 "or use load_checkpoint, which falls back to the previous whole pair");
  }
  std::map<std::string, Tensor> optimizer_tensors, extra;
  COHORT_CHECK(optimizer.num_params() > 0, "load_training_state: the optimizer has no parameters");
  Device& dev = optimizer.params(0).front()->value.device();  // load_state copies where needed
  for (const auto& e : f.tensors) {
    if (e.name.rfind("extra.", 0) == 0) {
      extra[e.name.substr(6)] = e.to(dev);
      continue;
    }
    COHORT_CHECK(e.name.rfind("optimizer.", 0) == 0, "checkpoint '", path, "': unexpected tensor '",
                 e.name, "'");
    optimizer_tensors[e.name.substr(10)] = e.to(dev);
  }
  return detail::apply_training_state(path, f.metadata, std::move(optimizer_tensors),
                                      std::move(extra), model, optimizer, scheduler);
}

namespace detail {

TrainingProgress apply_training_state(const std::string& path,
                                      const std::map<std::string, std::string>& md,
                                      std::map<std::string, Tensor> optimizer_tensors,
                                      std::map<std::string, Tensor> extra, nn::Module& model,
                                      optim::Optimizer& optimizer, optim::Scheduler* scheduler) {
  const auto meta = [&](const std::string& key) -> const std::string& {
    const auto it = md.find(key);
    COHORT_CHECK(it != md.end(), "checkpoint '", path, "' lacks '", key, "'");
    return it->second;
  };
  TrainingProgress p;
  p.epoch = static_cast<std::int64_t>(parse_exact(path, "epoch", meta("epoch")));
  p.global_step = static_cast<std::int64_t>(parse_exact(path, "global_step", meta("global_step")));
  // Absent from checkpoints written before mid-epoch saves existed: those are epoch-end saves.
  if (const auto it = md.find("step_in_epoch"); it != md.end())
    p.step_in_epoch = static_cast<std::int64_t>(parse_exact(path, "step_in_epoch", it->second));
  for (const auto& [k, v] : md)
    if (k.rfind("run.", 0) == 0) p.run[k.substr(4)] = v;
  p.extra = std::move(extra);

  optim::StateDict os;
  os.kind = meta("optimizer.kind");
  os.tensors = std::move(optimizer_tensors);
  optim::StateDict ss;
  for (const auto& [k, v] : md) {
    if (k.rfind("optimizer.", 0) == 0 && k != "optimizer.kind")
      os.scalars[k.substr(10)] = parse_exact(path, k, v);
    if (k.rfind("scheduler.", 0) == 0 && k != "scheduler.kind")
      ss.scalars[k.substr(10)] = parse_exact(path, k, v);
  }
  const bool has_sched = md.count("scheduler.kind") != 0;
  COHORT_CHECK(has_sched == (scheduler != nullptr), "checkpoint '", path, "' ",
               has_sched ? "has" : "has no", " scheduler state but the run ",
               scheduler ? "has a scheduler" : "has none");
  if (has_sched) ss.kind = meta("scheduler.kind");

  // Validate the random-number entries before changing anything.
  std::vector<std::pair<nn::Dropout*, std::pair<std::uint64_t, std::uint64_t>>> rng;
  for_each_dropout(model, "", [&](const std::string& dp, nn::Dropout& d) {
    const std::string& s = meta("rng." + dp + ".seed");
    const std::string& st = meta("rng." + dp + ".step");
    rng.push_back(
        {&d, {std::strtoull(s.c_str(), nullptr, 10), std::strtoull(st.c_str(), nullptr, 10)}});
  });
  try {
    optimizer.load_state(os);
    if (scheduler) scheduler->load_state(ss);
  } catch (const Error& e) {
    COHORT_FAIL("checkpoint '", path, "' does not match this run: ", e.why());
  }
  for (auto& [d, v] : rng) {
    d->set_seed(v.first);
    d->set_step(v.second);
  }
  return p;
}

}  // namespace detail

namespace {

bool exists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }

// Hard-links `from` to `to` through a temporary name, so that `to` is always whole.
void link_as(const std::string& from, const std::string& to) {
  const std::string tmp = to + ".tmp." + std::to_string(::getpid());
  ::unlink(tmp.c_str());
  COHORT_CHECK(::link(from.c_str(), tmp.c_str()) == 0, "checkpoint: cannot link '", from,
               "' as '", tmp, "': ", std::strerror(errno));
  if (::rename(tmp.c_str(), to.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    COHORT_FAIL("checkpoint: cannot rename '", tmp, "' to '", to, "': ", std::strerror(err));
  }
}

void rename_or_fail(const std::string& from, const std::string& to) {
  COHORT_CHECK(::rename(from.c_str(), to.c_str()) == 0, "checkpoint: cannot rename '", from,
               "' to '", to, "': ", std::strerror(errno));
}

void sync_dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

}  // namespace

std::string previous_path_for(const std::string& path) { return path + ".prev"; }

bool has_checkpoint_files(const std::string& path) {
  const std::string state = state_path_for(path);
  return exists(path) || exists(state) || exists(previous_path_for(path)) ||
         exists(previous_path_for(state));
}

std::size_t CheckpointSnapshot::bytes() const {
  std::size_t n = 0;
  for (const auto& e : model) n += e.bytes.size();
  for (const auto& e : optimizer) n += e.bytes.size();
  return n;
}

CheckpointSnapshot snapshot_checkpoint(const nn::Module& model, const optim::Optimizer& optimizer,
                                       const optim::Scheduler* scheduler,
                                       const TrainingProgress& progress,
                                       CheckpointSnapshot reuse) {
  CheckpointSnapshot s = std::move(reuse);
  const auto state = model.state_dict();
  s.model.resize(state.size());
  for (std::size_t i = 0; i < state.size(); ++i) s.model[i].assign(state[i].name, state[i].tensor);
  s.state = detail::state_metadata(model, optimizer, scheduler, progress, &s.optimizer);
  s.global_step = progress.global_step;
  s.epoch_end = progress.step_in_epoch == 0;
  return s;
}

void write_checkpoint(const std::string& path, const CheckpointSnapshot& snapshot) {
  const std::string state = state_path_for(path);
  const std::string new_model = path + ".new", new_state = state + ".new";
  const std::string digest = digest_of(snapshot.model);
  std::map<std::string, std::string> md = snapshot.state;
  md["model.state_digest"] = digest;
  // 1. The new pair, whole on disk under other names (each write is atomic and fsynced).
  io::save_safetensors(new_model, snapshot.model,
                       {{"format", "pt"}, {"writer", "cohort"}, {"cohort.state_digest", digest}});
  io::save_safetensors(new_state, snapshot.optimizer, md);
  // 2. The current pair, if whole, also becomes the previous pair (hard links: no copy).
  if (exists(path) && exists(state)) {
    link_as(path, previous_path_for(path));
    link_as(state, previous_path_for(state));
  }
  // 3. The new pair takes the names. A crash between these two renames leaves a new state next
  //    to the old model: load_checkpoint sees the digests differ and takes the previous pair.
  rename_or_fail(new_state, state);
  rename_or_fail(new_model, path);
  sync_dir_of(path);
  // 4. The previous pair is no longer needed.
  ::unlink(previous_path_for(state).c_str());
  ::unlink(previous_path_for(path).c_str());
}

void save_checkpoint(const std::string& path, const nn::Module& model,
                     const optim::Optimizer& optimizer, const optim::Scheduler* scheduler,
                     const TrainingProgress& progress) {
  write_checkpoint(path, snapshot_checkpoint(model, optimizer, scheduler, progress));
}

struct CheckpointWriter::State {
  std::mutex mu;
  std::thread thread;
  bool running = false;          // a write is in flight (under mu)
  std::exception_ptr error;      // of the last write
  Timing current;                // the write in flight
  std::deque<Timing> finished;   // done and not yet taken (a save's wait() can finish the
                                 // previous write before anyone took it)
  CheckpointSnapshot spare;      // the last snapshot written, for reclaim()
};

CheckpointSnapshot CheckpointWriter::reclaim() {
  if (!state_) return {};
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->running) return {};
  return std::move(state_->spare);
}

CheckpointWriter::~CheckpointWriter() {
  if (state_ && state_->thread.joinable()) state_->thread.join();
}

bool CheckpointWriter::busy() const {
  if (!state_) return false;
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->running;
}

CheckpointWriter::Timing CheckpointWriter::wait() {
  if (!state_ || !state_->thread.joinable()) return {};
  state_->thread.join();
  std::exception_ptr err;
  Timing t;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    std::swap(err, state_->error);
    t = state_->current;
  }
  if (err) std::rethrow_exception(err);
  return t;
}

CheckpointWriter::Timing CheckpointWriter::take_finished() {
  Timing t;
  if (!state_) return t;
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->finished.empty()) return t;
  t = state_->finished.front();
  state_->finished.pop_front();
  return t;
}

double CheckpointWriter::start(Timing timing, std::function<void()> write, double waited_s) {
  const auto t0 = std::chrono::steady_clock::now();
  wait();  // one write at a time; its error surfaces here
  timing.wait_s =
      waited_s + std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!state_) state_ = std::make_shared<State>();
  State& st = *state_;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    st.running = true;
    st.current = timing;
  }
  run_status::note_checkpoint_writing(timing.step);
  st.thread = std::thread([&st, step = timing.step, write = std::move(write)]() mutable {
    const auto w0 = std::chrono::steady_clock::now();
    std::exception_ptr err;
    try {
      write();
    } catch (...) {
      err = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(st.mu);
    st.current.write_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    st.error = err;
    st.running = false;
    if (!err) {
      st.finished.push_back(st.current);
      run_status::note_checkpoint_written(step);
    }
  });
  return timing.wait_s;
}

double CheckpointWriter::save(const std::string& path, CheckpointSnapshot snapshot, double copy_s,
                              double waited_s) {
  const Timing t{snapshot.global_step, snapshot.epoch_end, 0, copy_s, 0, snapshot.bytes()};
  auto snap = std::make_shared<CheckpointSnapshot>(std::move(snapshot));
  return start(
      t,
      [this, path, snap] {
        write_checkpoint(path, *snap);
        std::lock_guard<std::mutex> lock(state_->mu);
        state_->spare = std::move(*snap);  // for reclaim()
      },
      waited_s);
}

double CheckpointWriter::save_sharded(ShardedSnapshot snapshot, double copy_s, double waited_s) {
  const Timing t{snapshot.global_step, snapshot.epoch_end, 0, copy_s, 0, snapshot.bytes()};
  auto snap = std::make_shared<ShardedSnapshot>(std::move(snapshot));
  give_up_ = std::make_shared<std::atomic<bool>>(false);
  snap->give_up = give_up_;
  return start(
      t, [snap] { write_sharded_checkpoint(*snap); }, waited_s);
}

void CheckpointWriter::give_up_missing_shards() {
  if (give_up_) *give_up_ = true;
}

CheckpointLoad load_checkpoint(const std::string& path, nn::Module& model,
                               optim::Optimizer& optimizer, optim::Scheduler* scheduler) {
  const std::string state = state_path_for(path);
  std::string why;
  for (const std::string& m : {path, previous_path_for(path)}) {
    const std::string st = m == path ? state : previous_path_for(state);
    if (!exists(m) || !exists(st)) {
      if (why.empty()) why = "'" + m + "' or '" + st + "' does not exist";
      continue;
    }
    try {
      load_model(m, model);
      return {load_training_state(st, model, optimizer, scheduler), m};
    } catch (const Error& e) {
      if (!why.empty()) why += "; ";
      why += e.why();
    }
  }
  COHORT_FAIL("no whole checkpoint at '", path, "' (nor its previous pair): ", why);
}

}  // namespace cohort::train
