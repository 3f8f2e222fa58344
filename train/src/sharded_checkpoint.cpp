// Sharded checkpoints (see sharded_checkpoint.hpp): the layout of a ZeRO run's pieces, the
// parallel save with its crash-safe publication, the index, the load at any world size from byte
// ranges, and the streaming consolidation into one file.
#include "cohort/train/sharded_checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "cohort/collectives/host_collectives.hpp"
#include "cohort/core/error.hpp"
#include "cohort/train/safetensors.hpp"
#include "metadata_text.hpp"
#include "training_state.hpp"

namespace cohort::train {
namespace {

namespace fs = std::filesystem;
using parallel::DistributedDataParallel;
using Json = nlohmann::ordered_json;

constexpr const char* kFormat = "cohort-sharded-checkpoint";

std::string shard_name(int rank, int n) {
  return "shard-" + std::to_string(rank) + "-of-" + std::to_string(n) + ".safetensors";
}

bool file_exists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }

// One parameter that requires a gradient, and which flat range of it each rank owns.
struct ParamLayout {
  std::string name;
  Shape shape;
  DType dtype = DType::f32;
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;  // per rank
  Tensor mine;   // flat: this rank's range of the values (stage 3: of the shard)
  Tensor whole;  // the parameter's value (stages 0-2, where every rank holds it whole)
};

std::vector<ParamLayout> layout_of(const DistributedDataParallel& ddp) {
  const comm::Communicator& c = const_cast<DistributedDataParallel&>(ddp).communicator();
  const int n = c.size(), me = c.rank();
  std::map<std::string, ParameterPtr> by_name;
  for (const auto& p : ddp.module().named_parameters()) by_name[p.name] = p.param;
  std::vector<ParamLayout> out;
  if (ddp.options().zero_stage == 0) {  // plain DDP: rank 0 "owns" everything
    for (const auto& p : ddp.module().named_parameters()) {
      if (!p.param->requires_grad) continue;
      ParamLayout l{p.name, p.param->value.shape(), p.param->value.dtype(), {}, {}, p.param->value};
      const std::int64_t numel = p.param->value.numel();
      for (int k = 0; k < n; ++k)
        l.ranges.push_back(k == 0 ? std::make_pair(std::int64_t{0}, numel)
                                  : std::make_pair(numel, numel));
      l.mine = me == 0 ? p.param->value.reshape({numel})
                       : p.param->value.reshape({numel}).slice(numel, numel);
      out.push_back(std::move(l));
    }
    return out;
  }
  for (int k = 0; k < n; ++k) {
    const auto pieces = ddp.shard_pieces(k);
    if (k == 0) {
      for (const auto& s : pieces) {
        const ParameterPtr& p = by_name.at(s.name);
        ParamLayout l{s.name, s.shape, p->value.dtype(), {}, {}, {}};
        if (ddp.options().zero_stage < 3) l.whole = p->value;
        out.push_back(std::move(l));
      }
    }
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      out[i].ranges.emplace_back(pieces[i].begin, pieces[i].end);
      if (k == me) out[i].mine = pieces[i].values;
    }
  }
  return out;
}

// The name of each of the optimizer's parameters (torch's numbering: over the groups in order).
std::vector<std::string> slot_names(const DistributedDataParallel& ddp, const optim::Optimizer& opt,
                                    const std::vector<ParamLayout>& layout, const char* who) {
  std::vector<std::string> out;
  std::map<const Parameter*, std::string> whole;
  if (ddp.options().zero_stage == 0)
    for (const auto& p : ddp.module().named_parameters()) whole[p.param.get()] = p.name;
  for (std::size_t g = 0; g < opt.num_param_groups(); ++g)
    for (const auto& p : opt.params(g)) {
      std::string name;
      if (ddp.options().zero_stage == 0) {
        const auto it = whole.find(p.get());
        if (it != whole.end()) name = it->second;
      } else if (const int i = ddp.shard_piece_index(*p); i >= 0) {
        name = layout[static_cast<std::size_t>(i)].name;
      }
      COHORT_CHECK(
          !name.empty(), who, ": the optimizer's parameter ", out.size(), " (group ", g, ", shape ",
          p->value.shape().str(), ") is not ",
          ddp.options().zero_stage == 0
              ? "a parameter of the wrapped model"
              : "a piece that the DistributedDataParallel's shard_parameters() made",
          " (build the optimizer over ",
          ddp.options().zero_stage == 0 ? "the model's parameters" : "ddp.shard_parameters(...)",
          ")");
      out.push_back(name);
    }
  return out;
}

// "state.<i>.<rest>" -> {i, rest}; false for other keys.
bool split_slot_key(const std::string& key, std::size_t* slot, std::string* rest) {
  if (key.rfind("state.", 0) != 0) return false;
  const std::size_t dot = key.find('.', 6);
  if (dot == std::string::npos) return false;
  *slot = static_cast<std::size_t>(std::stoull(key.substr(6, dot - 6)));
  *rest = key.substr(dot + 1);
  return true;
}

// Runs fn on every rank; if it throws on any, every rank throws (the failing ones their own
// error, the others naming the lowest failing rank). The collective is a barrier as well.
template <class F>
void agree(comm::Communicator& c, const std::string& what, F&& fn) {
  double failed = -1;  // the failing rank, as a max over ranks
  std::exception_ptr error;
  try {
    fn();
  } catch (...) {
    error = std::current_exception();
    failed = c.rank();
  }
  if (c.size() > 1) comm::allreduce_host(c, nullptr, &failed, 1, DType::f64, comm::ReduceOp::max);
  if (error) std::rethrow_exception(error);
  COHORT_CHECK(failed < 0, what, ": rank ", static_cast<int>(failed),
               " failed (its own error says why)");
}

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    COHORT_CHECK(out.good(), "cannot create '", tmp, "'");
    out << text;
    out.flush();
    COHORT_CHECK(out.good(), "writing '", tmp, "' failed");
  }
  const int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  COHORT_CHECK(::rename(tmp.c_str(), path.c_str()) == 0, "cannot rename '", tmp, "' to '", path,
               "': ", std::strerror(errno));
}

void sync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

std::string parent_of(const std::string& dir) {
  const fs::path p = fs::absolute(fs::path(dir)).parent_path();
  return p.empty() ? "." : p.string();
}

// ---- the index ----

struct Piece {
  int file;
  std::int64_t begin, end;
};
struct TensorIndex {
  DType dtype = DType::f32;
  Shape shape;
  std::vector<Piece> pieces;
};
struct Index {
  std::string dir;
  int world_size = 0;
  int zero_stage = 0;
  double save_id = 0;
  std::vector<std::string> files;
  std::vector<std::pair<std::string, TensorIndex>> tensors;  // in the index's order
  std::map<std::string, std::string> metadata;
  const TensorIndex* find(const std::string& name) const {
    for (const auto& [k, t] : tensors)
      if (k == name) return &t;
    return nullptr;
  }
};

DType dtype_of(const std::string& path, const std::string& name, const std::string& s) {
  for (DType d :
       {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::i64, DType::u8})
    if (s == dtype_name(d)) return d;
  COHORT_FAIL("sharded checkpoint '", path, "': tensor '", name, "' has unknown dtype '", s, "'");
}

Index read_index(const std::string& dir) {
  const std::string path = dir + "/index.json";
  std::ifstream in(path);
  COHORT_CHECK(in.good(), "sharded checkpoint '", dir, "': cannot open '", path, "'");
  Json j;
  try {
    j = Json::parse(in);
  } catch (const std::exception& e) {
    COHORT_FAIL("sharded checkpoint '", path, "' is not valid JSON: ", e.what());
  }
  Index x;
  x.dir = dir;
  try {
    COHORT_CHECK(j.value("format", "") == kFormat, "'", path, "' is not a ", kFormat,
                 " index (format '", j.value("format", ""), "')");
    x.world_size = j.at("world_size").get<int>();
    x.zero_stage = j.at("zero_stage").get<int>();
    x.save_id = j.at("save_id").get<double>();
    x.files = j.at("files").get<std::vector<std::string>>();
    for (const auto& [k, v] : j.at("metadata").items()) x.metadata[k] = v.get<std::string>();
    for (const auto& [name, t] : j.at("tensors").items()) {
      TensorIndex ti;
      ti.dtype = dtype_of(path, name, t.at("dtype").get<std::string>());
      ti.shape = Shape(t.at("shape").get<std::vector<std::int64_t>>());
      for (const auto& p : t.at("pieces"))
        ti.pieces.push_back(
            {p.at(0).get<int>(), p.at(1).get<std::int64_t>(), p.at(2).get<std::int64_t>()});
      x.tensors.emplace_back(name, std::move(ti));
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    COHORT_FAIL("sharded checkpoint index '", path, "' is malformed: ", e.what());
  }
  COHORT_CHECK(x.world_size >= 1 && static_cast<int>(x.files.size()) == x.world_size, "'", path,
               "': world_size ", x.world_size, " but ", x.files.size(), " files");
  // Every tensor's pieces: inside the file list, sorted, disjoint, covering it exactly.
  for (auto& [name, t] : x.tensors) {
    std::sort(t.pieces.begin(), t.pieces.end(),
              [](const Piece& a, const Piece& b) { return a.begin < b.begin; });
    std::int64_t at = 0;
    for (const Piece& p : t.pieces) {
      COHORT_CHECK(p.file >= 0 && p.file < x.world_size && p.begin == at && p.end > p.begin, "'",
                   path, "': the pieces of '", name, "' do not tile it (a piece [", p.begin, ", ",
                   p.end, ") in file ", p.file, " where element ", at, " comes next)");
      at = p.end;
    }
    COHORT_CHECK(at == t.shape.numel(), "'", path, "': the pieces of '", name, "' cover ", at,
                 " of its ", t.shape.numel(), " elements");
  }
  return x;
}

// Every file's header, checked against the index: the save id, its rank, and each piece it must
// hold (name, dtype, elements).
std::vector<io::SafetensorsHeader> read_headers(const Index& x) {
  std::vector<io::SafetensorsHeader> h;
  for (int r = 0; r < x.world_size; ++r) {
    const std::string path = x.dir + "/" + x.files[static_cast<std::size_t>(r)];
    COHORT_CHECK(file_exists(path), "sharded checkpoint '", x.dir, "': file '", path, "' (rank ", r,
                 "'s shard) is missing");
    h.push_back(io::read_safetensors_header(path));
    const auto& md = h.back().metadata;
    const auto id = md.find("cohort.save_id");
    const auto rk = md.find("cohort.rank");
    COHORT_CHECK(id != md.end() && rk != md.end() && rk->second == std::to_string(r) &&
                     std::stod(id->second) == x.save_id,
                 "sharded checkpoint '", x.dir, "': '", path, "' is not rank ", r,
                 "'s shard of this save (its save id ",
                 id == md.end() ? std::string("absent") : id->second, ", the index's ",
                 detail::exact_text(x.save_id), "): shards of different saves mixed");
  }
  for (const auto& [name, t] : x.tensors)
    for (const Piece& p : t.pieces) {
      const auto& hd = h[static_cast<std::size_t>(p.file)];
      const auto* e = hd.find(name);
      COHORT_CHECK(e != nullptr, "sharded checkpoint '", x.dir, "': '", hd.path, "' lacks '", name,
                   "' (elements [", p.begin, ", ", p.end, ") per the index)");
      COHORT_CHECK(e->dtype == t.dtype && e->shape.numel() == p.end - p.begin,
                   "sharded checkpoint '", x.dir, "': '", hd.path, "' holds '", name, "' as ",
                   e->shape.str(), " ", dtype_name(e->dtype), ", the index says ", p.end - p.begin,
                   " elements of ", dtype_name(t.dtype));
    }
  return h;
}

// Elements [begin, end) of tensor `name` into dst (end - begin elements), from whichever files
// hold them. Returns the bytes read.
std::uint64_t read_range(const Index& x, const std::vector<io::SafetensorsHeader>& headers,
                         const std::string& name, std::int64_t begin, std::int64_t end, void* dst) {
  const TensorIndex& t = *x.find(name);
  const std::size_t es = dtype_size(t.dtype);
  std::uint64_t read = 0;
  for (const Piece& p : t.pieces) {
    const std::int64_t lo = std::max(begin, p.begin), hi = std::min(end, p.end);
    if (lo >= hi) continue;
    const auto& hd = headers[static_cast<std::size_t>(p.file)];
    const auto* e = hd.find(name);
    const std::size_t n = static_cast<std::size_t>(hi - lo) * es;
    io::read_file_bytes(hd.path, e->offset + static_cast<std::uint64_t>(lo - p.begin) * es, n,
                        static_cast<char*>(dst) + static_cast<std::size_t>(lo - begin) * es);
    read += n;
  }
  return read;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

bool has_sharded_checkpoint(const std::string& dir) {
  return file_exists(dir + "/index.json") || file_exists(dir + ".prev/index.json");
}

std::size_t ShardedSnapshot::bytes() const {
  std::size_t n = 0;
  for (const auto& e : entries) n += e.bytes.size();
  return n;
}

ShardedSnapshot snapshot_sharded_checkpoint(const std::string& dir, DistributedDataParallel& ddp,
                                            const optim::Optimizer& optimizer,
                                            const optim::Scheduler* scheduler,
                                            const TrainingProgress& progress) {
  comm::Communicator& c = ddp.communicator();
  const int n = c.size(), me = c.rank();
  const std::string who = "save_sharded_checkpoint('" + dir + "')";
  ShardedSnapshot snap;
  snap.dir = dir;
  snap.rank = me;
  snap.world_size = n;
  snap.global_step = progress.global_step;
  snap.epoch_end = progress.step_in_epoch == 0;
  // A 52-bit id that ties the files to the index (exact in the f64 the all-reduce carries).
  if (me == 0) {
    std::random_device rd;
    snap.save_id = static_cast<double>(rd() & 0xfffffu) * 4294967296.0 + static_cast<double>(rd());
  }
  if (n > 1) comm::allreduce_host(c, nullptr, &snap.save_id, 1, DType::f64, comm::ReduceOp::max);
  agree(c, who, [&] {
    const std::vector<ParamLayout> layout = layout_of(ddp);
    const std::vector<std::string> names = slot_names(ddp, optimizer, layout, who.c_str());
    std::vector<io::SafetensorsEntry> opt_entries;
    const std::map<std::string, std::string> md =
        detail::state_metadata(ddp.module(), optimizer, scheduler, progress, &opt_entries);
    std::map<std::string, std::size_t> index_of;
    for (std::size_t i = 0; i < layout.size(); ++i) index_of[layout[i].name] = i;
    auto& entries = snap.entries;
    for (const auto& l : layout) {
      const auto [a, e] = l.ranges[static_cast<std::size_t>(me)];
      if (e > a) entries.push_back(io::SafetensorsEntry::of("model." + l.name, l.mine));
    }
    // The optimizer's buffers by parameter name; each is the parameter's piece, element for
    // element.
    std::vector<std::pair<std::string, std::size_t>> opt_tensors;  // name, parameter index
    std::vector<io::SafetensorsEntry> extra;
    for (auto& t : opt_entries) {
      if (t.name.rfind("extra.", 0) == 0) {  // whole on every rank: rank 0's
        if (me == 0) extra.push_back(std::move(t));
        continue;
      }
      std::size_t slot = 0;
      std::string buffer;
      COHORT_CHECK(split_slot_key(t.name.substr(10), &slot, &buffer) && slot < names.size(), who,
                   ": unexpected optimizer tensor '", t.name, "'");
      const std::size_t i = index_of.at(names[slot]);
      if (ddp.options().zero_stage == 0 && me != 0) continue;  // rank 0 writes plain DDP's
      const auto [a, e] = layout[i].ranges[static_cast<std::size_t>(me)];
      COHORT_CHECK(t.shape.numel() == e - a, who, ": the optimizer's '", buffer, "' of '",
                   names[slot], "' has ", t.shape.numel(), " elements where this rank's piece has ",
                   e - a);
      const std::string key = "optimizer." + names[slot] + "." + buffer;
      opt_tensors.emplace_back(key, i);
      if (e == a) continue;
      t.name = key;
      t.shape = Shape({e - a});
      entries.push_back(std::move(t));
    }
    if (me != 0) return;
    // Rank 0: whatever the state_dict holds whole (buffers, frozen parameters), the extras, and
    // the index.
    for (const auto& st : ddp.module().state_dict()) {
      if (index_of.count(st.name) != 0) continue;
      io::SafetensorsEntry e = io::SafetensorsEntry::of("model." + st.name, st.tensor);
      e.shape = Shape({e.shape.numel()});
      entries.push_back(std::move(e));
    }
    for (auto& e : extra) {
      e.shape = Shape({e.shape.numel()});
      entries.push_back(std::move(e));
    }
    Json j;
    j["format"] = kFormat;
    j["version"] = 1;
    j["world_size"] = n;
    j["zero_stage"] = ddp.options().zero_stage;
    j["save_id"] = snap.save_id;
    Json files = Json::array();
    for (int r = 0; r < n; ++r) files.push_back(shard_name(r, n));
    j["files"] = files;
    Json tensors = Json::object();
    auto sharded = [&](const std::string& key, const ParamLayout& l) {
      Json pieces = Json::array();
      for (int r = 0; r < n; ++r) {
        const auto [a, e] = l.ranges[static_cast<std::size_t>(r)];
        if (e > a) pieces.push_back({r, a, e});
      }
      tensors[key] = {
          {"dtype", dtype_name(l.dtype)}, {"shape", l.shape.dims()}, {"pieces", pieces}};
    };
    auto whole = [&](const std::string& key, DType dt, const Shape& shape) {
      tensors[key] = {{"dtype", dtype_name(dt)},
                      {"shape", shape.dims()},
                      {"pieces", Json::array({{0, 0, shape.numel()}})}};
    };
    for (const auto& st : ddp.module().state_dict()) {
      const auto it = index_of.find(st.name);
      if (it != index_of.end())
        sharded("model." + st.name, layout[it->second]);
      else
        whole("model." + st.name, st.tensor.dtype(), st.tensor.shape());
    }
    for (const auto& [key, i] : opt_tensors) sharded(key, layout[i]);
    for (const auto& e : entries)
      if (e.name.rfind("extra.", 0) == 0) whole(e.name, e.dtype, e.shape);
    j["tensors"] = tensors;
    // The scalars by parameter name ("optimizer.state.<name>.step"), so they map onto any
    // numbering of the pieces.
    Json meta = Json::object();
    for (const auto& [k, v] : md) {
      std::size_t slot = 0;
      std::string rest;
      if (k.rfind("optimizer.", 0) == 0 && split_slot_key(k.substr(10), &slot, &rest) &&
          slot < names.size())
        meta["optimizer.state." + names[slot] + "." + rest] = v;
      else
        meta[k] = v;
    }
    j["metadata"] = meta;
    snap.index = j.dump(1);
  });
  return snap;
}

namespace {

std::string staging_dir(const ShardedSnapshot& s) {
  char id[32];
  std::snprintf(id, sizeof id, "%013llx", static_cast<unsigned long long>(s.save_id));
  return s.dir + ".tmp-" + id;
}

// Rank 0, once every rank's file is whole: the index, then DIR -> DIR.prev, the new directory ->
// DIR, DIR.prev removed, and the staging directories of unfinished saves.
void publish(const ShardedSnapshot& s, const std::string& tmp) {
  write_text_atomically(tmp + "/index.json", s.index);
  sync_dir(tmp);
  const std::string prev = s.dir + ".prev";
  if (file_exists(s.dir + "/index.json")) {
    fs::remove_all(prev);
    fs::rename(s.dir, prev);
  } else {
    fs::remove_all(s.dir);  // an unfinished directory of no use
  }
  fs::rename(tmp, s.dir);
  sync_dir(parent_of(s.dir));
  fs::remove_all(prev);
  // Saves that a crash cut short left their staging directories; none can be in flight now
  // (the next save's id needs rank 0, which is here).
  const fs::path parent = fs::path(parent_of(s.dir));
  const std::string stem = fs::path(s.dir).filename().string() + ".tmp-";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(parent, ec))
    if (e.path().filename().string().rfind(stem, 0) == 0) fs::remove_all(e.path(), ec);
}

}  // namespace

namespace {

std::string marker(const std::string& tmp, const char* what, int rank) {
  return tmp + "/" + what + "-" + std::to_string(rank);
}

// This rank's file, then its marker "done-<rank>"; a failure leaves "failed-<rank>" with the
// reason instead, so that rank 0 stops waiting at once and names it.
void write_own_shard(const ShardedSnapshot& s) {
  const std::string tmp = staging_dir(s);
  try {
    fs::create_directories(tmp);
    io::save_safetensors(tmp + "/" + shard_name(s.rank, s.world_size), s.entries,
                         {{"format", kFormat},
                          {"cohort.rank", std::to_string(s.rank)},
                          {"cohort.world_size", std::to_string(s.world_size)},
                          {"cohort.save_id", detail::exact_text(s.save_id)}});
    write_text_atomically(marker(tmp, "done", s.rank), "");
  } catch (const std::exception& e) {
    std::error_code ec;
    fs::create_directories(tmp, ec);
    std::ofstream(marker(tmp, "failed", s.rank)) << e.what();
    throw;
  }
}

// Rank 0: waits (up to wait_ms) for every rank's marker, then publishes.
void publish_when_whole(const ShardedSnapshot& s) {
  const std::string tmp = staging_dir(s);
  const auto limit = std::chrono::steady_clock::now() + std::chrono::milliseconds(s.wait_ms);
  for (auto pause = std::chrono::milliseconds(1);;
       pause = std::min(pause * 2, std::chrono::milliseconds(50))) {
    std::vector<int> missing;
    for (int r = 0; r < s.world_size; ++r) {
      if (file_exists(marker(tmp, "done", r))) continue;
      if (file_exists(marker(tmp, "failed", r))) {
        std::ifstream in(marker(tmp, "failed", r));
        const std::string why((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
        COHORT_FAIL("sharded checkpoint '", s.dir, "' of step ", s.global_step, ": rank ", r,
                    " could not write its shard (", why,
                    "); nothing was published (the previous checkpoint stands)");
      }
      missing.push_back(r);
    }
    if (missing.empty()) break;
    if (std::chrono::steady_clock::now() > limit) {
      std::string who;
      for (int r : missing) who += (who.empty() ? "" : ", ") + std::to_string(r);
      COHORT_FAIL("sharded checkpoint '", s.dir, "' of step ", s.global_step, ": rank(s) ", who,
                  " did not write their shard into ", tmp, " within ", s.wait_ms / 1000,
                  " s; nothing was published (the previous checkpoint stands)");
    }
    std::this_thread::sleep_for(pause);
  }
  for (int r = 0; r < s.world_size; ++r) ::unlink(marker(tmp, "done", r).c_str());
  publish(s, tmp);
}

}  // namespace

void write_sharded_checkpoint(const ShardedSnapshot& s) {
  write_own_shard(s);
  if (s.rank == 0) publish_when_whole(s);
}

std::uint64_t save_sharded_checkpoint(const std::string& dir, DistributedDataParallel& ddp,
                                      const optim::Optimizer& optimizer,
                                      const optim::Scheduler* scheduler,
                                      const TrainingProgress& progress) {
  const ShardedSnapshot snap =
      snapshot_sharded_checkpoint(dir, ddp, optimizer, scheduler, progress);
  const std::string who = "save_sharded_checkpoint('" + dir + "')";
  // Two agreements: every rank's file first, so that rank 0 never waits for a rank that failed.
  agree(ddp.communicator(), who + " (writing each rank's shard)", [&] { write_own_shard(snap); });
  agree(ddp.communicator(), who + " (publishing)", [&] {
    if (snap.rank == 0) publish_when_whole(snap);
  });
  return snap.bytes();
}

ShardedLoad load_sharded_checkpoint(const std::string& dir, DistributedDataParallel& ddp,
                                    optim::Optimizer& optimizer, optim::Scheduler* scheduler) {
  comm::Communicator& c = ddp.communicator();
  const int me = c.rank();
  const std::string who = "load_sharded_checkpoint('" + dir + "')";
  ShardedLoad out;
  out.dir = file_exists(dir + "/index.json") ? dir : dir + ".prev";
  const std::vector<ParamLayout> layout = layout_of(ddp);
  const bool whole_params = ddp.options().zero_stage < 3;
  struct Staged {
    Tensor target;  // where the bytes go
    std::vector<std::uint8_t> bytes;
  };
  std::vector<Staged> model;
  std::map<std::string, Tensor> opt_tensors, extra;
  std::map<std::string, std::string> md;
  double save_id = 0;
  agree(c, who, [&] {
    COHORT_CHECK(file_exists(out.dir + "/index.json"), who, ": no sharded checkpoint there (no ",
                 dir, "/index.json, nor ", dir, ".prev/index.json)");
    const Index x = read_index(out.dir);
    const auto headers = read_headers(x);
    out.saved_world_size = x.world_size;
    save_id = x.save_id;
    const auto need = [&](const std::string& key, const Shape& shape) -> const TensorIndex& {
      const TensorIndex* t = x.find(key);
      COHORT_CHECK(t != nullptr, who, ": the checkpoint has no '", key,
                   "', which this run's model or optimizer has (a checkpoint of another model?)");
      COHORT_CHECK(t->shape == shape, who, ": '", key, "' is ", t->shape.str(),
                   " in the checkpoint, ", shape.str(), " in this run");
      return *t;
    };
    auto stage = [&](const std::string& key, const Tensor& target, std::int64_t a, std::int64_t e) {
      const TensorIndex* t = x.find(key);
      COHORT_CHECK(t->dtype == target.dtype(), who, ": '", key, "' is ", dtype_name(t->dtype),
                   " in the checkpoint, ", dtype_name(target.dtype()), " in this run");
      Staged s{target,
               std::vector<std::uint8_t>(static_cast<std::size_t>(e - a) * dtype_size(t->dtype))};
      out.bytes_read += read_range(x, headers, key, a, e, s.bytes.data());
      out.staged_bytes += s.bytes.size();
      return s;
    };
    // The model: every name of the checkpoint must be this model's, and the reverse.
    std::set<std::string> expected;
    std::map<std::string, std::size_t> index_of;
    for (std::size_t i = 0; i < layout.size(); ++i) index_of[layout[i].name] = i;
    for (const auto& s : ddp.module().state_dict()) {
      const std::string key = "model." + s.name;
      expected.insert(key);
      need(key, s.tensor.shape());
      const auto it = index_of.find(s.name);
      if (it == index_of.end()) {
        model.push_back(stage(key, s.tensor, 0, s.tensor.shape().numel()));
        continue;
      }
      const ParamLayout& l = layout[it->second];
      const auto [a, e] = l.ranges[static_cast<std::size_t>(me)];
      if (whole_params)
        model.push_back(stage(key, l.whole, 0, l.shape.numel()));
      else
        model.push_back(stage(key, l.mine, a, e));
    }
    for (const auto& [key, t] : x.tensors)
      COHORT_CHECK(key.rfind("model.", 0) != 0 || expected.count(key) != 0, who,
                   ": the checkpoint holds '", key, "' ", t.shape.str(),
                   ", which this run's model does not have (a checkpoint of another model?)");
    // The optimizer: this rank's range of every buffer of every parameter it updates.
    const std::vector<std::string> names = slot_names(ddp, optimizer, layout, who.c_str());
    Device& dev = optimizer.params(0).front()->value.device();
    for (std::size_t slot = 0; slot < names.size(); ++slot) {
      const ParamLayout& l = layout[index_of.at(names[slot])];
      const auto [a, e] = l.ranges[static_cast<std::size_t>(me)];
      const std::string prefix = "optimizer." + names[slot] + ".";
      for (const auto& [key, t] : x.tensors) {
        if (key.rfind(prefix, 0) != 0 || key.find('.', prefix.size()) != std::string::npos)
          continue;
        need(key, l.shape);
        const bool full = ddp.options().zero_stage == 0;
        Tensor buf = Tensor::empty(full ? l.shape : Shape({e - a}), t.dtype, dev);
        Staged s = stage(key, buf, full ? 0 : a, full ? l.shape.numel() : e);
        cohort::detail::copy_host_to_tensor(buf, s.bytes.data(), s.bytes.size());
        opt_tensors["state." + std::to_string(slot) + "." + key.substr(prefix.size())] = buf;
      }
      const auto step = x.metadata.find("optimizer.state." + names[slot] + ".step");
      if (step != x.metadata.end())
        md["optimizer.state." + std::to_string(slot) + ".step"] = step->second;
    }
    for (const auto& [key, t] : x.tensors)
      if (key.rfind("extra.", 0) == 0) {
        Tensor buf = Tensor::empty(t.shape, t.dtype, dev);
        Staged s = stage(key, buf, 0, t.shape.numel());
        cohort::detail::copy_host_to_tensor(buf, s.bytes.data(), s.bytes.size());
        extra[key.substr(6)] = buf;
      }
    for (const auto& [k, v] : x.metadata)
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
