// Sharded checkpoints, the save (see sharded_checkpoint.hpp): each rank's share copied into a
// snapshot with rank 0's index, each rank's file and marker written into the save's staging
// directory, and rank 0's publication once every file is whole.
#include "cohort/train/sharded_checkpoint.hpp"

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <thread>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cohort/core/error.hpp"
#include "metadata_text.hpp"
#include "sharded_index.hpp"
#include "sharded_layout.hpp"
#include "training_state.hpp"

namespace cohort::train {

using namespace sharded;
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

std::size_t ShardedSnapshot::bytes() const {
  std::size_t n = 0;
  for (const auto& e : entries) n += e.bytes.size();
  return n;
}

namespace {

// What a snapshot maps through: the ranks' ranges, the optimizer's parameters by name, the
// checkpoint keys of its buffers, and the training state's metadata.
struct Shares {
  std::vector<ParamLayout> layout;
  std::vector<std::string> names;               // of the optimizer's parameters, in its order
  std::map<std::string, std::size_t> index_of;  // parameter name -> layout index
  std::vector<std::pair<std::string, std::size_t>> opt_tensors;  // key, layout index
  std::map<std::string, std::string> md;
};

// This rank's ranges of the parameters and optimizer buffers into snap.entries (1-D, keyed by
// parameter name), and on rank 0 what the state_dict holds whole and the extras.
void take_entries(ShardedSnapshot& snap, Shares& s, std::vector<io::SafetensorsEntry> opt_entries,
                  const DistributedDataParallel& ddp, const std::string& who) {
  const int me = snap.rank;
  auto& entries = snap.entries;
  for (const auto& l : s.layout) {
    const auto [a, e] = l.ranges[static_cast<std::size_t>(me)];
    if (e > a) entries.push_back(io::SafetensorsEntry::of("model." + l.name, l.mine));
  }
  // The optimizer's buffers; each is its parameter's piece, element for element.
  std::vector<io::SafetensorsEntry> extra;
  for (auto& t : opt_entries) {
    if (t.name.rfind("extra.", 0) == 0) {  // whole on every rank: rank 0's
      if (me == 0) extra.push_back(std::move(t));
      continue;
    }
    std::size_t slot = 0;
    std::string buffer;
    COHORT_CHECK(split_slot_key(t.name.substr(10), &slot, &buffer) && slot < s.names.size(), who,
                 ": unexpected optimizer tensor '", t.name, "'");
    const std::size_t i = s.index_of.at(s.names[slot]);
    if (ddp.options().zero_stage == 0 && me != 0) continue;  // rank 0 writes plain DDP's
    const auto [a, e] = s.layout[i].ranges[static_cast<std::size_t>(me)];
    COHORT_CHECK(t.shape.numel() == e - a, who, ": the optimizer's '", buffer, "' of '",
                 s.names[slot], "' has ", t.shape.numel(), " elements where this rank's piece has ",
                 e - a);
    const std::string key = "optimizer." + s.names[slot] + "." + buffer;
    s.opt_tensors.emplace_back(key, i);
    if (e == a) continue;
    t.name = key;
    t.shape = Shape({e - a});
    entries.push_back(std::move(t));
  }
  if (me != 0) return;
  for (const auto& st : ddp.module().state_dict()) {
    if (s.index_of.count(st.name) != 0) continue;
    io::SafetensorsEntry e = io::SafetensorsEntry::of("model." + st.name, st.tensor);
    e.shape = Shape({e.shape.numel()});
    entries.push_back(std::move(e));
  }
  for (auto& e : extra) {
    e.shape = Shape({e.shape.numel()});
    entries.push_back(std::move(e));
  }
}

// Rank 0's index.json: every tensor with its pieces (every rank's ranges, computed here), the
// scalars by parameter name ("optimizer.state.<name>.step"), so that they map onto any numbering
// of the pieces.
std::string index_text(const ShardedSnapshot& snap, const Shares& s,
                       const DistributedDataParallel& ddp) {
  const int n = snap.world_size;
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
    tensors[key] = {{"dtype", dtype_name(l.dtype)}, {"shape", l.shape.dims()}, {"pieces", pieces}};
  };
  auto whole = [&](const std::string& key, DType dt, const Shape& shape) {
    tensors[key] = {{"dtype", dtype_name(dt)},
                    {"shape", shape.dims()},
                    {"pieces", Json::array({{0, 0, shape.numel()}})}};
  };
  for (const auto& st : ddp.module().state_dict()) {
    const auto it = s.index_of.find(st.name);
    if (it != s.index_of.end())
      sharded("model." + st.name, s.layout[it->second]);
    else
      whole("model." + st.name, st.tensor.dtype(), st.tensor.shape());
  }
  for (const auto& [key, i] : s.opt_tensors) sharded(key, s.layout[i]);
  for (const auto& e : snap.entries)
    if (e.name.rfind("extra.", 0) == 0) whole(e.name, e.dtype, e.shape);
  j["tensors"] = tensors;
  Json meta = Json::object();
  for (const auto& [k, v] : s.md) {
    std::size_t slot = 0;
    std::string rest;
    if (k.rfind("optimizer.", 0) == 0 && split_slot_key(k.substr(10), &slot, &rest) &&
        slot < s.names.size())
      meta["optimizer.state." + s.names[slot] + "." + rest] = v;
    else
      meta[k] = v;
  }
  j["metadata"] = meta;
  return j.dump(1);
}

}  // namespace

namespace {

// This rank's share of a save: its file's entries (when `entries`) and, when `index`, the
// index's text (which any rank can compute: it is the layout and the metadata).
ShardedSnapshot local_snapshot(const std::string& dir, DistributedDataParallel& ddp,
                               const optim::Optimizer& optimizer, const optim::Scheduler* scheduler,
                               const TrainingProgress& progress, const std::string& who,
                               double save_id, bool entries, bool index) {
  ShardedSnapshot snap;
  snap.dir = dir;
  snap.rank = ddp.shard_communicator().rank();
  snap.world_size = ddp.shard_communicator().size();
  snap.writes = entries;
  snap.global_step = progress.global_step;
  snap.epoch_end = progress.step_in_epoch == 0;
  snap.save_id = save_id;
  Shares s;
  s.layout = layout_of(ddp);
  s.names = slot_names(ddp, optimizer, s.layout, who.c_str());
  for (std::size_t i = 0; i < s.layout.size(); ++i) s.index_of[s.layout[i].name] = i;
  std::vector<io::SafetensorsEntry> opt_entries;
  s.md = detail::state_metadata(ddp.module(), optimizer, scheduler, progress, &opt_entries);
  // The index's optimizer tensors are the ones take_entries finds: taken by every rank that
  // writes the index, dropped where this rank's file is not wanted.
  if (entries || index) take_entries(snap, s, std::move(opt_entries), ddp, who);
  if (index) snap.index = index_text(snap, s, ddp);
  if (!entries) snap.entries.clear();
  return snap;
}

}  // namespace

ShardedSnapshot snapshot_sharded_checkpoint(const std::string& dir, DistributedDataParallel& ddp,
                                            const optim::Optimizer& optimizer,
                                            const optim::Scheduler* scheduler,
                                            const TrainingProgress& progress) {
  comm::Communicator& c = ddp.communicator();
  const std::string who = "save_sharded_checkpoint('" + dir + "')";
  // A 52-bit id that ties the files to the index (exact in the f64 the all-reduce carries).
  double save_id = 0;
  if (c.rank() == 0) {
    std::random_device rd;
    save_id = static_cast<double>(rd() & 0xfffffu) * 4294967296.0 + static_cast<double>(rd());
  }
  if (c.size() > 1) comm::allreduce_host(c, nullptr, &save_id, 1, DType::f64, comm::ReduceOp::max);
  ShardedSnapshot snap;
  agree(c, who, [&] {
    // Hybrid sharding: the first shard group writes, its replicas hold the same shards.
    const bool writes = !ddp.replica_communicator() || ddp.replica_communicator()->rank() == 0;
    snap = local_snapshot(dir, ddp, optimizer, scheduler, progress, who, save_id, writes,
                          c.rank() == 0);
  });
  return snap;
}

ShardedSnapshot snapshot_shard_locally(const std::string& dir, DistributedDataParallel& ddp,
                                       const optim::Optimizer& optimizer,
                                       const optim::Scheduler* scheduler,
                                       const TrainingProgress& progress, double save_id,
                                       bool entries) {
  const std::string who = "snapshot_shard_locally('" + dir + "')";
  return local_snapshot(dir, ddp, optimizer, scheduler, progress, who, save_id, entries, true);
}

std::string write_shard_file(const ShardedSnapshot& s, const std::string& dir) {
  const std::string path = dir + "/" + shard_name(s.rank, s.world_size);
  io::save_safetensors(path, s.entries,
                       {{"format", kFormat},
                        {"cohort.rank", std::to_string(s.rank)},
                        {"cohort.world_size", std::to_string(s.world_size)},
                        {"cohort.save_id", detail::exact_text(s.save_id)}});
  return path;
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

std::string marker(const std::string& tmp, const char* what, int rank) {
  return tmp + "/" + what + "-" + std::to_string(rank);
}

// This rank's file, then its marker "done-<rank>"; a failure leaves "failed-<rank>" with the
// reason instead, so that rank 0 stops waiting at once and names it.
void write_own_shard(const ShardedSnapshot& s) {
  const std::string tmp = staging_dir(s);
  try {
    fs::create_directories(tmp);
    write_shard_file(s, tmp);
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
    const bool given_up = s.give_up && s.give_up->load();
    if (given_up || std::chrono::steady_clock::now() > limit) {
      std::string who;
      for (int r : missing) who += (who.empty() ? "" : ", ") + std::to_string(r);
      COHORT_FAIL("sharded checkpoint '", s.dir, "' of step ", s.global_step, ": rank(s) ", who,
                  " did not write their shard into ", tmp,
                  given_up ? std::string(" before the group gave up on them (an elastic change)")
                           : " within " + std::to_string(s.wait_ms / 1000) + " s",
                  "; nothing was published (the previous checkpoint stands)");
    }
    std::this_thread::sleep_for(pause);
  }
  for (int r = 0; r < s.world_size; ++r) ::unlink(marker(tmp, "done", r).c_str());
  publish(s, tmp);
}

}  // namespace

void write_sharded_checkpoint(const ShardedSnapshot& s) {
  if (!s.writes) return;
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
  agree(ddp.communicator(), who + " (writing each rank's shard)", [&] {
    if (snap.writes) write_own_shard(snap);
  });
  agree(ddp.communicator(), who + " (publishing)", [&] {
    if (snap.writes && snap.rank == 0) publish_when_whole(snap);
  });
  return snap.bytes();
}

}  // namespace cohort::train
