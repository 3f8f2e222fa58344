// LaunchInfo from the environment: the one place that reads the launchers' variables (the process
// group, the device choice per local rank and the host's thread count all start here). One
// launcher's variables are read as a set: the first launcher whose rank/size variables are present
// wins (torchrun, then Open MPI, then Slurm), so a torchrun started inside a Slurm allocation is
// read as torchrun. Within that set every value is checked, and a missing partner or a
// contradiction names the variables and their values.
#include "cohort/core/launch_info.hpp"

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <vector>

#include "cohort/core/error.hpp"

namespace cohort {
namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

long long parse_int(const char* name, const std::string& value) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(value.c_str(), &end, 10);
  COHORT_CHECK(end && end != value.c_str() && *end == '\0' && errno == 0 && v >= -(1LL << 40) &&
                   v <= (1LL << 40),
               name, "='", value, "' is not an integer");
  return v;
}

int int_var(const char* name, const std::string& value) {
  return static_cast<int>(parse_int(name, value));
}

// Checks one launcher's rank/size/local values for consistency; `names` are the variable names
// in the order rank, size, local rank, local size.
void check_consistent(const LaunchInfo& g, const char* const names[4]) {
  COHORT_CHECK(g.world_size >= 1, names[1], "=", g.world_size, " must be at least 1");
  COHORT_CHECK(g.rank >= 0 && g.rank < g.world_size, names[0], "=", g.rank, " is out of range for ",
               names[1], "=", g.world_size, " (expected 0..", g.world_size - 1, ")");
  COHORT_CHECK(g.local_world_size >= 1 && g.local_world_size <= g.world_size, names[3], "=",
               g.local_world_size, " must be between 1 and ", names[1], "=", g.world_size);
  COHORT_CHECK(g.local_rank >= 0 && g.local_rank < g.local_world_size, names[2], "=", g.local_rank,
               " is out of range for ", names[3], "=", g.local_world_size, " (expected 0..",
               g.local_world_size - 1, ")");
  COHORT_CHECK(g.local_rank <= g.rank, names[2], "=", g.local_rank, " is larger than ", names[0],
               "=", g.rank);
}

// Reads a rank/size pair and an optional local pair (both or neither; neither means "all ranks on
// this host").
bool read_set(LaunchInfo& g, const char* const names[4]) {
  const auto rank = env(names[0]);
  const auto size = env(names[1]);
  if (!rank && !size) return false;
  COHORT_CHECK(rank, names[1], "=", *size, " is set but ", names[0], " is not");
  COHORT_CHECK(size, names[0], "=", *rank, " is set but ", names[1], " is not");
  g.rank = int_var(names[0], *rank);
  g.world_size = int_var(names[1], *size);
  const auto lrank = env(names[2]);
  const auto lsize = env(names[3]);
  COHORT_CHECK(!lrank || lsize, names[2], "=", *lrank, " is set but ", names[3], " is not");
  COHORT_CHECK(!lsize || lrank, names[3], "=", *lsize, " is set but ", names[2], " is not");
  if (lrank) {
    g.local_rank = int_var(names[2], *lrank);
    g.local_world_size = int_var(names[3], *lsize);
  } else {
    g.local_rank = g.rank;
    g.local_world_size = g.world_size;
  }
  check_consistent(g, names);
  return true;
}

// Slurm's tasks-per-node lists look like "2(x3),1": expand and pick node `node`.
int slurm_tasks_on_node(const std::string& var, const std::string& list, int node) {
  std::vector<int> counts;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto paren = item.find('(');
    const int count = int_var(var.c_str(), item.substr(0, paren));
    int repeat = 1;
    if (paren != std::string::npos) {
      COHORT_CHECK(item.size() > paren + 3 && item.compare(paren, 2, "(x") == 0 &&
                       item.back() == ')',
                   var, "='", list, "' is not a Slurm task list like 2(x3),1");
      repeat = int_var(var.c_str(), item.substr(paren + 2, item.size() - paren - 3));
    }
    for (int i = 0; i < repeat && counts.size() < 1u << 20; ++i) counts.push_back(count);
  }
  COHORT_CHECK(node >= 0 && node < static_cast<int>(counts.size()), "SLURM_NODEID=", node,
               " is out of range for ", var, "='", list, "' (", counts.size(), " nodes)");
  return counts[static_cast<std::size_t>(node)];
}

// The first host of a Slurm host list: "node[07-09,12],gpu1" -> "node07".
std::string slurm_first_host(const std::string& list) {
  const auto bracket = list.find('[');
  const auto comma = list.find(',');
  if (bracket == std::string::npos || (comma != std::string::npos && comma < bracket))
    return list.substr(0, comma);
  const auto end = list.find_first_of("-,]", bracket + 1);
  return list.substr(0, bracket) + list.substr(bracket + 1, end - bracket - 1);
}

void read_master(LaunchInfo& g) {
  if (const auto addr = env("MASTER_ADDR")) g.master_addr = *addr;
  if (const auto port = env("MASTER_PORT")) {
    const long long p = parse_int("MASTER_PORT", *port);
    COHORT_CHECK(p >= 1 && p <= 65535, "MASTER_PORT=", *port, " is not a TCP port (1..65535)");
    g.master_port = static_cast<int>(p);
  }
}

}  // namespace

LaunchInfo LaunchInfo::from_env() {
  LaunchInfo g;
  static const char* const torchrun[4] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"};
  static const char* const ompi[4] = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                                      "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"};
  if (read_set(g, torchrun)) {
    g.source = "torchrun";
    if (const auto id = env("TORCHELASTIC_RUN_ID"); id && *id != "none") {
      g.job_id = "torch-" + *id;
      // torchrun restarts the whole worker group together; a new attempt is a new job, so it
      // never meets the previous attempt's store files or shared-memory segments.
      if (const auto n = env("TORCHELASTIC_RESTART_COUNT"); n && *n != "0") g.job_id += ".r" + *n;
    }
  } else if (read_set(g, ompi)) {
    g.source = "openmpi";
    if (const auto id = env("OMPI_MCA_ess_base_jobid")) g.job_id = "ompi-" + *id;
  } else if (const auto procid = env("SLURM_PROCID")) {
    g.source = "slurm";
    auto ntasks = env("SLURM_STEP_NUM_TASKS");
    const char* ntasks_name = "SLURM_STEP_NUM_TASKS";
    if (!ntasks) {
      ntasks = env("SLURM_NTASKS");
      ntasks_name = "SLURM_NTASKS";
    }
    COHORT_CHECK(ntasks, "SLURM_PROCID=", *procid,
                 " is set but neither SLURM_STEP_NUM_TASKS nor SLURM_NTASKS is (run under srun)");
    g.rank = int_var("SLURM_PROCID", *procid);
    g.world_size = int_var(ntasks_name, *ntasks);
    const auto localid = env("SLURM_LOCALID");
    COHORT_CHECK(localid, "SLURM_PROCID=", *procid, " is set but SLURM_LOCALID is not");
    g.local_rank = int_var("SLURM_LOCALID", *localid);
    const auto node = env("SLURM_NODEID");
    auto per_node = env("SLURM_STEP_TASKS_PER_NODE");
    std::string per_node_name = "SLURM_STEP_TASKS_PER_NODE";
    if (!per_node) {
      per_node = env("SLURM_TASKS_PER_NODE");
      per_node_name = "SLURM_TASKS_PER_NODE";
    }
    COHORT_CHECK(node && per_node, "SLURM_PROCID=", *procid,
                 " is set but SLURM_NODEID or SLURM_STEP_TASKS_PER_NODE is not (run under srun)");
    g.local_world_size =
        slurm_tasks_on_node(per_node_name, *per_node, int_var("SLURM_NODEID", *node));
    if (const auto cpt = env("SLURM_CPUS_PER_TASK")) {
      g.cpus_per_task = int_var("SLURM_CPUS_PER_TASK", *cpt);
      COHORT_CHECK(g.cpus_per_task >= 1, "SLURM_CPUS_PER_TASK=", *cpt, " must be at least 1");
    }
    static const char* const names[4] = {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
                                         "SLURM_STEP_TASKS_PER_NODE"};
    check_consistent(g, names);
    if (const auto id = env("SLURM_JOB_ID")) {
      g.job_id = "slurm-" + *id + "." + env("SLURM_STEP_ID").value_or("0");
      // A requeued job keeps its id: its new attempt must not meet the old one's store files.
      if (const auto n = env("SLURM_RESTART_COUNT"); n && *n != "0") g.job_id += ".r" + *n;
    }
    // Slurm has no store address: default to the step's first node and a port derived from the
    // job id, so all tasks of a step agree without configuration.
    if (const auto nodes = env("SLURM_STEP_NODELIST") ? env("SLURM_STEP_NODELIST")
                                                      : env("SLURM_JOB_NODELIST"))
      g.master_addr = slurm_first_host(*nodes);
    if (const auto id = env("SLURM_JOB_ID"))
      g.master_port = 20000 + static_cast<int>(parse_int("SLURM_JOB_ID", *id) % 20000);
  } else {
    g.source = "default";
  }
  read_master(g);
  if (const auto id = env("COHORT_JOB_ID")) g.job_id = *id;
  for (const char* var : {"COHORT_RESTART_COUNT", "TORCHELASTIC_RESTART_COUNT",
                          "SLURM_RESTART_COUNT"})
    if (const auto n = env(var)) {
      g.restart_count = int_var(var, *n);
      COHORT_CHECK(g.restart_count >= 0, var, "=", *n, " must be >= 0");
      break;
    }
  // Recent torchrun (TORCHELASTIC_USE_AGENT_STORE=True) already serves its own c10d store at
  // MASTER_ADDR:MASTER_PORT, so cohort's rank 0 cannot serve there ("Address already in use").
  // Every rank on this host: no address, so the process group meets in a job-private directory
  // (collectives/registry.cpp). Several hosts: cohort's store one port up on the same host, where
  // global rank 0 runs (torchrun's MASTER_ADDR is group rank 0's host).
  if (g.source == "torchrun") {
    const auto agent = env("TORCHELASTIC_USE_AGENT_STORE");
    if (agent && (*agent == "True" || *agent == "true" || *agent == "1")) {
      g.torch_agent_store = true;
      if (g.local_world_size == g.world_size && !g.job_id.empty()) {
        g.master_addr.clear();
        g.master_port = 0;
      } else if (g.master_port > 0) {
        COHORT_CHECK(g.master_port < 65535, "MASTER_PORT=", g.master_port,
                     " is torchrun's agent store; cohort's would go one port up, past 65535");
        g.master_port += 1;
      }
    }
  }
  return g;
}

std::string LaunchInfo::str() const {
  std::ostringstream os;
  os << "rank " << rank << " of " << world_size << " (local " << local_rank << " of "
     << local_world_size << ") via " << (source.empty() ? "default" : source);
  if (!master_addr.empty() || master_port)
    os << ", store " << (master_addr.empty() ? "?" : master_addr) << ":" << master_port;
  if (!job_id.empty()) os << ", job " << job_id;
  if (restart_count > 0) os << ", restart " << restart_count;
  if (torch_agent_store) os << " (torchrun's agent store holds MASTER_PORT)";
  return os.str();
}

}  // namespace cohort
