// Sharded checkpoints, the readers (see sharded_checkpoint.hpp): the load at any world size and
// stage from byte ranges, checked before anything changes; the streaming consolidation into one
// file; the description for tools.
#include "cohort/train/sharded_checkpoint.hpp"

#include <map>
#include <set>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cohort/core/error.hpp"
#include "metadata_text.hpp"
#include "sharded_index.hpp"
#include "sharded_layout.hpp"
#include "training_state.hpp"

namespace cohort::train {

using namespace sharded;

bool has_sharded_checkpoint(const std::string& dir) {
  return file_exists(dir + "/index.json") || file_exists(dir + ".prev/index.json");
}

namespace {

struct Staged {
  Tensor target;  // where the bytes go once everything is read and checked
  std::vector<std::uint8_t> bytes;
};

// One load's reading side: the index and the files' headers (checked against it), and the ranges
// this rank reads, counted into `out`.
class Reader {
 public:
  Reader(const std::string& dir, const std::string& who, ShardedLoad& out)
      : x_(read_index(dir)), headers_(read_headers(x_)), who_(who), out_(out) {}
  const Index& index() const { return x_; }

  // `key` must be in the checkpoint with this shape.
  const TensorIndex& need(const std::string& key, const Shape& shape) const {
    const TensorIndex* t = x_.find(key);
    COHORT_CHECK(t != nullptr, who_, ": the checkpoint has no '", key,
                 "', which this run's model or optimizer has (a checkpoint of another model?)");
    COHORT_CHECK(t->shape == shape, who_, ": '", key, "' is ", t->shape.str(),
                 " in the checkpoint, ", shape.str(), " in this run");
    return *t;
  }
  // Elements [a, e) of `key`, for `target`.
  Staged stage(const std::string& key, const Tensor& target, std::int64_t a, std::int64_t e) {
    const TensorIndex* t = x_.find(key);
    COHORT_CHECK(t->dtype == target.dtype(), who_, ": '", key, "' is ", dtype_name(t->dtype),
                 " in the checkpoint, ", dtype_name(target.dtype()), " in this run");
    Staged s{target,
             std::vector<std::uint8_t>(static_cast<std::size_t>(e - a) * dtype_size(t->dtype))};
    out_.bytes_read += read_range(x_, headers_, key, a, e, s.bytes.data());
    out_.staged_bytes += s.bytes.size();
    return s;
  }
  // The same into a new tensor of `shape` on `dev` (nothing of the run changes).
  Tensor read_new(const std::string& key, const Shape& shape, Device& dev, std::int64_t a,
                  std::int64_t e) {
    Tensor buf = Tensor::empty(shape, x_.find(key)->dtype, dev);
    const Staged s = stage(key, buf, a, e);
    cohort::detail::copy_host_to_tensor(buf, s.bytes.data(), s.bytes.size());
    return buf;
  }

 private:
  const Index x_;
  const std::vector<io::SafetensorsHeader> headers_;
  const std::string& who_;
  ShardedLoad& out_;
};

// The model's values: every name of the checkpoint must be this model's, and the reverse. At
// stages 0-2 every rank reads the parameters whole (it holds them), at stage 3 its own ranges.
std::vector<Staged> stage_model(Reader& rd, const DistributedDataParallel& ddp,
                                const std::vector<ParamLayout>& layout, int me,
                                const std::string& who) {
  std::vector<Staged> model;
  std::set<std::string> expected;
  std::map<std::string, std::size_t> index_of;
  for (std::size_t i = 0; i < layout.size(); ++i) index_of[layout[i].name] = i;
  for (const auto& s : ddp.module().state_dict()) {
    const std::string key = "model." + s.name;
    expected.insert(key);
    rd.need(key, s.tensor.shape());
    const auto it = index_of.find(s.name);
    if (it == index_of.end()) {
      model.push_back(rd.stage(key, s.tensor, 0, s.tensor.shape().numel()));
      continue;
    }
    const ParamLayout& l = layout[it->second];
    const auto [a, e] = l.ranges[static_cast<std::size_t>(me)];
    if (ddp.options().zero_stage < 3)
      model.push_back(rd.stage(key, l.whole, 0, l.shape.numel()));
    else
      model.push_back(rd.stage(key, l.mine, a, e));
  }
  for (const auto& [key, t] : rd.index().tensors)
    COHORT_CHECK(key.rfind("model.", 0) != 0 || expected.count(key) != 0, who,
                 ": the checkpoint holds '", key, "' ", t.shape.str(),
                 ", which this run's model does not have (a checkpoint of another model?)");
  return model;
}

// The optimizer's state in this optimizer's numbering: this rank's range of every buffer of
// every parameter it updates ("state.<slot>.<buffer>"), and each parameter's step count.
void stage_optimizer(Reader& rd, const DistributedDataParallel& ddp,
                     const optim::Optimizer& optimizer, const std::vector<ParamLayout>& layout,
                     int me, const std::string& who, std::map<std::string, Tensor>& tensors,
                     std::map<std::string, std::string>& md) {
  std::map<std::string, std::size_t> index_of;
  for (std::size_t i = 0; i < layout.size(); ++i) index_of[layout[i].name] = i;
  const std::vector<std::string> names = slot_names(ddp, optimizer, layout, who.c_str());
  Device& dev = optimizer.params(0).front()->value.device();
  const bool full = ddp.options().zero_stage == 0;
  const Index& x = rd.index();
  for (std::size_t slot = 0; slot < names.size(); ++slot) {
    const ParamLayout& l = layout[index_of.at(names[slot])];
    const auto [a, e] = l.ranges[static_cast<std::size_t>(me)];
    const std::string prefix = "optimizer." + names[slot] + ".";
    for (const auto& [key, t] : x.tensors) {
      if (key.rfind(prefix, 0) != 0 || key.find('.', prefix.size()) != std::string::npos) continue;
      rd.need(key, l.shape);
      tensors["state." + std::to_string(slot) + "." + key.substr(prefix.size())] =
          full ? rd.read_new(key, l.shape, dev, 0, l.shape.numel())
               : rd.read_new(key, Shape({e - a}), dev, a, e);
    }
    const auto step = x.metadata.find("optimizer.state." + names[slot] + ".step");
    if (step != x.metadata.end())
      md["optimizer.state." + std::to_string(slot) + ".step"] = step->second;
  }
}

}  // namespace

ShardedLoad load_sharded_checkpoint(const std::string& dir, DistributedDataParallel& ddp,
                                    optim::Optimizer& optimizer, optim::Scheduler* scheduler) {
  comm::Communicator& c = ddp.communicator();      // every rank agrees, replicas included
  const int me = ddp.shard_communicator().rank();  // whose ranges this rank reads
  const std::string who = "load_sharded_checkpoint('" + dir + "')";
  ShardedLoad out;
  out.dir = file_exists(dir + "/index.json") ? dir : dir + ".prev";
  const std::vector<ParamLayout> layout = layout_of(ddp);
  std::vector<Staged> model;
  std::map<std::string, Tensor> opt_tensors, extra;
  std::map<std::string, std::string> md;
  double save_id = 0;
  agree(c, who, [&] {
    COHORT_CHECK(file_exists(out.dir + "/index.json"), who, ": no sharded checkpoint there (no ",
                 dir, "/index.json, nor ", dir, ".prev/index.json)");
    Reader rd(out.dir, who, out);
    out.saved_world_size = rd.index().world_size;
    save_id = rd.index().save_id;
    model = stage_model(rd, ddp, layout, me, who);
    stage_optimizer(rd, ddp, optimizer, layout, me, who, opt_tensors, md);
    Device& dev = optimizer.params(0).front()->value.device();
    for (const auto& [key, t] : rd.index().tensors)
      if (key.rfind("extra.", 0) == 0)
        extra[key.substr(6)] = rd.read_new(key, t.shape, dev, 0, t.shape.numel());
    for (const auto& [k, v] : rd.index().metadata)
      if (k.rfind("optimizer.state.", 0) != 0) md[k] = v;
  });
  // Every rank must have read the same save.
  if (c.size() > 1) {
    double v[2] = {save_id, -save_id};
    comm::allreduce_host(c, nullptr, v, 2, DType::f64, comm::ReduceOp::max);
    COHORT_CHECK(v[0] == -v[1], who, ": the ranks read different saves (rank ", me, " read ",
                 out.dir, "): every rank must see the same directory");
  }
  // Optimizer, scheduler and Dropout positions (checked before they change; every rank read the
  // same metadata, so every rank passes or fails alike), then the model's values.
  out.progress = detail::apply_training_state(out.dir + "/index.json", md, std::move(opt_tensors),
                                              std::move(extra), ddp.module(), optimizer, scheduler);
  for (auto& s : model)
    cohort::detail::copy_host_to_tensor(s.target, s.bytes.data(), s.bytes.size());
  return out;
}

std::size_t consolidate_sharded_checkpoint(const std::string& dir, const std::string& out,
                                           bool optimizer) {
  const std::string src = file_exists(dir + "/index.json") ? dir : dir + ".prev";
  COHORT_CHECK(file_exists(src + "/index.json"),
               "consolidate_sharded_checkpoint: no sharded "
               "checkpoint in '",
               dir, "' (no index.json there or in ", dir, ".prev)");
  const Index x = read_index(src);
  const auto headers = read_headers(x);
  auto stream = [&](const std::string& path, const std::string& prefix, bool strip,
                    const std::map<std::string, std::string>& md) {
    std::vector<io::SafetensorsStreamWriter::Spec> specs;
    std::vector<const std::string*> keys;
    for (const auto& [key, t] : x.tensors) {
      if (key.rfind(prefix, 0) != 0) continue;
      specs.push_back({strip ? key.substr(prefix.size()) : key, t.dtype, t.shape});
      keys.push_back(&key);
    }
    io::SafetensorsStreamWriter w(path, specs, md);
    std::vector<std::uint8_t> buf;
    for (const std::string* key : keys) {
      const TensorIndex& t = *x.find(*key);
      buf.resize(static_cast<std::size_t>(t.shape.numel()) * dtype_size(t.dtype));
      read_range(x, headers, *key, 0, t.shape.numel(), buf.data());
      w.write(buf.data(), buf.size());
    }
    w.commit();
    return specs.size();
  };
  std::size_t n = stream(out, "model.", true, {{"format", "pt"}, {"writer", "cohort"}});
  if (optimizer) {
    std::map<std::string, std::string> md = x.metadata;
    md["format"] = "cohort-consolidated-optimizer-state";
    n += stream(state_path_for(out), "optimizer.", false, md);
  }
  return n;
}

std::vector<std::string> describe_sharded_checkpoint(const std::string& dir) {
  const std::string src = file_exists(dir + "/index.json") ? dir : dir + ".prev";
  const Index x = read_index(src);
  read_headers(x);
  std::vector<std::string> out;
  const auto md = [&](const char* k) {
    const auto it = x.metadata.find(k);
    return it == x.metadata.end() ? std::string("?") : it->second;
  };
  out.push_back(src + ": " + std::to_string(x.world_size) + " shard file(s), zero_stage " +
                std::to_string(x.zero_stage) + ", global step " + md("global_step") + ", epoch " +
                md("epoch") + ", optimizer " + md("optimizer.kind") + ", " +
                std::to_string(x.tensors.size()) + " tensors");
  for (const auto& [key, t] : x.tensors)
    out.push_back(key + " " + dtype_name(t.dtype) + " " + t.shape.str() + " in " +
                  std::to_string(t.pieces.size()) + " piece" + (t.pieces.size() == 1 ? "" : "s"));
  return out;
}

}  // namespace cohort::train
