#include "cohort/train/checkpoint.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "cohort/layers/dropout.hpp"
#include "cohort/train/safetensors.hpp"

namespace cohort::train {
namespace {

// Scalars travel as metadata text; %.17g round-trips every double exactly.
std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

double parse_num(const std::string& path, const std::string& key, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  COHORT_CHECK(end && *end == '\0' && !text.empty() && errno == 0, "checkpoint '", path,
               "': metadata '", key, "' = '", text, "' is not a number");
  return v;
}

// Visits every Dropout in the tree with its dotted path.
void for_each_dropout(const nn::Module& m, const std::string& prefix,
                      const std::function<void(const std::string&, nn::Dropout&)>& fn) {
  if (auto* d = dynamic_cast<const nn::Dropout*>(&m))
    fn(prefix.empty() ? "<root>" : prefix, const_cast<nn::Dropout&>(*d));
  for (const auto& [name, child] : m.children())
    for_each_dropout(*child, prefix.empty() ? name : prefix + "." + name, fn);
}

const std::string& meta(const io::SafetensorsFile& f, const std::string& path, const std::string& key) {
  const auto it = f.metadata.find(key);
  COHORT_CHECK(it != f.metadata.end(), "checkpoint '", path, "' lacks '", key, "'");
  return it->second;
}

}  // namespace

void save_model(const std::string& path, const nn::Module& model) {
  io::NamedTensors ts;
  for (const auto& e : model.state_dict()) ts.emplace_back(e.name, e.tensor);
  io::save_safetensors(path, ts, {{"format", "pt"}, {"writer", "cohort"}});
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

void save_training_state(const std::string& path, const nn::Module& model,
                         const optim::Optimizer& optimizer, const optim::Scheduler* scheduler,
                         const TrainingProgress& progress) {
  io::NamedTensors ts;
  std::map<std::string, std::string> md;
  md["format"] = "cohort-training-state";
  md["epoch"] = num(static_cast<double>(progress.epoch));
  md["global_step"] = num(static_cast<double>(progress.global_step));
  const optim::StateDict os = optimizer.state();
  md["optimizer.kind"] = os.kind;
  for (const auto& [k, t] : os.tensors) ts.emplace_back("optimizer." + k, t);
  for (const auto& [k, v] : os.scalars) md["optimizer." + k] = num(v);
  if (scheduler) {
    const optim::StateDict ss = scheduler->state();
    md["scheduler.kind"] = ss.kind;
    for (const auto& [k, v] : ss.scalars) md["scheduler." + k] = num(v);
  }
  for_each_dropout(model, "", [&](const std::string& p, nn::Dropout& d) {
    // 64-bit seeds and steps as decimal text: a double cannot hold every 64-bit value.
    md["rng." + p + ".seed"] = std::to_string(d.seed());
    md["rng." + p + ".step"] = std::to_string(d.step());
  });
  io::save_safetensors(path, ts, md);
}

TrainingProgress load_training_state(const std::string& path, nn::Module& model,
                                     optim::Optimizer& optimizer, optim::Scheduler* scheduler) {
  const io::SafetensorsFile f = io::load_safetensors(path);
  COHORT_CHECK(meta(f, path, "format") == "cohort-training-state", "checkpoint '", path,
               "' is not a cohort training state (format '", meta(f, path, "format"), "')");
  TrainingProgress p;
  p.epoch = static_cast<std::int64_t>(parse_num(path, "epoch", meta(f, path, "epoch")));
  p.global_step = static_cast<std::int64_t>(parse_num(path, "global_step", meta(f, path, "global_step")));

  optim::StateDict os;
  os.kind = meta(f, path, "optimizer.kind");
  optim::StateDict ss;
  for (const auto& [k, v] : f.metadata) {
    if (k.rfind("optimizer.", 0) == 0 && k != "optimizer.kind")
      os.scalars[k.substr(10)] = parse_num(path, k, v);
    if (k.rfind("scheduler.", 0) == 0 && k != "scheduler.kind")
      ss.scalars[k.substr(10)] = parse_num(path, k, v);
  }
  COHORT_CHECK(optimizer.num_params() > 0, "load_training_state: the optimizer has no parameters");
  Device& dev = optimizer.params(0).front()->value.device();  // load_state copies where needed
  for (const auto& e : f.tensors) {
    COHORT_CHECK(e.name.rfind("optimizer.", 0) == 0, "checkpoint '", path, "': unexpected tensor '",
                 e.name, "'");
    os.tensors[e.name.substr(10)] = e.to(dev);
  }
  const bool has_sched = f.metadata.count("scheduler.kind") != 0;
  COHORT_CHECK(has_sched == (scheduler != nullptr), "checkpoint '", path, "' ",
               has_sched ? "has" : "has no", " scheduler state but the run ",
               scheduler ? "has a scheduler" : "has none");
  if (has_sched) ss.kind = meta(f, path, "scheduler.kind");

  // Validate the random-number entries before changing anything.
  std::vector<std::pair<nn::Dropout*, std::pair<std::uint64_t, std::uint64_t>>> rng;
  for_each_dropout(model, "", [&](const std::string& dp, nn::Dropout& d) {
    const std::string& s = meta(f, path, "rng." + dp + ".seed");
    const std::string& st = meta(f, path, "rng." + dp + ".step");
    rng.push_back({&d, {std::strtoull(s.c_str(), nullptr, 10), std::strtoull(st.c_str(), nullptr, 10)}});
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

}  // namespace cohort::train
