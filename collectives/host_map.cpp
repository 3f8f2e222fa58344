// Host keys and the rank-to-host map (cohort/collectives/process_group.hpp): what the hier
// backend groups its ranks by, and cohort-bench --calibrate its links.

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

#include "cohort/collectives/process_group.hpp"
#include "cohort/core/error.hpp"

namespace cohort::comm {

int HostMap::max_local() const {
  std::size_t m = 0;
  for (const auto& h : members) m = std::max(m, h.size());
  return static_cast<int>(m);
}

HostMap map_hosts(const std::vector<std::string>& keys) {
  COHORT_CHECK_IN("hier", !keys.empty(), "no ranks to map to hosts");
  HostMap m;
  std::map<std::string, int> index;
  for (std::size_t r = 0; r < keys.size(); ++r) {
    COHORT_CHECK_IN("hier", !keys[r].empty(), "rank ", r, " published an empty host key");
    auto it = index.find(keys[r]);
    if (it == index.end()) {
      it = index.emplace(keys[r], static_cast<int>(m.members.size())).first;
      m.members.emplace_back();
    }
    m.host_of.push_back(it->second);
    m.local_of.push_back(static_cast<int>(m.members[it->second].size()));
    m.members[it->second].push_back(static_cast<int>(r));
  }
  return m;
}

std::string host_key() {
  if (const char* id = std::getenv("COHORT_HOSTID")) {
    COHORT_CHECK_IN("hier", *id != '\0', "COHORT_HOSTID is set but empty");
    return std::string("id:") + id;
  }
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  struct stat st {};
  const unsigned long long netns =
      ::stat("/proc/self/ns/net", &st) == 0 ? static_cast<unsigned long long>(st.st_ino) : 0;
  return std::string(host) + "/" + boot + "/netns:" + std::to_string(netns);
}

}  // namespace cohort::comm
