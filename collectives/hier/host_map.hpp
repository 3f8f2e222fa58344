// Which ranks share a host, for the hierarchical communicator (hier_communicator.cpp): every rank
// publishes a host key through the store, and the keys alone decide the grouping, so every rank
// computes the same map.
//
// A host key is COHORT_HOSTID when set (as NCCL_HOSTID overrides NCCL's host hash: for tests
// and experiments that treat ranks of one machine as several hosts), else the host name, the
// kernel's boot id and the network namespace (/proc/self/ns/net), so that network namespaces on
// one machine count as hosts, as they do to the network (tests/launch's netns testbed).
#pragma once

#include <string>
#include <vector>

namespace cohort::comm::hier {

struct HostMap {
  std::vector<int> host_of;               // per global rank: its host, numbered by first rank
  std::vector<int> local_of;              // per global rank: its index among its host's ranks
  std::vector<std::vector<int>> members;  // per host: its global ranks, ascending
  int hosts() const { return static_cast<int>(members.size()); }
  // The most ranks any host has.
  int max_local() const;
};

// The map of `keys[r]` = rank r's host key. Throws cohort::Error for an empty key (naming the
// rank) or no ranks.
HostMap map_hosts(const std::vector<std::string>& keys);

// This process's host key (see above). Throws naming COHORT_HOSTID when it is set but empty.
std::string host_key();

}  // namespace cohort::comm::hier
