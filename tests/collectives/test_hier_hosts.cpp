// The host map the hier backend groups ranks by (cohort/collectives/process_group.hpp): which ranks
// share a host, from the keys alone, and the host key itself (COHORT_HOSTID, else host name, boot
// id and network namespace). The collectives over it run in the conformance suite
// (conformance_hier_*).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cohort/collectives/process_group.hpp"
#include "cohort/core/error.hpp"
#include "env_guard.hpp"

using namespace cohort::comm;
using cohort::test::EnvGuard;

TEST_SUITE("hier_hosts") {
  TEST_CASE("hosts numbered by their first rank, ranks by their order on the host") {
    const HostMap m = map_hosts({"b", "a", "b", "c", "a"});
    CHECK(m.hosts() == 3);
    CHECK(m.host_of == std::vector<int>{0, 1, 0, 2, 1});
    CHECK(m.local_of == std::vector<int>{0, 0, 1, 0, 1});
    CHECK(m.members == std::vector<std::vector<int>>{{0, 2}, {1, 4}, {3}});
    CHECK(m.max_local() == 2);
    const HostMap one = map_hosts({"x", "x", "x"});
    CHECK(one.hosts() == 1);
    CHECK(one.local_of == std::vector<int>{0, 1, 2});
  }

  TEST_CASE("bad keys are named") {
    CHECK_THROWS_WITH_AS(map_hosts({"a", ""}),
                         doctest::Contains("rank 1 published an empty host key"), cohort::Error);
    CHECK_THROWS_WITH_AS(map_hosts({}), doctest::Contains("no ranks"), cohort::Error);
  }

  TEST_CASE("host key: COHORT_HOSTID overrides; otherwise host, boot id and network namespace") {
    {
      EnvGuard g({{"COHORT_HOSTID", "rack3-node7"}});
      CHECK(host_key() == "id:rack3-node7");
    }
    {
      EnvGuard g({{"COHORT_HOSTID", ""}});
      CHECK_THROWS_WITH_AS(host_key(), doctest::Contains("COHORT_HOSTID is set but empty"),
                           cohort::Error);
    }
    EnvGuard g;  // unset
    const std::string k = host_key();
    CHECK(k == host_key());  // stable within a process
    CHECK(k.find("/netns:") != std::string::npos);
    CHECK(k.find("/netns:0") == std::string::npos);  // the namespace was read
  }
}
