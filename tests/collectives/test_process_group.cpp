// ProcessGroupInfo::from_env: what each launcher sets, and the errors for what is missing or
// contradictory (they must name the variable and its value).
#include <doctest/doctest.h>

#include "cohort/collectives/process_group.hpp"
#include "cohort/core/error.hpp"
#include "env_guard.hpp"

using cohort::comm::ProcessGroupInfo;
using cohort::test::EnvGuard;

namespace {
std::string error_of(const std::map<std::string, std::string>& env) {
  EnvGuard g(env);
  try {
    ProcessGroupInfo::from_env();
  } catch (const cohort::Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_SUITE("process_group") {
  TEST_CASE("no launcher: a single process") {
    EnvGuard g;
    const auto info = ProcessGroupInfo::from_env();
    CHECK(info.rank == 0);
    CHECK(info.world_size == 1);
    CHECK(info.local_rank == 0);
    CHECK(info.local_world_size == 1);
    CHECK(info.source == "default");
    CHECK(info.master_addr.empty());
    CHECK(info.master_port == 0);
    CHECK(info.str() == "rank 0 of 1 (local 0 of 1) via default");
  }

  TEST_CASE("torchrun variables") {
    EnvGuard g({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"},
                {"LOCAL_WORLD_SIZE", "4"}, {"MASTER_ADDR", "10.0.0.7"}, {"MASTER_PORT", "29501"},
                {"TORCHELASTIC_RUN_ID", "abc"}});
    const auto info = ProcessGroupInfo::from_env();
    CHECK(info.rank == 5);
    CHECK(info.world_size == 8);
    CHECK(info.local_rank == 1);
    CHECK(info.local_world_size == 4);
    CHECK(info.master_addr == "10.0.0.7");
    CHECK(info.master_port == 29501);
    CHECK(info.source == "torchrun");
    CHECK(info.job_id == "torch-abc");
    CHECK(info.str() ==
          "rank 5 of 8 (local 1 of 4) via torchrun, store 10.0.0.7:29501, job torch-abc");
  }

  TEST_CASE("torchrun's agent store: the port is torchrun's, cohort's store moves") {
    {  // one host: no address, so the group meets in a job-private directory
      EnvGuard g({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"},
                  {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "localhost"}, {"MASTER_PORT", "43913"},
                  {"TORCHELASTIC_RUN_ID", "r1"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                  {"TORCHELASTIC_RESTART_COUNT", "0"}});
      const auto info = ProcessGroupInfo::from_env();
      CHECK(info.torch_agent_store);
      CHECK(info.master_addr.empty());
      CHECK(info.master_port == 0);
      CHECK(info.job_id == "torch-r1");
      CHECK(info.str() == "rank 1 of 2 (local 1 of 2) via torchrun, job torch-r1 (torchrun's agent "
                          "store holds MASTER_PORT)");
    }
    {  // several hosts: one port up on MASTER_ADDR; a restarted attempt is a new job
      EnvGuard g({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"},
                  {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29500"},
                  {"TORCHELASTIC_RUN_ID", "r1"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                  {"TORCHELASTIC_RESTART_COUNT", "2"}});
      const auto info = ProcessGroupInfo::from_env();
      CHECK(info.master_addr == "node0");
      CHECK(info.master_port == 29501);
      CHECK(info.job_id == "torch-r1.r2");
    }
  }

  TEST_CASE("RANK and WORLD_SIZE without the local pair mean one host") {
    EnvGuard g({{"RANK", "1"}, {"WORLD_SIZE", "3"}});
    const auto info = ProcessGroupInfo::from_env();
    CHECK(info.local_rank == 1);
    CHECK(info.local_world_size == 3);
  }

  TEST_CASE("COHORT_JOB_ID names the job; torchrun's default run id 'none' does not") {
    {
      EnvGuard g({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"TORCHELASTIC_RUN_ID", "none"}});
      CHECK(ProcessGroupInfo::from_env().job_id.empty());
    }
    EnvGuard g({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"COHORT_JOB_ID", "job42"}});
    CHECK(ProcessGroupInfo::from_env().job_id == "job42");
  }

  TEST_CASE("missing partners are errors naming both variables") {
    const std::string a = error_of({{"RANK", "0"}});
    CHECK(a.find("RANK=0 is set but WORLD_SIZE is not") != std::string::npos);
    const std::string b = error_of({{"WORLD_SIZE", "2"}});
    CHECK(b.find("WORLD_SIZE=2 is set but RANK is not") != std::string::npos);
    const std::string c = error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}});
    CHECK(c.find("LOCAL_RANK=0 is set but LOCAL_WORLD_SIZE is not") != std::string::npos);
  }

  TEST_CASE("contradictions and bad numbers are errors with the values") {
    CHECK(error_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}}).find(
              "RANK=2 is out of range for WORLD_SIZE=2 (expected 0..1)") != std::string::npos);
    CHECK(error_of({{"RANK", "x1"}, {"WORLD_SIZE", "2"}}).find("RANK='x1' is not an integer") !=
          std::string::npos);
    CHECK(error_of({{"RANK", "0"}, {"WORLD_SIZE", "0"}}).find("WORLD_SIZE=0 must be at least 1") !=
          std::string::npos);
    CHECK(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"},
                    {"LOCAL_WORLD_SIZE", "3"}})
              .find("LOCAL_WORLD_SIZE=3 must be between 1 and WORLD_SIZE=2") != std::string::npos);
    CHECK(error_of({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"},
                    {"LOCAL_WORLD_SIZE", "4"}})
              .find("LOCAL_RANK=2 is larger than RANK=1") != std::string::npos);
    CHECK(error_of({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_PORT", "70000"}})
              .find("MASTER_PORT=70000 is not a TCP port") != std::string::npos);
    CHECK(error_of({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_PORT", "http"}})
              .find("MASTER_PORT='http' is not an integer") != std::string::npos);
  }

  TEST_CASE("Open MPI variables") {
    EnvGuard g({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                {"OMPI_MCA_ess_base_jobid", "1563492353"}, {"MASTER_ADDR", "node1"},
                {"MASTER_PORT", "4000"}});
    const auto info = ProcessGroupInfo::from_env();
    CHECK(info.source == "openmpi");
    CHECK(info.rank == 3);
    CHECK(info.world_size == 4);
    CHECK(info.local_rank == 1);
    CHECK(info.local_world_size == 2);
    CHECK(info.job_id == "ompi-1563492353");
    CHECK(info.master_addr == "node1");
    CHECK(info.master_port == 4000);
  }

  TEST_CASE("Open MPI contradictions name Open MPI's variables") {
    CHECK(error_of({{"OMPI_COMM_WORLD_RANK", "4"}, {"OMPI_COMM_WORLD_SIZE", "4"}})
              .find("OMPI_COMM_WORLD_RANK=4 is out of range for OMPI_COMM_WORLD_SIZE=4") !=
          std::string::npos);
  }

  TEST_CASE("torchrun's variables win over Open MPI's and Slurm's") {
    EnvGuard g({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "0"},
                {"OMPI_COMM_WORLD_SIZE", "1"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}});
    const auto info = ProcessGroupInfo::from_env();
    CHECK(info.source == "torchrun");
    CHECK(info.rank == 1);
  }

  TEST_CASE("Slurm variables, with the store on the step's first node") {
    EnvGuard g({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "1"},
                {"SLURM_NODEID", "1"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
                {"SLURM_JOB_ID", "777"}, {"SLURM_STEP_ID", "0"},
                {"SLURM_STEP_NODELIST", "node[07-08]"}});
    const auto info = ProcessGroupInfo::from_env();
    CHECK(info.source == "slurm");
    CHECK(info.rank == 3);
    CHECK(info.world_size == 4);
    CHECK(info.local_rank == 1);
    CHECK(info.local_world_size == 2);
    CHECK(info.master_addr == "node07");
    CHECK(info.master_port == 20777);
    CHECK(info.job_id == "slurm-777.0");
  }

  TEST_CASE("Slurm: uneven tasks per node, and MASTER_* overriding the derived store") {
    EnvGuard g({{"SLURM_PROCID", "3"}, {"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_NTASKS", "99"},
                {"SLURM_LOCALID", "0"}, {"SLURM_NODEID", "1"},
                {"SLURM_STEP_TASKS_PER_NODE", "3,1"}, {"SLURM_JOB_NODELIST", "a1,b2"},
                {"MASTER_ADDR", "b2"}, {"MASTER_PORT", "5555"}});
    const auto info = ProcessGroupInfo::from_env();
    CHECK(info.world_size == 4);  // the step's count, not the allocation's
    CHECK(info.local_world_size == 1);
    CHECK(info.master_addr == "b2");
    CHECK(info.master_port == 5555);
  }

  TEST_CASE("Slurm errors") {
    CHECK(error_of({{"SLURM_PROCID", "0"}}).find("neither SLURM_STEP_NUM_TASKS nor SLURM_NTASKS") !=
          std::string::npos);
    CHECK(error_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}})
              .find("SLURM_LOCALID is not") != std::string::npos);
    CHECK(error_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"},
                    {"SLURM_NODEID", "2"}, {"SLURM_STEP_TASKS_PER_NODE", "2"}})
              .find("SLURM_NODEID=2 is out of range") != std::string::npos);
    CHECK(error_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"},
                    {"SLURM_NODEID", "0"}, {"SLURM_STEP_TASKS_PER_NODE", "2(y2)"}})
              .find("is not a Slurm task list") != std::string::npos);
  }
}
