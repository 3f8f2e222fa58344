// Tests that read the environment: clear every variable cohort's collectives look at, set the
// ones a case needs, and restore the original environment afterwards.
#pragma once

#include <cstdlib>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>

namespace cohort::test {

class EnvGuard {
 public:
  EnvGuard() : EnvGuard(std::map<std::string, std::string>{}) {}
  EnvGuard(std::initializer_list<std::pair<const std::string, std::string>> set)
      : EnvGuard(std::map<std::string, std::string>(set)) {}
  explicit EnvGuard(const std::map<std::string, std::string>& set) {
    static const char* const kVars[] = {"RANK",
                                        "WORLD_SIZE",
                                        "LOCAL_RANK",
                                        "LOCAL_WORLD_SIZE",
                                        "MASTER_ADDR",
                                        "MASTER_PORT",
                                        "TORCHELASTIC_RUN_ID",
                                        "TORCHELASTIC_USE_AGENT_STORE",
                                        "TORCHELASTIC_RESTART_COUNT",
                                        "COHORT_JOB_ID",
                                        "COHORT_COMM",
                                        "COHORT_STORE",
                                        "COHORT_COMM_TIMEOUT_MS",
                                        "COHORT_JOB_TOKEN",
                                        "COHORT_STORE_BIND",
                                        "COHORT_STORE_HANDSHAKE_MS",
                                        "COHORT_TIMEOUT",
                                        "COHORT_HOSTID",
                                        "COHORT_YIELD_WHEN_IDLE",
                                        "OMPI_COMM_WORLD_RANK",
                                        "OMPI_COMM_WORLD_SIZE",
                                        "OMPI_COMM_WORLD_LOCAL_RANK",
                                        "OMPI_COMM_WORLD_LOCAL_SIZE",
                                        "OMPI_MCA_ess_base_jobid",
                                        "SLURM_PROCID",
                                        "SLURM_NTASKS",
                                        "SLURM_STEP_NUM_TASKS",
                                        "SLURM_LOCALID",
                                        "SLURM_NODEID",
                                        "SLURM_STEP_TASKS_PER_NODE",
                                        "SLURM_TASKS_PER_NODE",
                                        "SLURM_JOB_ID",
                                        "SLURM_STEP_ID",
                                        "SLURM_STEP_NODELIST",
                                        "SLURM_JOB_NODELIST"};
    for (const char* v : kVars) {
      const char* old = std::getenv(v);
      saved_[v] = old ? std::optional<std::string>(old) : std::nullopt;
      ::unsetenv(v);
    }
    for (const auto& [k, v] : set) ::setenv(k.c_str(), v.c_str(), 1);
  }
  ~EnvGuard() {
    for (const auto& [k, v] : saved_) {
      if (v)
        ::setenv(k.c_str(), v->c_str(), 1);
      else
        ::unsetenv(k.c_str());
    }
  }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

}  // namespace cohort::test
