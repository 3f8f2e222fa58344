// Who am I in the job: rank, world size, local rank, and where the rendezvous store is, read from
// the environment the way torchrun, Open MPI's mpirun and Slurm's srun set it. The only reader of
// the launchers' variables: the process group (cohort::comm::ProcessGroupInfo is this type), the
// device chosen per local rank (launcher_local_rank) and the host's thread count all use it, so
// they cannot disagree about how many ranks share this host.
#pragma once

#include <string>

namespace cohort {

struct LaunchInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;  // ranks on this host
  std::string master_addr;   // empty when not given
  int master_port = 0;       // 0 when not given
  std::string source;        // "torchrun", "openmpi", "slurm", "default" (single process)
  std::string job_id;        // unique per job where the launcher provides one (names shm segments)
  int cpus_per_task = 0;     // Slurm's SLURM_CPUS_PER_TASK under srun; 0 when not given
  // torchrun serves its own store at MASTER_ADDR:MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE):
  // then master_addr/port say where cohort's store goes instead (docs/LAUNCH.md).
  bool torch_agent_store = false;
  // How many times the launcher has restarted the job before this attempt: cohortrun
  // --max-restarts (COHORT_RESTART_COUNT), torchrun --max-restarts (TORCHELASTIC_RESTART_COUNT),
  // a requeued Slurm job (SLURM_RESTART_COUNT). 0 for the first attempt. Each attempt is a job of
  // its own to the store and the shm segments (".r<N>" on job_id).
  int restart_count = 0;

  // Reads, in order of precedence: torchrun (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
  // MASTER_ADDR, MASTER_PORT), Open MPI (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK,
  // _LOCAL_SIZE), Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_STEP_TASKS_PER_NODE,
  // SLURM_CPUS_PER_TASK, ...). With none set: a single process. Missing or contradictory values
  // (RANK without WORLD_SIZE, RANK >= WORLD_SIZE, a non-numeric value) throw cohort::Error naming
  // the variable and its value.
  static LaunchInfo from_env();

  std::string str() const;  // "rank 1 of 2 (local 1 of 2) via torchrun, store 127.0.0.1:29500"
};

}  // namespace cohort
