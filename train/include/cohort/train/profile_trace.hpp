// The recorded trace (cohort/core/trace.hpp) in the layout TensorBoard's PyTorch profiler plugin
// (torch-tb-profiler) reads: the file torch.profiler.tensorboard_trace_handler(dir) writes,
// DIR/<worker>.<unix ms>.pt.trace.json, so `tensorboard --logdir DIR` shows a cohort run in the
// plugin's Overview and Trace views as it shows a PyTorch one.
//
// What the plugin keys on, and what cohort's spans become (docs/TRAINING.md, "Profiles"):
//   - the Trainer's "steps" spans ("step N")  -> "ProfilerStep#N", category user_annotation: the
//     plugin's steps; every other span of the main thread nests inside one;
//   - the "data" track (the loader's next batch)  -> cpu_op
//   "enumerate(DataLoader)#cohort.__next__",
//     the name the plugin counts as DataLoader time;
//   - the compute track (forward, backward, optimizer, clip, evaluate)  -> cpu_op, on the main
//     thread with the two above (they ran there, nested in time);
//   - the comm track (DDP's buckets, on its own thread)  -> cpu_op on a second thread, each
//     collective named "<backend>:<op>" as PyTorch names them ("nccl:all_reduce"). The plugin
//     counts only "nccl:*" and "gloo:*" names as communication, so shm and ucx collectives show
//     as CPU Exec there (the Trace view shows them by name on their thread).
// The plugin reads only ProfilerStep spans from the user_annotation category, so everything else
// is cpu_op (its operator category).
// "distributedInfo" (backend, rank, world size) is written when the world has more than one rank.
#pragma once

#include <string>

namespace cohort::train {

struct ProfileTraceInfo {
  int rank = 0;
  int world_size = 1;
  std::string backend;  // the communicator's name ("shm", "ucx", "nccl"), empty for one rank
  std::string worker;   // file name's worker part; empty: "<hostname>_rank<rank>"
};

// Writes every span recorded so far into DIR (created if missing) as one
// "<worker>.<unix ms>.pt.trace.json", atomically (temporary name + rename); returns its path.
// Throws cohort::Error naming DIR or the file when it cannot be written.
std::string write_profile_trace(const std::string& dir, const ProfileTraceInfo& info);

}  // namespace cohort::train
