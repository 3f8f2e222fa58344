// The process group's view of the launch: rank, world size, local rank, store address. It is
// cohort::LaunchInfo (cohort/core/launch_info.hpp), read from the launchers' variables in one place.
#pragma once

#include <string>
#include <vector>

#include "cohort/core/launch_info.hpp"

namespace cohort::comm {

using ProcessGroupInfo = ::cohort::LaunchInfo;

// This process's host as the hier backend and cohort-bench --calibrate see it: COHORT_HOSTID
// when set (as NCCL_HOSTID overrides NCCL's host hash: for tests and experiments that treat ranks
// of one machine as several hosts), else the host name, the kernel's boot id and the network
// namespace (/proc/self/ns/net), so that network namespaces on one machine count as hosts, as
// they do to the network. Throws naming COHORT_HOSTID when it is set but empty.
std::string host_key();

// Which ranks share a host, from every rank's host key alone, so every rank that has the same
// keys computes the same map.
struct HostMap {
  std::vector<int> host_of;               // per global rank: its host, numbered by first rank
  std::vector<int> local_of;              // per global rank: its index among its host's ranks
  std::vector<std::vector<int>> members;  // per host: its global ranks, ascending
  int hosts() const { return static_cast<int>(members.size()); }
  int max_local() const;  // the most ranks any host has
};
// The map of keys[r] = rank r's host key. Throws cohort::Error for an empty key (naming the
// rank) or no ranks.
HostMap map_hosts(const std::vector<std::string>& keys);

}  // namespace cohort::comm
