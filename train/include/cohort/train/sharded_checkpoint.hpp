// Sharded checkpoints of ZeRO training (DDPOptions::zero_stage 1-3; PyTorch's distributed
// checkpoint, DCP, and Hugging Face's sharded safetensors in spirit): every rank writes its own
// share of the parameters and of the optimizer state, in parallel, and the checkpoint loads on
// any number of ranks at any stage, every tensor bitwise as saved, each rank reading only the
// byte ranges it needs. No offline conversion: consolidate_sharded_checkpoint streams one into the
// single file that PyTorch and torchvision load.
//
// On disk, DIR/ holds
//   index.json                      every tensor's global shape and dtype, and which element
//                                   range of it each file holds (flat, row-major); the files and
//                                   their save id; the training state's metadata (optimizer and
//                                   scheduler scalars, progress, Dropout positions), as the
//                                   training-state file of checkpoint.hpp has it
//   shard-<r>-of-<N>.safetensors    rank r's ranges: "model.<name>" (parameters, and on rank 0
//                                   whatever the state_dict holds whole: buffers, frozen
//                                   parameters) and "optimizer.<name>.<buffer>", as 1-D tensors
// The optimizer state is keyed by parameter name, not by the optimizer's numbering, so it maps
// onto another world size (where each rank's pieces are other ranges of the same parameters).
//
// Crash safety: the files are written into DIR.tmp-<save id> (each atomic and fsynced; rank 0
// writes the index last, after every rank's file is whole), then DIR moves to DIR.prev, the new
// directory to DIR, and DIR.prev is removed. Killed at any instant, a whole checkpoint remains:
// DIR, or DIR.prev when the kill fell between the two renames (load_sharded_checkpoint takes it
// then).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cohort/optim/lr_scheduler.hpp"
#include "cohort/optim/optimizer.hpp"
#include "cohort/parallel/ddp.hpp"
#include "cohort/train/checkpoint.hpp"

namespace cohort::train {

// snapshot, write, and a barrier: on return the checkpoint is published for every rank.
// Collective over ddp's communicator (every rank, same arguments). `optimizer`: over
// ddp.shard_parameters() at stages 1-3, over the model's own parameters at stage 0 (then rank 0
// writes everything, the other ranks nothing). Returns the bytes this rank wrote. An error on any
// rank (a full disk, say) is an error on every rank, and DIR is left as it was.
std::uint64_t save_sharded_checkpoint(const std::string& dir,
                                      parallel::DistributedDataParallel& ddp,
                                      const optim::Optimizer& optimizer,
                                      const optim::Scheduler* scheduler,
                                      const TrainingProgress& progress);

// A sharded save split as the Trainer's step checkpoints are (checkpoint.hpp): the snapshot, a
// copy of this rank's share in host memory and the only part that stops training, and its write,
// which needs nothing else and runs on any thread (CheckpointWriter::save_sharded). Publication
// needs no collective: each rank writes its file and then a marker into the save's own
// DIR.tmp-<id>/, and rank 0, once every rank's marker is there, writes the index and publishes.
struct ShardedSnapshot {
  std::string dir;
  // The shard's number and how many there are: the DDP's shard group (hybrid sharding: the shard
  // groups hold the same shards, and only the first one's ranks write them: `writes`).
  int rank = 0, world_size = 1;
  bool writes = true;
  double save_id = 0;                         // ties the files to the index
  std::vector<io::SafetensorsEntry> entries;  // this rank's file
  std::string index;                          // rank 0: index.json's text
  std::int64_t global_step = 0;
  bool epoch_end = false;
  // How long rank 0 waits for the other ranks' files before the save fails, naming them.
  std::int64_t wait_ms = 600000;
  // Set (CheckpointWriter::give_up_missing_shards): rank 0 stops waiting for missing shards.
  std::shared_ptr<const std::atomic<bool>> give_up;
  std::size_t bytes() const;
};
// Collective (agrees on the save id; an error on any rank is an error on every rank).
ShardedSnapshot snapshot_sharded_checkpoint(const std::string& dir,
                                            parallel::DistributedDataParallel& ddp,
                                            const optim::Optimizer& optimizer,
                                            const optim::Scheduler* scheduler,
                                            const TrainingProgress& progress);
// This rank's part alone, no communication (the caller picks the save id): its file's entries
// when `entries` (else none) and the index's text on every rank. Elastic hybrid sharding
// rebuilds the checkpoint of a group that lost ranks from these, each shard taken from a live
// replica (the Trainer; docs/PARALLEL.md, "Hybrid sharding").
ShardedSnapshot snapshot_shard_locally(const std::string& dir,
                                       parallel::DistributedDataParallel& ddp,
                                       const optim::Optimizer& optimizer,
                                       const optim::Scheduler* scheduler,
                                       const TrainingProgress& progress, double save_id,
                                       bool entries);
// The snapshot's file into `dir` (not staged, not published: the caller's own directory);
// returns its path.
std::string write_shard_file(const ShardedSnapshot& snapshot, const std::string& dir);
// Not collective. Rank 0 returns once the checkpoint is published, the others once their own file
// is whole. A crash at any instant leaves the previous checkpoint loadable.
void write_sharded_checkpoint(const ShardedSnapshot& snapshot);

struct ShardedLoad {
  TrainingProgress progress;
  std::string dir;                 // DIR, or DIR.prev (see above)
  int saved_world_size = 0;        // the ranks that wrote it
  std::uint64_t bytes_read = 0;    // by this rank: its ranges only
  std::uint64_t staged_bytes = 0;  // this rank's host memory for the load, at its peak
};
// Collective. Loads into `ddp` (any zero_stage and world size; at stages 0-2 every rank reads the
// parameters whole, as it holds them, at stage 3 only its own ranges) and `optimizer` (its own
// ranges of every buffer), then the scheduler and the Dropout positions. Everything is read and
// checked before anything changes: a missing or truncated file, an index that does not match its
// files, another model's or optimizer's checkpoint is an error naming the file and the tensor,
// on every rank, with the run left as it was.
ShardedLoad load_sharded_checkpoint(const std::string& dir, parallel::DistributedDataParallel& ddp,
                                    optim::Optimizer& optimizer, optim::Scheduler* scheduler);

// DIR/index.json exists, or DIR.prev/index.json: there is a checkpoint to resume.
bool has_sharded_checkpoint(const std::string& dir);

// The model's state_dict as one safetensors file at `out` (the names and shapes of the model
// that wrote DIR; PyTorch's load_state_dict takes it), written one tensor at a time: memory is
// bounded by the largest tensor. With `optimizer`, a second file `out` with ".state" before the
// extension gets the optimizer buffers by parameter name ("optimizer.<name>.<buffer>") and the
// index's metadata. Not collective. Returns the number of tensors written.
std::size_t consolidate_sharded_checkpoint(const std::string& dir, const std::string& out,
                                           bool optimizer = false);

// What DIR/index.json says, for tools: one line per tensor ("model.fc.weight f32 [10, 84] in 2
// pieces"), after a header line.
std::vector<std::string> describe_sharded_checkpoint(const std::string& dir);

}  // namespace cohort::train
