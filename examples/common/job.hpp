// The plumbing every training example shares: joining the job's ranks, Chrome traces across
// ranks, the per-epoch line and the end-of-run checks. Header-only (the examples' own code).
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cohort/collectives/registry.hpp"
#include "cohort/core/error.hpp"
#include "cohort/core/trace.hpp"
#include "cohort/parallel/ddp.hpp"
#include "cohort/parallel/elastic.hpp"
#include "cohort/train/metrics.hpp"
#include "cohort/train/profile_trace.hpp"
#include "cohort/train/trainer.hpp"
#include "trainer_flags.hpp"

namespace examples {

// This process's place in the job. Data parallel when launched with several ranks (cohortrun,
// mpirun, srun, torchrun's variables) or asked for a backend (`comm_flag`, else COHORT_COMM).
// `dev` is the device the program trains on: with "auto", GPU training picks nccl where every
// rank has a GPU of its own (init_process_group).
struct Job {
  std::shared_ptr<cohort::comm::Communicator> comm;  // null: one process, no communicator
  int rank = 0, world = 1;
  bool lead = true;  // rank 0 alone prints (the Trainer writes files from rank 0 too)
  int restart = 0;   // restarts of the job before this attempt (cohortrun/torchrun/Slurm)
  // --elastic: the group, whose communicator changes when ranks are lost (then refresh()).
  std::shared_ptr<cohort::parallel::ElasticGroup> elastic;
  // After training: the group's communicator as it is now (an elastic one may have shrunk).
  void refresh() {
    if (!elastic) return;
    comm = elastic->communicator();
    rank = comm->rank();
    world = comm->size();
    lead = rank == 0;
  }
};

// `elastic`: the --elastic range ("" : none), with the log flags.
// `identity`: what a rank joining an elastic group must match (the program's model, batch...).
inline Job join_job(const std::string& comm_flag, const cohort::Device& dev,
                    const TrainerFlags* flags = nullptr, const std::string& identity = "") {
  Job j;
  const auto pg = cohort::comm::ProcessGroupInfo::from_env();
  if (flags && !flags->elastic.empty()) {
    cohort::parallel::ElasticOptions eo;
    cohort::parallel::parse_elastic_range(flags->elastic, "--elastic", eo);
    eo.backend = comm_flag;
    eo.device = &dev;
    eo.membership_log = flags->membership_log;
    eo.replay_log = flags->replay_membership;
    eo.settle = std::chrono::milliseconds(flags->elastic_settle_ms);
    eo.keep_rank_batch = flags->elastic_batch == "per-rank";
    eo.max_step_failures = flags->elastic_step_failures;
    eo.identity = identity + " amp=" + flags->amp + " elastic=" + flags->elastic +
                  " elastic-batch=" + flags->elastic_batch +
                  " deterministic=" + (flags->deterministic ? "1" : "0");
    j.elastic = std::make_shared<cohort::parallel::ElasticGroup>(eo);
    j.comm = j.elastic->communicator();
  } else if (pg.world_size > 1 || !comm_flag.empty()) {
    COHORT_CHECK(!flags || (flags->membership_log.empty() && flags->replay_membership.empty()),
                 "--membership-log and --replay-membership need --elastic MIN:MAX");
    j.comm = cohort::comm::init_process_group(comm_flag, &dev);
  }
  j.rank = j.comm ? j.comm->rank() : 0;
  j.world = j.comm ? j.comm->size() : 1;
  j.lead = j.rank == 0;
  j.restart = pg.restart_count;
  if (j.lead && j.restart > 0)
    std::printf("restart %d of this job (the launcher restarted every rank)\n", j.restart);
  return j;
}

// Shards the training loader as the Trainer will (so that its batches per epoch are known early,
// for the schedule): by launch rank and world size under --elastic, whatever the group is now.
inline void shard_training_loader(cohort::data::DataLoader& loader, const Job& j) {
  const int rank = j.elastic ? j.elastic->launch_rank() : j.rank;
  const int world = j.elastic ? j.elastic->launch_world() : j.world;
  if (world > 1) loader.shard(rank, world);
}

// Starts recording spans when a Chrome trace (`path`, --trace) or a TensorBoard profile
// (`profile_dir`, --profile-dir) is asked for.
inline void start_trace(const std::string& path, const std::string& profile_dir, const Job& j) {
  if (path.empty() && profile_dir.empty()) return;
  cohort::trace::enable(true);
  cohort::trace::set_rank(j.rank);
}

// --profile-dir: each rank writes its own DIR/<host>_rank<N>.<ms>.pt.trace.json (the PyTorch
// profiler plugin's layout, cohort/train/profile_trace.hpp). --trace: each rank writes
// PATH.rank<N>; rank 0 then joins them into PATH (one process per rank, each with its compute,
// data and comm tracks).
inline void finish_trace(const std::string& path, const std::string& profile_dir, const Job& j) {
  if (!profile_dir.empty()) {
    cohort::train::ProfileTraceInfo info;
    info.rank = j.rank;
    info.world_size = j.world;
    info.backend = j.comm ? j.comm->backend() : "";
    const std::string file = cohort::train::write_profile_trace(profile_dir, info);
    if (j.lead)
      std::printf("profile: %s%s (tensorboard --logdir %s, PyTorch profiler plugin)\n",
                  file.c_str(), j.world > 1 ? " and one file per other rank" : "",
                  profile_dir.c_str());
  }
  if (path.empty()) return;
  cohort::trace::write_chrome_trace(path + ".rank" + std::to_string(j.rank));
  if (j.comm) j.comm->barrier()->wait();
  if (!j.lead) return;
  std::vector<std::string> parts;
  for (int r = 0; r < j.world; ++r) parts.push_back(path + ".rank" + std::to_string(r));
  cohort::train::merge_chrome_traces(parts, path);
}

// PyTorch's examples' per-epoch test line, as mnist_cnn prints it; with `top5` (the zoo, whose
// recipes are torchvision's) the top-5 accuracy before the images/s.
inline void print_epoch(const cohort::train::EpochResult& r, bool top5 = false) {
  char acc5[32] = "";
  if (top5) std::snprintf(acc5, sizeof acc5, "Acc@5 %.2f%%, ", 100.0 * r.eval.accuracy5);
  std::printf("\nTest set (epoch %lld): Average loss: %.4f, Accuracy: %lld/%lld (%.2f%%), "
              "%strain %.0f images/s\n\n",
              static_cast<long long>(r.epoch), r.eval.loss, static_cast<long long>(r.eval.correct),
              static_cast<long long>(r.eval.samples), 100.0 * r.eval.accuracy, acc5,
              r.images_per_s);
}

// Collective: every rank must hold the same weights and buffers at the end of a data-parallel
// run; an error names the rank's digest otherwise.
inline void check_ranks_identical(cohort::parallel::DistributedDataParallel* ddp, const Job& j) {
  if (ddp && !ddp->weights_identical_across_ranks())
    COHORT_FAIL("ranks ended with different weights (digest ", ddp->weights_digest(), " on rank ",
                j.rank, ")");
}

}  // namespace examples
